# Sourced by the scripts/bench-*.sh that time slurm-mig against real
# `slurmd -G` on synthetic clusters (internal/testkit/synth), so that
# they build, time and lay out their clusters one way.

# bench_setup NAME: checks for root (mknod) and slurmd, makes $work (gone
# at exit) and builds slurm-mig and gencluster into it.
bench_setup() {
  export CGO_CFLAGS="${CGO_CFLAGS:--O2 -g -Wno-deprecated-declarations}"
  command -v slurmd >/dev/null || { echo "$1: slurmd is needed (apt-get install slurmd)" >&2; exit 2; }
  [ "$(id -u)" = 0 ] || { echo "$1: run as root (mknod)" >&2; exit 2; }
  bench_name=$1
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  go build -o "$work/slurm-mig" ./cmd/slurm-mig
  go build -o "$work/gencluster" ./internal/testkit/synth/gencluster
}

# timed NAME CMD...: runs CMD once, appending its wall time (µs) to
# $work/NAME.t and its peak RSS (KB) to $work/NAME.rss. A command that
# fails stops the run: a refusal is never timed as if it were the work.
timed() {
  local name=$1 t0 t1
  shift
  t0=$(date +%s%N)
  /usr/bin/time -f %M -o "$work/rss" "$@" >/dev/null 2>"$work/err" ||
    { echo "$bench_name: $* failed:" >&2; cat "$work/err" >&2; exit 1; }
  t1=$(date +%s%N)
  echo $(((t1 - t0) / 1000)) >>"$work/$name.t"
  tail -n 1 "$work/rss" >>"$work/$name.rss"
}

# stats NAME: "min median maxrss" in ms and KB.
stats() {
  sort -n "$work/$1.t" | awk -v rss="$(sort -n "$work/$1.rss" | tail -n 1)" \
    '{a[NR]=$1} END {printf "%.1f %.1f %d\n", a[1]/1000, a[int((NR+1)/2)]/1000, rss}'
}

# mknods DIR FILE NODE: makes the device files that NODE's own lines of
# FILE name under DIR/dev real devices, which slurmd -G checks.
mknods() {
  local f b
  for f in $(grep "^NodeName=$3 " "$2" | grep -o "$1/dev/[^ ,]*" | sort -u); do
    b=$(basename "$f")
    case $b in
      nvidia-cap*) mknod "$f" c 241 "${b#nvidia-cap}" ;;
      *) mknod "$f" c 195 "${b#nvidia}" ;;
    esac
  done
}

# merged_cluster DIR NODES: a fleet of NODES nodes in four layouts, one gen
# fragment a node (Cores= left out: slurmd checks it against this
# machine's CPUs), merged into DIR/gres.conf and DIR/slurm.conf as merge
# writes them, with real device files for the node named in
# DIR/node.txt. Stops unless slurmd -G reads that node's records, and
# nothing else, from the merged files.
merged_cluster() {
  local dir=$1 node want got
  mkdir -p "$dir/dev/nvidia-caps" "$dir/spool"
  "$work/gencluster" -fleet -nodes "$2" -dir "$dir" -dev "$dir/dev"
  find "$dir/fragments" -name '*.conf' -print0 | xargs -0 sed -i 's/ Cores=[^ ]*//'
  node=$(cat "$dir/node.txt")
  "$work/slurm-mig" merge "$dir/fragments" >"$dir/gres.conf"
  mknods "$dir" "$dir/fragments/$node.conf" "$node"
  {
    echo "ClusterName=bench"
    echo "SlurmctldHost=localhost"
    echo "GresTypes=gpu"
    echo "SlurmdSpoolDir=$dir/spool"
    "$work/slurm-mig" merge --node-lines "$dir/fragments" | sed "s/\$/ CPUs=$(nproc)/"
  } >"$dir/slurm.conf"
  want=$(grep -c "^NodeName=$node " "$dir/fragments/$node.conf")
  got=$(SLURM_CONF="$dir/slurm.conf" slurmd -N "$node" -G 2>&1)
  if [ "$(grep -c ": Gres Name=gpu " <<<"$got")" != "$want" ] || grep -qv ": Gres Name=gpu " <<<"$got"; then
    echo "$bench_name: slurmd -G does not read $node's $want records from the merged file:" >&2
    echo "$got" >&2
    exit 1
  fi
}

# device_cluster DIR NODES: a cluster of NODES nodes as
# scripts/bench-cluster.sh times diff against: one gres.conf line a
# device (DIR/gres.conf), with real device files for the node named in
# DIR/node.txt, whose lines come last, and DIR/slurm.conf declaring it.
device_cluster() {
  local dir=$1 node
  mkdir -p "$dir/dev/nvidia-caps" "$dir/spool"
  "$work/gencluster" -nodes "$2" -dir "$dir" -dev "$dir/dev"
  node=$(cat "$dir/node.txt")
  mknods "$dir" "$dir/gres.conf" "$node"
  cat >"$dir/slurm.conf" <<CONF
ClusterName=bench
SlurmctldHost=localhost
GresTypes=gpu
SlurmdSpoolDir=$dir/spool
NodeName=$node CPUs=$(nproc) Gres=gpu:a100_1g.10gb:28
CONF
}

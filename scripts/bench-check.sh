#!/usr/bin/env bash
# Times whole-process `slurm-mig check` of every node of a cluster (its
# gres.conf and slurm.conf, as merge writes them for a synthetic fleet:
# internal/testkit/synth, four layouts, 8 to 32 lines a node) side by
# side with real `slurmd -N <node> -G` reading the same files for one
# node, at 100, 1,000 and 10,000 nodes. The two run in interleaved
# rounds, so that both see the same machine; it reports min/median wall
# time and peak RSS. check must find the cluster clean, and slurmd must
# read the node's records. Needs root (mknod) and Debian's slurmd; run
# from the repository root:
#
#   scripts/bench-check.sh [ROUNDS]
set -euo pipefail
rounds=${1:-11}
export CGO_CFLAGS="${CGO_CFLAGS:--O2 -g -Wno-deprecated-declarations}"
command -v slurmd >/dev/null || { echo "bench-check: slurmd is needed (apt-get install slurmd)" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "bench-check: run as root (mknod)" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/slurm-mig" ./cmd/slurm-mig
go build -o "$work/gencluster" ./internal/testkit/synth/gencluster

# timed NAME CMD...: runs CMD once, appending its wall time (µs) to
# $work/NAME.t and its peak RSS (KB) to $work/NAME.rss.
timed() {
  local name=$1 t0 t1
  shift
  t0=$(date +%s%N)
  /usr/bin/time -f %M -o "$work/rss" "$@" >/dev/null 2>&1
  t1=$(date +%s%N)
  echo $(((t1 - t0) / 1000)) >>"$work/$name.t"
  tail -n 1 "$work/rss" >>"$work/$name.rss"
}

# stats NAME: "min median maxrss" in ms and KB.
stats() {
  sort -n "$work/$1.t" | awk -v rss="$(sort -n "$work/$1.rss" | tail -n 1)" \
    '{a[NR]=$1} END {printf "%.1f %.1f %d\n", a[1]/1000, a[int((NR+1)/2)]/1000, rss}'
}

printf '%-7s %-9s %27s %27s %7s\n' nodes gres.conf "slurm-mig check (min/med ms, RSS)" "slurmd -G (min/med ms, RSS)" ratio
for nodes in 100 1000 10000; do
  dir="$work/n$nodes"
  mkdir -p "$dir/dev/nvidia-caps" "$dir/spool"
  "$work/gencluster" -fleet -nodes "$nodes" -dir "$dir" -dev "$dir/dev"
  # slurmd checks Cores= against this machine's CPUs: leave it out.
  find "$dir/fragments" -name '*.conf' -print0 | xargs -0 sed -i 's/ Cores=[^ ]*//'
  node=$(cat "$dir/node.txt")
  "$work/slurm-mig" merge "$dir/fragments" >"$dir/gres.conf"
  # slurmd -G checks this node's device files: make them real devices.
  for f in $(grep -o "$dir/dev/[^ ,]*" "$dir/fragments/$node.conf" | sort -u); do
    b=$(basename "$f")
    case $b in
      nvidia-cap*) mknod "$f" c 241 "${b#nvidia-cap}" ;;
      *) mknod "$f" c 195 "${b#nvidia}" ;;
    esac
  done
  {
    echo "ClusterName=bench"
    echo "SlurmctldHost=localhost"
    echo "GresTypes=gpu"
    echo "SlurmdSpoolDir=$dir/spool"
    "$work/slurm-mig" merge --node-lines "$dir/fragments" | sed "s/\$/ CPUs=$(nproc)/"
  } >"$dir/slurm.conf"
  # slurmd must read the node's devices, and nothing else; check must
  # find every node clean.
  want=$(grep -c "^NodeName=$node " "$dir/fragments/$node.conf")
  got=$(SLURM_CONF="$dir/slurm.conf" slurmd -N "$node" -G 2>&1)
  if [ "$(grep -c ": Gres Name=gpu " <<<"$got")" != "$want" ] || grep -qv ": Gres Name=gpu " <<<"$got"; then
    echo "bench-check: slurmd -G does not read $node's $want records from the merged file:" >&2
    echo "$got" >&2
    exit 1
  fi
  check=("$work/slurm-mig" check --gres-conf "$dir/gres.conf" --slurm-conf "$dir/slurm.conf" --slurm-version 22.05.8)
  if ! verdict=$("${check[@]}" | tail -n 1) || [ "$verdict" != "clean: $nodes nodes checked, no problem" ]; then
    echo "bench-check: check does not find the $nodes nodes clean: $verdict" >&2
    exit 1
  fi
  rm -f "$work"/*.t "$work"/*.rss
  for ((r = 0; r < rounds; r++)); do
    timed check "${check[@]}"
    SLURM_CONF="$dir/slurm.conf" timed slurmd slurmd -N "$node" -G
  done
  read -r cmin cmed crss < <(stats check)
  read -r smin smed srss < <(stats slurmd)
  printf '%-7s %-9s %13s/%-6s %5d KB %13s/%-6s %5d KB %7s\n' "$nodes" "$(du -h --apparent-size "$dir/gres.conf" | cut -f1)" \
    "$cmin" "$cmed" "$crss" "$smin" "$smed" "$srss" \
    "$(awk -v a="$cmed" -v b="$smed" 'BEGIN {printf "%.2f", a / b}')"
done

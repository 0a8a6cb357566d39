#!/usr/bin/env bash
# Times `slurm-mig diff` against a cluster-wide gres.conf side by side with
# real `slurmd -G` parsing the same file for the same node, at 100, 1,000
# and 10,000 nodes, and reports min/median wall time and peak RSS.
# Needs root (mknod) and Debian's slurmd; run from the repository root:
#
#   scripts/bench-cluster.sh [REPEATS]
set -euo pipefail
repeats=${1:-11}
export CGO_CFLAGS="${CGO_CFLAGS:--O2 -g -Wno-deprecated-declarations}"
command -v slurmd >/dev/null || { echo "bench-cluster: slurmd is needed (apt-get install slurmd)" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "bench-cluster: run as root (mknod)" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/slurm-mig" ./cmd/slurm-mig
go build -o "$work/gencluster" ./internal/testkit/synth/gencluster

# stats CMD...: runs CMD $repeats times; prints "min median maxrss_kb".
stats() {
  local times=() rss=0 t0 t1 r
  for ((i = 0; i < repeats; i++)); do
    t0=$(date +%s%N)
    /usr/bin/time -f %M -o "$work/rss" "$@" >/dev/null 2>&1 || true
    t1=$(date +%s%N)
    times+=($(((t1 - t0) / 1000)))
    r=$(tail -n 1 "$work/rss")
    if ((r > rss)); then rss=$r; fi
  done
  printf '%s\n' "${times[@]}" | sort -n | awk -v rss="$rss" '{a[NR]=$1} END {printf "%.1f %.1f %d\n", a[1]/1000, a[int((NR+1)/2)]/1000, rss}'
}

printf '%-8s %-10s %26s %26s %8s\n' nodes "file" "slurm-mig diff (min/med ms, RSS)" "slurmd -G (min/med ms, RSS)" ratio
for nodes in 100 1000 10000; do
  dir="$work/n$nodes"
  mkdir -p "$dir/dev/nvidia-caps" "$dir/spool"
  "$work/gencluster" -nodes "$nodes" -dir "$dir" -dev "$dir/dev"
  node=$(cat "$dir/node.txt")
  # slurmd -G checks this node's device files: make them real devices.
  for f in $(grep "NodeName=$node " "$dir/gres.conf" | grep -o "$dir/dev/[^ ,]*" | sort -u); do
    b=$(basename "$f")
    case $b in
      nvidia-cap*) mknod "$f" c 241 "${b#nvidia-cap}" ;;
      *) mknod "$f" c 195 "${b#nvidia}" ;;
    esac
  done
  cat >"$dir/slurm.conf" <<CONF
ClusterName=bench
SlurmctldHost=localhost
GresTypes=gpu
SlurmdSpoolDir=$dir/spool
NodeName=$node CPUs=2 Gres=gpu:a100_1g.10gb:28
CONF
  # The generated lines name /dev; the file names $dir/dev: compare paths as written.
  sed "s|$dir/dev/|/dev/|g" "$dir/gres.conf" >"$dir/gres-dev.conf"
  "$work/slurm-mig" diff --from "$dir/snapshot.json" --gres-conf "$dir/gres-dev.conf" --no-cores >/dev/null ||
    { echo "bench-cluster: diff does not read the synthetic file as the same" >&2; exit 1; }
  read -r mmin mmed mrss < <(stats "$work/slurm-mig" diff --from "$dir/snapshot.json" --gres-conf "$dir/gres-dev.conf" --no-cores)
  read -r smin smed srss < <(SLURM_CONF="$dir/slurm.conf" stats slurmd -N "$node" -G)
  printf '%-8s %-10s %13s/%-6s %5d KB %13s/%-6s %5d KB %8s\n' "$nodes" "$(du -h "$dir/gres.conf" | cut -f1)" \
    "$mmin" "$mmed" "$mrss" "$smin" "$smed" "$srss" "$(awk -v a="$mmed" -v b="$smed" 'BEGIN {printf "%.3f", a / b}')"
done

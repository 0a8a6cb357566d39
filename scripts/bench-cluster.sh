#!/usr/bin/env bash
# Times `slurm-mig diff` against a cluster-wide gres.conf side by side with
# real `slurmd -G` parsing the same file for the same node, at 100, 1,000
# and 10,000 nodes, and reports min/median wall time and peak RSS.
# Needs root (mknod) and Debian's slurmd; run from the repository root:
#
#   scripts/bench-cluster.sh [REPEATS]
set -euo pipefail
repeats=${1:-11}
. "$(dirname "$0")/bench-lib.sh"
bench_setup bench-cluster

# repeated CMD...: runs CMD $repeats times; prints "min median maxrss_kb".
repeated() {
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
  device_cluster "$dir" "$nodes"
  node=$(cat "$dir/node.txt")
  # The generated lines name /dev; the file names $dir/dev: compare paths as written.
  sed "s|$dir/dev/|/dev/|g" "$dir/gres.conf" >"$dir/gres-dev.conf"
  "$work/slurm-mig" diff --from "$dir/snapshot.json" --gres-conf "$dir/gres-dev.conf" --no-cores >/dev/null ||
    { echo "bench-cluster: diff does not read the synthetic file as the same" >&2; exit 1; }
  read -r mmin mmed mrss < <(repeated "$work/slurm-mig" diff --from "$dir/snapshot.json" --gres-conf "$dir/gres-dev.conf" --no-cores)
  read -r smin smed srss < <(SLURM_CONF="$dir/slurm.conf" repeated slurmd -N "$node" -G)
  printf '%-8s %-10s %13s/%-6s %5d KB %13s/%-6s %5d KB %8s\n' "$nodes" "$(du -h "$dir/gres.conf" | cut -f1)" \
    "$mmin" "$mmed" "$mrss" "$smin" "$smed" "$srss" "$(awk -v a="$mmed" -v b="$smed" 'BEGIN {printf "%.3f", a / b}')"
done

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
. "$(dirname "$0")/bench-lib.sh"
bench_setup bench-check

printf '%-7s %-9s %27s %27s %7s\n' nodes gres.conf "slurm-mig check (min/med ms, RSS)" "slurmd -G (min/med ms, RSS)" ratio
for nodes in 100 1000 10000; do
  dir="$work/n$nodes"
  merged_cluster "$dir" "$nodes"
  node=$(cat "$dir/node.txt")
  # check must find every node clean.
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

#!/usr/bin/env bash
# Times whole-process `slurm-mig merge DIR` of one gen fragment a node
# side by side with real `slurmd -N <node> -G` reading the merged
# gres.conf (with the merged node lines as its slurm.conf), at 100, 1,000
# and 10,000 nodes of a synthetic fleet (internal/testkit/synth: four layouts, 8 to
# 32 lines a node). The two run in interleaved rounds, so that both see the
# same machine; it reports min/median wall time and peak RSS. Needs root
# (mknod) and Debian's slurmd; run from the repository root:
#
#   scripts/bench-merge.sh [ROUNDS]
set -euo pipefail
rounds=${1:-11}
. "$(dirname "$0")/bench-lib.sh"
bench_setup bench-merge

printf '%-7s %-9s %-7s %27s %27s %7s\n' nodes fragments merged "slurm-mig merge (min/med ms, RSS)" "slurmd -G (min/med ms, RSS)" ratio
for nodes in 100 1000 10000; do
  dir="$work/n$nodes"
  merged_cluster "$dir" "$nodes"
  node=$(cat "$dir/node.txt")
  rm -f "$work"/*.t "$work"/*.rss
  for ((r = 0; r < rounds; r++)); do
    timed merge "$work/slurm-mig" merge "$dir/fragments"
    SLURM_CONF="$dir/slurm.conf" timed slurmd slurmd -N "$node" -G
  done
  read -r mmin mmed mrss < <(stats merge)
  read -r smin smed srss < <(stats slurmd)
  printf '%-7s %-9s %-7s %13s/%-6s %5d KB %13s/%-6s %5d KB %7s\n' "$nodes" "$(du -sh --apparent-size "$dir/fragments" | cut -f1)" \
    "$(du -h --apparent-size "$dir/gres.conf" | cut -f1)" "$mmin" "$mmed" "$mrss" "$smin" "$smed" "$srss" \
    "$(awk -v a="$mmed" -v b="$smed" 'BEGIN {printf "%.2f", a / b}')"
done

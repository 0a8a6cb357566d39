#!/usr/bin/env bash
# Times slurm-mig against the tools it replaces on a real GPU node, side by
# side in one run: slurm-mig gen, slurm-mig snapshot, nvidia-smi -L, and
# the shell pipeline sites use today (nvidia-smi mig -lci through awk, one
# grep of mig-minors per instance). Commands run in interleaved rounds;
# each gets min and median wall time and its median as a ratio to
# nvidia-smi -L. Read only: it changes nothing on the GPUs.
#
#   scripts/bench-device.sh [SLURM_MIG_BINARY] [ROUNDS]
set -euo pipefail
bin=${1:-bin/slurm-mig}
rounds=${2:-31}
minors=/proc/driver/nvidia-caps/mig-minors

pipeline() {
  nvidia-smi mig -lci 2>/dev/null |
    awk '$2 ~ /^[0-9]+$/ && $3 ~ /^[0-9]+$/ && $5 ~ /^[0-9]+$/ {print $2, $3, $5}' |
    while read -r gpu gi ci; do
      grep -E "^gpu$gpu/gi$gi/(ci$ci/)?access " "$minors"
    done
}

names=("slurm-mig gen" "slurm-mig snapshot" "nvidia-smi -L" "nvidia-smi mig -lci | awk | grep")
run_one() {
  case $1 in
    0) "$bin" gen ;;
    1) "$bin" snapshot ;;
    2) nvidia-smi -L ;;
    3) pipeline ;;
  esac
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for c in 0 1 2 3; do run_one "$c" >/dev/null 2>&1 || true; done # warm caches and the driver
for ((r = 0; r < rounds; r++)); do
  for c in 0 1 2 3; do
    t0=$(date +%s%N)
    run_one "$c" >/dev/null 2>&1 || true
    t1=$(date +%s%N)
    echo $(((t1 - t0) / 1000)) >>"$tmp/$c"
  done
done

median() { sort -n "$1" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ref=$(median "$tmp/2")
echo "$(nvidia-smi -L | head -n 1); driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -n 1); $rounds rounds"
printf '%-36s %10s %10s %8s\n' command "min ms" "median ms" "x smi-L"
for c in 0 1 2 3; do
  min=$(sort -n "$tmp/$c" | head -n 1)
  med=$(median "$tmp/$c")
  awk -v n="${names[$c]}" -v a="$min" -v m="$med" -v r="$ref" \
    'BEGIN {printf "%-36s %10.1f %10.1f %8.2f\n", n, a/1000, m/1000, m/r}'
done

#!/usr/bin/env bash
# Times slurm-mig against the tools it replaces on a real GPU node, side by
# side in one run: slurm-mig gen, slurm-mig snapshot, nvidia-smi -L, and
# the shell pipeline sites use today (nvidia-smi mig -lci through awk, one
# grep of mig-minors per instance). Commands run in interleaved rounds;
# each gets min and median wall time and its median as a ratio to
# nvidia-smi -L. Read only: it changes nothing on the GPUs.
#
#   scripts/bench-device.sh [SLURM_MIG_BINARY] [ROUNDS]
#
# A command that fails is never timed as if it worked: slurm-mig and
# nvidia-smi -L must succeed in every round, or the run stops with the
# command's error. The pipeline's status (nvidia-smi mig -lci fails on a
# node without MIG) is shown in the header and must not change between
# rounds. MIG_MINORS overrides /proc/driver/nvidia-caps/mig-minors.
set -euo pipefail
bin=${1:-bin/slurm-mig}
rounds=${2:-31}
minors=${MIG_MINORS:-/proc/driver/nvidia-caps/mig-minors}

# lci_instances reads `nvidia-smi mig -lci` and prints "GPU GI CI" for each
# compute instance. Rows are "| GPU GI NAME... PROFILE_ID CI START:SIZE |";
# the name may hold blanks ("MIG 1g.10gb", "MIG 1c.3g.40gb"), so the
# fields are taken from both ends, never by a fixed column.
lci_instances() {
  awk '{
    gsub(/\|/, " ")
    n = split($0, f, " ")
    if (n >= 6 && f[1] ~ /^[0-9]+$/ && f[2] ~ /^[0-9]+$/ && f[n-2] ~ /^[0-9]+$/ &&
        f[n-1] ~ /^[0-9]+$/ && f[n] ~ /^[0-9]+:[0-9]+$/)
      print f[1], f[2], f[n-1]
  }'
}

pipeline() {
  nvidia-smi mig -lci | lci_instances | while read -r gpu gi ci; do
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

# timed C ROUND: runs command C once, appends its wall time in µs to
# $tmp/C, and stops the run if it failed (or, for the pipeline, if its
# status differs from the warm-up's).
timed() {
  local c=$1 round=$2 status=0 t0 t1
  t0=$(date +%s%N)
  run_one "$c" >"$tmp/out" 2>"$tmp/err" || status=$?
  t1=$(date +%s%N)
  if { [ "$c" != 3 ] && [ "$status" != 0 ]; } || { [ "$c" = 3 ] && [ "$status" != "$pipeline_status" ]; }; then
    echo "bench-device: ${names[$c]} failed in $round (exit $status): $(head -c 2000 "$tmp/err")" >&2
    exit 1
  fi
  echo $(((t1 - t0) / 1000)) >>"$tmp/$c"
}

# Warm caches and the driver; learn what the pipeline does here.
pipeline_status=0
pipeline >"$tmp/pipeline" 2>/dev/null || pipeline_status=$?
devices=$(grep -c '/ci[0-9]*/access ' "$tmp/pipeline" || true)
for c in 0 1 2 3; do timed "$c" warm-up; done
rm -f "$tmp"/[0-3]
for ((r = 0; r < rounds; r++)); do
  for c in 0 1 2 3; do timed "$c" "round $((r + 1))"; done
done

median() { sort -n "$1" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ref=$(median "$tmp/2")
round_word=rounds
[ "$rounds" = 1 ] && round_word=round
echo "$(nvidia-smi -L | head -n 1); driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -n 1); $rounds $round_word"
device_word="MIG devices"
[ "$devices" = 1 ] && device_word="MIG device"
echo "pipeline: $devices $device_word found, exit $pipeline_status"
printf '%-36s %10s %10s %8s\n' command "min ms" "median ms" "x smi-L"
for c in 0 1 2 3; do
  min=$(sort -n "$tmp/$c" | head -n 1)
  med=$(median "$tmp/$c")
  awk -v n="${names[$c]}" -v a="$min" -v m="$med" -v r="$ref" \
    'BEGIN {printf "%-36s %10.1f %10.1f %8.2f\n", n, a/1000, m/1000, m/r}'
done

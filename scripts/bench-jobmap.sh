#!/usr/bin/env bash
# Times `slurm-mig jobmap`, the Prolog and Epilog that keep the per-job GPU
# map of dcgm-exporter and jobstats, side by side in one run with
# `nvidia-smi --query-gpu=uuid --format=csv,noheader` (the lookup sites
# paste into prologs today) and `slurm-mig --version` (the floor:
# starting the binary), as scripts/bench-env.sh times env. Commands run
# in interleaved rounds; each gets its min and median wall time, and the
# Prolog's median as a ratio to the others (target: <= 0.25x nvidia-smi).
# Then BURSTS bursts of 32 Prologs at once, then their 32 Epilogs at once,
# each checked line for line: every job's "JOBID UID" line once in the
# file of each of its devices, and nothing left of them after.
#
# jobmap runs as in a real Prolog: from the device state, with the node's
# slurm.conf (this node's line among 500 others) and gres.conf, and the
# variables slurmd gives a Prolog (SLURM_JOB_ID, SLURM_JOB_UID,
# SLURM_JOB_GPUS, SLURMD_NODENAME, SLURM_CONF). Another job stays on the
# first device throughout, so its file is rewritten, not only made and
# removed. On a GPU node the state and gres.conf are written from NVML
# (read only: nothing on the GPUs changes); without nvidia-smi, from the
# demo node's snapshot in this repository, and the nvidia-smi column is
# left out. Everything is written in temp dirs (the map in one under
# /dev/shm, a tmpfs as /run is), removed at the end.
#
#   scripts/bench-jobmap.sh [SLURM_MIG_BINARY] [ROUNDS] [BURSTS]
set -euo pipefail
bin=$(realpath "${1:-bin/slurm-mig}")
rounds=${2:-101}
bursts=${3:-5}

tmp=$(mktemp -d)
# The map in production is under /run, a tmpfs, where jobmap's fsyncs cost
# nothing; /dev/shm is one too.
shm=/dev/shm
[ -d "$shm" ] && [ -w "$shm" ] || shm=$tmp
mapdir=$(mktemp -d -p "$shm")
trap 'rm -rf "$tmp" "$mapdir"' EXIT
node=bench01
. "$(dirname "$0")/bench-node.sh"
bench_node "$bin" "$tmp" "$node"
map=$mapdir/jobmap
export SLURM_CONF=$tmp/slurm.conf SLURMD_NODENAME=$node
# jobmap ID UID GPUS [--remove]: one Prolog (or Epilog) of job ID.
jobmap() {
  SLURM_JOB_ID=$1 SLURM_JOB_UID=$2 SLURM_JOB_GPUS=$3 "$bin" jobmap --state "$tmp/devices.json" --dir "$map" "${@:4}"
}
# The job of the timed rounds has the last two devices (or the one).
gpus=0
[ "$ndev" -ge 2 ] && gpus=$((ndev - 2)),$((ndev - 1))
jobmap 999999 4242 0 # stays on device 0 throughout
jobmap 1 1000 "$gpus"
echo "job: SLURM_JOB_GPUS=$gpus of $ndev devices; the map then holds:"
for f in "$map"/*; do echo "  ${f##*/}: $(tr '\n' ';' <"$f")"; done
jobmap 1 1000 "$gpus" --remove

names=("slurm-mig jobmap (Prolog)" "slurm-mig jobmap --remove" "slurm-mig --version")
[ "$smi" = 1 ] && names+=("nvidia-smi --query-gpu=uuid")
run_one() { # $1 command, $2 the round (the job id)
  case $1 in
    0) jobmap "$2" 1000 "$gpus" ;;
    1) jobmap "$2" 1000 "$gpus" --remove ;;
    2) "$bin" --version ;;
    3) nvidia-smi --query-gpu=uuid --format=csv,noheader ;;
  esac
}
bench_rounds "$tmp" "$rounds" "${names[@]}"
pro=$(bench_median "$tmp/t0")
awk -v e="$pro" -v v="$(bench_median "$tmp/t2")" 'BEGIN {printf "jobmap / --version: %.2fx\n", e/v}'
if [ "$smi" = 1 ]; then
  awk -v e="$pro" -v s="$(bench_median "$tmp/t3")" \
    'BEGIN {printf "jobmap / nvidia-smi --query-gpu=uuid: %.3fx (target <= 0.25x)\n", e/s}'
fi

# Bursts: job J (1..32) has device J % ndev, and (J+1) % ndev too when 3
# divides J; the expected map is worked out here, apart from slurm-mig.
fail=0
for ((b = 0; b < bursts; b++)); do
  base=$((100000 + b * 100))
  : >"$tmp/want"
  t0=$EPOCHREALTIME
  for j in $(seq 1 32); do
    g=$((j % ndev))
    [ $((j % 3)) = 0 ] && [ "$ndev" -ge 2 ] && g=$g,$(((j + 1) % ndev))
    echo "$((base + j)) $g" >>"$tmp/want"
    jobmap $((base + j)) $((2000 + j)) "$g" 2>>"$tmp/burst.err" &
  done
  wait
  t1=$EPOCHREALTIME
  # Every job's line once per device, and only those: count lines by job.
  got=$(cat "$map"/* | grep -v '^999999 ' | sort | uniq -c | awk '{print $2, $1}' | sort)
  want=$(awk '{n = split($2, g, ","); print $1, n}' "$tmp/want" | sort)
  dup=$(for f in "$map"/*; do sort "$f" | uniq -d; done)
  t2=$EPOCHREALTIME
  for j in $(seq 1 32); do
    g=$(awk -v id=$((base + j)) '$1 == id {print $2}' "$tmp/want")
    jobmap $((base + j)) $((2000 + j)) "$g" --remove 2>>"$tmp/burst.err" &
  done
  wait
  t3=$EPOCHREALTIME
  left=$(cat "$map"/* | grep -vc '^999999 4242$' || true)
  ok=PASS
  if [ "$got" != "$want" ] || [ -n "$dup" ] || [ "$left" != 0 ] || [ -s "$tmp/burst.err" ]; then
    ok=FAIL
    fail=1
  fi
  awk -v b=$b -v p="$(echo "$t0 $t1" | awk '{print ($2 - $1) * 1000}')" -v e="$(echo "$t2 $t3" | awk '{print ($2 - $1) * 1000}')" -v ok=$ok \
    'BEGIN {printf "burst %d: 32 Prologs at once %.1f ms, 32 Epilogs at once %.1f ms: %s\n", b, p, e, ok}'
done
if [ "$fail" = 1 ]; then
  echo "burst check failed; stderr of the jobs:" >&2
  cat "$tmp/burst.err" >&2
  exit 1
fi

#!/usr/bin/env bash
# Times `slurm-mig jobmap`, the Prolog and Epilog that keep the per-job GPU
# maps of dcgm-exporter (--format dcgm) and jobstats (--format jobstats),
# side by side in one run with
# `nvidia-smi --query-gpu=uuid --format=csv,noheader` (the lookup sites
# paste into prologs today) and `slurm-mig --version` (the floor:
# starting the binary), as scripts/bench-env.sh times env. Commands run
# in interleaved rounds; each gets its min and median wall time, and the
# Prolog's median as a ratio to the others (target: <= 0.25x nvidia-smi).
# Then, in each format, BURSTS bursts of 32 Prologs at once, then their 32
# Epilogs at once, each checked line for line: every job's line once in
# the file of each of its devices, and nothing left of them after.
#
# jobmap runs as in a real Prolog: from the device state, with the node's
# slurm.conf (this node's line among 500 others) and gres.conf, and the
# variables slurmd gives a Prolog (SLURM_JOB_ID, SLURM_JOB_UID,
# SLURM_JOB_GPUS, SLURMD_NODENAME, SLURM_CONF). Another job stays on the
# first device throughout, so its file is rewritten, not only made and
# removed. On a node of several GPU types each Prolog asks slurmctld for
# the job's GPUs (scontrol show job -d); here a stand-in scontrol on PATH
# answers at once with the job's SLURM_JOB_GPUS, so the figures hold the
# process it starts but not slurmctld's RPC. On a GPU node the state and gres.conf are written from NVML
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
export SLURM_CONF=$tmp/slurm.conf SLURMD_NODENAME=$node
mkdir "$tmp/bin"
cat >"$tmp/bin/scontrol" <<'EOF2'
#!/bin/sh
echo "JobId=$5 JobState=RUNNING Nodes=$SLURMD_NODENAME CPU_IDs=0 Mem=1 GRES=gpu:any:1(IDX:$SLURM_JOB_GPUS)"
EOF2
chmod 0755 "$tmp/bin/scontrol"
export PATH=$tmp/bin:$PATH
fmt=dcgm
map=$mapdir/$fmt
# jobmap ID UID GPUS [--remove]: one Prolog (or Epilog) of job ID, in
# format $fmt, into $map.
jobmap() {
  SLURM_JOB_ID=$1 SLURM_JOB_UID=$2 SLURM_JOB_GPUS=$3 "$bin" jobmap --state "$tmp/devices.json" --format "$fmt" --dir "$map" "${@:4}"
}
# The job of the timed rounds has the last two devices (or the one).
gpus=0
[ "$ndev" -ge 2 ] && gpus=$((ndev - 2)),$((ndev - 1))
# fileof FMT I: the file of device index I in format FMT, from a Prolog
# of one job in a scratch map.
fileof() {
  local out
  out=$(fmt=$1 map=$mapdir/probe-$1-$2 && jobmap 7 7 "$2" && ls "$map" && rm -rf "$map")
  echo "$out"
}
declare -A file
for f in dcgm jobstats; do
  for ((i = 0; i < ndev; i++)); do file[$f,$i]=$(fileof "$f" "$i"); done
done
for f in dcgm jobstats; do
  fmt=$f map=$mapdir/$f
  jobmap 999999 4242 0 # stays on device 0 throughout
  jobmap 1 1000 "$gpus"
  echo "job: SLURM_JOB_GPUS=$gpus of $ndev devices; the $f map then holds:"
  for x in "$map"/*; do echo "  ${x##*/}: $(tr '\n' ';' <"$x")"; done
  jobmap 1 1000 "$gpus" --remove
done
fmt=dcgm map=$mapdir/dcgm

# Column 4 times a Prolog that asks no controller and an Epilog, column 2
# the same in jobstats' format: beside columns 0 and 1 together.
names=("slurm-mig jobmap (Prolog)" "slurm-mig jobmap --remove" "jobstats Prolog + Epilog" "slurm-mig --version" "--no-controller Prolog+Epilog")
[ "$smi" = 1 ] && names+=("nvidia-smi --query-gpu=uuid")
run_one() { # $1 command, $2 the round (the job id)
  case $1 in
    0) jobmap "$2" 1000 "$gpus" ;;
    1) jobmap "$2" 1000 "$gpus" --remove ;;
    2) fmt=jobstats map=$mapdir/jobstats jobmap "$2" 1000 "$gpus" && fmt=jobstats map=$mapdir/jobstats jobmap "$2" 1000 "$gpus" --remove ;;
    3) "$bin" --version ;;
    4) jobmap "$2" 1000 "$gpus" --no-controller && jobmap "$2" 1000 "$gpus" --remove ;;
    5) nvidia-smi --query-gpu=uuid --format=csv,noheader ;;
  esac
}
bench_rounds "$tmp" "$rounds" "${names[@]}"
pro=$(bench_median "$tmp/t0")
awk -v e="$pro" -v v="$(bench_median "$tmp/t3")" 'BEGIN {printf "jobmap / --version: %.2fx\n", e/v}'
if [ "$smi" = 1 ]; then
  awk -v e="$pro" -v s="$(bench_median "$tmp/t5")" \
    'BEGIN {printf "jobmap / nvidia-smi --query-gpu=uuid: %.3fx (target <= 0.25x)\n", e/s}'
fi

# Bursts: job J (1..32) has device J % ndev, and (J+1) % ndev too when 3
# divides J; the expected map is worked out here, apart from the bursts:
# a job's line once in each distinct file of its devices (two compute
# instances of one GPU instance are one dcgm file).
fail=0
for fmt in dcgm jobstats; do
map=$mapdir/$fmt
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
  got=$(cat "$map"/* | grep -Ev '^999999( |$)' | sort | uniq -c | awk '{print $2, $1}' | sort)
  want=$(while read -r id g; do
    for i in ${g//,/ }; do echo "${file[$fmt,$i]}"; done | sort -u | wc -l | sed "s/^/$id /"
  done <"$tmp/want" | sort)
  dup=$(for f in "$map"/*; do sort "$f" | uniq -d; done)
  t2=$EPOCHREALTIME
  for j in $(seq 1 32); do
    g=$(awk -v id=$((base + j)) '$1 == id {print $2}' "$tmp/want")
    jobmap $((base + j)) $((2000 + j)) "$g" --remove 2>>"$tmp/burst.err" &
  done
  wait
  t3=$EPOCHREALTIME
  left=$(cat "$map"/* | grep -Evc '^999999( 4242)?$' || true)
  ok=PASS
  if [ "$got" != "$want" ] || [ -n "$dup" ] || [ "$left" != 0 ] || [ -s "$tmp/burst.err" ]; then
    ok=FAIL
    fail=1
  fi
  awk -v b=$b -v p="$(echo "$t0 $t1" | awk '{print ($2 - $1) * 1000}')" -v e="$(echo "$t2 $t3" | awk '{print ($2 - $1) * 1000}')" -v ok=$ok \
    -v f=$fmt 'BEGIN {printf "%s burst %d: 32 Prologs at once %.1f ms, 32 Epilogs at once %.1f ms: %s\n", f, b, p, e, ok}'
done
done
if [ "$fail" = 1 ]; then
  echo "burst check failed; stderr of the jobs:" >&2
  cat "$tmp/burst.err" >&2
  exit 1
fi

#!/usr/bin/env bash
# Times `slurm-mig env`, the TaskProlog run once per task, side by side in
# one run with `nvidia-smi --query-gpu=uuid --format=csv,noheader` (the
# lookup sites paste into prologs today) and `slurm-mig --version` (the
# floor: starting the binary). Commands run in interleaved rounds; each
# gets its min and median wall time, and env's median as a ratio to the
# others (targets: <= 0.25x nvidia-smi, <= 1.5x --version).
#
# env runs as in a real task: from the device state, with the node's
# slurm.conf (this node's line among 500 others) and gres.conf, and the
# environment Slurm gives a task of a two-GPU step. On a GPU node the
# state and gres.conf are written from NVML; without nvidia-smi, from the
# demo node's snapshot, and the nvidia-smi column is left out. Read only
# outside a temp dir: it changes nothing on the GPUs or in /etc/slurm.
#
#   scripts/bench-env.sh [SLURM_MIG_BINARY] [ROUNDS]
set -euo pipefail
bin=$(realpath "${1:-bin/slurm-mig}")
rounds=${2:-101}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
node=bench01
. "$(dirname "$0")/bench-node.sh"
bench_node "$bin" "$tmp" "$node"
step=0
[ "$ndev" -ge 2 ] && step=$((ndev - 2)),$((ndev - 1))

export SLURM_CONF=$tmp/slurm.conf SLURMD_NODENAME=$node SLURM_STEP_ID=0 SLURM_STEP_GPUS=$step \
  SLURM_GPUS_ON_NODE=$(awk -F, '{print NF}' <<<"$step") SLURM_JOB_ID=1 \
  CUDA_VISIBLE_DEVICES=$step GPU_DEVICE_ORDINAL=$step ROCR_VISIBLE_DEVICES=$step ZE_AFFINITY_MASK=$step
echo "task: SLURM_STEP_GPUS=$step of $ndev devices; env prints:"
"$bin" env --state "$tmp/devices.json" | sed 's/^/  /'

names=("slurm-mig env" "slurm-mig --version")
[ "$smi" = 1 ] && names+=("nvidia-smi --query-gpu=uuid")
run_one() {
  case $1 in
    0) "$bin" env --state "$tmp/devices.json" ;;
    1) "$bin" --version ;;
    2) nvidia-smi --query-gpu=uuid --format=csv,noheader ;;
  esac
}
bench_rounds "$tmp" "$rounds" "${names[@]}"
env_med=$(bench_median "$tmp/t0")
awk -v e="$env_med" -v v="$(bench_median "$tmp/t1")" \
  'BEGIN {printf "env / --version: %.2fx (target <= 1.5x)\n", e/v}'
if [ "$smi" = 1 ]; then
  awk -v e="$env_med" -v s="$(bench_median "$tmp/t2")" \
    'BEGIN {printf "env / nvidia-smi --query-gpu=uuid: %.3fx (target <= 0.25x)\n", e/s}'
fi

# Sourced by scripts/bench-env.sh and scripts/bench-jobmap.sh, which time
# what runs once per task or job on a GPU node: the node they both run on.

# bench_node BIN DIR NODE: writes DIR/gres.conf and DIR/devices.json (gen)
# and DIR/slurm.conf, with NODE's line among 500 others, as a real node's
# Slurm would read them. On a GPU node they come from NVML (read only:
# nothing on the GPUs changes); without nvidia-smi, from the demo node's
# snapshot in this repository. Sets smi (1 with nvidia-smi, else 0) and
# ndev, the number of GPU devices of the node.
bench_node() {
  local bin=$1 dir=$2 node=$3 here src=() from=()
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
    smi=1
  else
    smi=0
    src=(--root "$here/testdata/demo/root")
    from=(--from "$here/testdata/demo/snapshot.json")
  fi
  "$bin" "${src[@]}" gen "${from[@]}" --node-name "$node" -o "$dir/gres.conf" --state "$dir/devices.json" >/dev/null
  {
    echo "ClusterName=bench"
    echo "SlurmctldHost=head"
    echo "GresTypes=gpu" # without it slurmd reads no GPU of gres.conf
    for i in $(seq 1 500); do echo "NodeName=cpu$i CPUs=128 RealMemory=500000"; done
    echo "$("$bin" "${src[@]}" node "${from[@]}" --node-name "$node") CPUs=128 RealMemory=1000000"
    echo "PartitionName=gpu Nodes=$node Default=YES"
  } >"$dir/slurm.conf"
  ndev=$(grep -c '^NodeName=' "$dir/gres.conf")
}

# bench_rounds DIR ROUNDS NAME...: times run_one (the caller's: run_one I
# R runs command I, in round R) for every named command in interleaved
# rounds, after one round that warms caches and the driver, and prints
# the machine and each command's min and median. Each command's times
# (µs) stay in DIR/tI for bench_median.
bench_rounds() {
  local dir=$1 rounds=$2 c r t0 t1
  shift 2
  local names=("$@")
  for c in "${!names[@]}"; do run_one "$c" 1 >/dev/null; done
  for ((r = 0; r < rounds; r++)); do
    for c in "${!names[@]}"; do
      t0=$EPOCHREALTIME
      run_one "$c" $((r + 2)) >/dev/null
      t1=$EPOCHREALTIME
      echo "$t0 $t1" | awk '{printf "%d\n", ($2 - $1) * 1e6}' >>"$dir/t$c"
    done
  done
  if [ "$smi" = 1 ]; then
    echo "$(nvidia-smi -L | head -n 1); driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -n 1); $rounds rounds"
  else
    echo "no nvidia-smi: demo node's state; $rounds rounds"
  fi
  printf '%-30s %9s %10s\n' command "min ms" "median ms"
  for c in "${!names[@]}"; do
    awk -v n="${names[$c]}" -v a="$(sort -n "$dir/t$c" | head -n 1)" -v m="$(bench_median "$dir/t$c")" \
      'BEGIN {printf "%-30s %9.2f %10.2f\n", n, a/1000, m/1000}'
  done
}

# bench_median FILE: the median of FILE's numbers.
bench_median() { sort -n "$1" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

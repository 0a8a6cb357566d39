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
    for i in $(seq 1 500); do echo "NodeName=cpu$i CPUs=128 RealMemory=500000"; done
    echo "$("$bin" "${src[@]}" node "${from[@]}" --node-name "$node") CPUs=128 RealMemory=1000000"
    echo "PartitionName=gpu Nodes=$node Default=YES"
  } >"$dir/slurm.conf"
  ndev=$(grep -c '^NodeName=' "$dir/gres.conf")
}

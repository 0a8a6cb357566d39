#!/usr/bin/env bash
# Captures, read only, what slurm-mig reads on a GPU node and what NVIDIA's
# tools say about the same node, into DIR: a fixture for the golden tests
# and the evidence for a bug report. It changes nothing on the GPUs.
#
#   scripts/capture-node.sh DIR [SLURM_MIG_BINARY]
#
# DIR/root holds the files slurm-mig reads, at their paths (--root DIR/root
# reads them): the CPU topology, each GPU's local_cpulist, /proc/meminfo
# and mig-minors. Beside it: slurm-mig's snapshot, gen and node --full, and
# nvidia-smi -L, topo -m, nvlink -s, nvlink -R and -q -x.
set -euo pipefail
out=${1:?usage: capture-node.sh DIR [SLURM_MIG_BINARY]}
bin=${2:-slurm-mig}
mkdir -p "$out/root"

# copy FILE...: FILE to DIR/root/FILE, when it exists and is readable.
copy() {
  local f
  for f; do
    [ -r "$f" ] || continue
    mkdir -p "$out/root$(dirname "$f")"
    cat "$f" >"$out/root$f"
  done
}

cpu=/sys/devices/system/cpu
copy "$cpu/online" "$cpu/possible" "$cpu/present" /proc/meminfo /proc/driver/nvidia-caps/mig-minors
for c in "$cpu"/cpu[0-9]*; do
  copy "$c/online"
  for f in "$c"/topology/*; do copy "$f"; done
done
for n in /sys/devices/system/node/node[0-9]*; do copy "$n/cpulist"; done
copy /sys/devices/system/node/online

# Each GPU's PCI device: nvidia-smi says 00000000:0F:00.0, sysfs 0000:0f:00.0.
nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader | while read -r bus; do
  dev=$(echo "${bus#????}" | tr 'A-F' 'a-f')
  copy "/sys/bus/pci/devices/$dev/local_cpulist" "/sys/bus/pci/devices/$dev/numa_node"
done

nvidia-smi -L >"$out/nvidia-smi-L.txt"
nvidia-smi topo -m >"$out/topo-m.txt"
nvidia-smi nvlink -s >"$out/nvlink-s.txt" 2>&1 || true
nvidia-smi nvlink -R >"$out/nvlink-R.txt" 2>&1 || true
nvidia-smi -q -x >"$out/nvidia-smi-q.xml"
"$bin" snapshot >"$out/snapshot.json"
"$bin" gen >"$out/gres.conf"
"$bin" node --full >"$out/node-full.txt"
echo "captured into $out"

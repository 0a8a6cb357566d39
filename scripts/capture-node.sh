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
# nvidia-smi -L, topo -m, nvlink -s, nvlink -R, -q -x, and the MIG profile
# table as mig -lgip and -lgipp list it (read only, MIG on or off).
#
# A step that fails does not stop the capture: the failing case is the one
# a bug report needs. Every step's exit status goes to DIR/status.txt and
# its error output to DIR/errors.txt; the script exits 1 when any failed.
set -uo pipefail
out=${1:?usage: capture-node.sh DIR [SLURM_MIG_BINARY]}
bin=${2:-slurm-mig}
mkdir -p "$out/root" || exit 1
: >"$out/status.txt"
: >"$out/errors.txt"
failed=0

# step FILE CMD...: runs CMD with its output in DIR/FILE, and records its
# exit status, and its error output if any.
step() {
  local file=$1 status=0
  shift
  "$@" >"$out/$file" 2>"$out/.stderr" || status=$?
  echo "exit $status: $*" >>"$out/status.txt"
  if [ -s "$out/.stderr" ]; then
    { echo "== $* (exit $status)"; cat "$out/.stderr"; } >>"$out/errors.txt"
  fi
  rm -f "$out/.stderr"
  [ "$status" = 0 ] || failed=$((failed + 1))
}

# copy FILE...: FILE to DIR/root/FILE, when it exists and is readable.
copy() {
  local f
  for f; do
    [ -r "$f" ] || continue
    mkdir -p "$out/root$(dirname "$f")" && step "root$f" cat "$f"
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
step pci-bus-ids.txt nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader
while read -r bus; do
  dev=$(echo "${bus#????}" | tr 'A-F' 'a-f')
  copy "/sys/bus/pci/devices/$dev/local_cpulist" "/sys/bus/pci/devices/$dev/numa_node"
done <"$out/pci-bus-ids.txt"

step nvidia-smi-L.txt nvidia-smi -L
step topo-m.txt nvidia-smi topo -m
step nvlink-s.txt nvidia-smi nvlink -s
step nvlink-R.txt nvidia-smi nvlink -R
step nvidia-smi-q.xml nvidia-smi -q -x
step lgip.txt nvidia-smi mig -lgip
step lgipp.txt nvidia-smi mig -lgipp
step snapshot.json "$bin" snapshot
step gres.conf "$bin" gen
step node-full.txt "$bin" node --full

if [ "$failed" -gt 0 ]; then
  steps=steps
  [ "$failed" = 1 ] && steps=step
  echo "captured into $out; $failed $steps failed: see $out/status.txt and $out/errors.txt"
  exit 1
fi
echo "captured into $out"

#!/usr/bin/env bash
# Times whole-process `slurm-mig plan` side by side with what the issue
# that brought it holds it to, in interleaved rounds, and reports min and
# median wall time, peak RSS and the ratio of the medians:
#
#   - one node: `plan --from SNAPSHOT` beside `gen --from SNAPSHOT`, as an
#     admin types it and with the least gen does (--no-cores, --root of the
#     capture), for the real H100's snapshot (testdata/real/h100-snapshot-v2)
#     and a synthetic node of eight H100s;
#   - a fleet of NODES nodes (10,000 unless given): `plan --assign` of their
#     snapshots (internal/testkit/synth: eight H100s a node, the real
#     H100's profile table, four layouts), and of one snapshot for them all
#     (`--hardware 'gpu[00000-09999]=gpu00000.json'`), each beside real
#     `slurmd -N <node> -G` reading the 10,000-node gres.conf that
#     scripts/bench-cluster.sh times diff against, one line a device; and
#     beside `slurmd -G` reading the much smaller gres.conf that merge
#     makes of a fleet of four layouts, hostlists (scripts/bench-merge.sh).
#
# Needs root (mknod) and Debian's slurmd; run from the repository root:
#
#   scripts/bench-plan.sh [ROUNDS] [NODES]
set -euo pipefail
rounds=${1:-11}
nodes=${2:-10000}
. "$(dirname "$0")/bench-lib.sh"
bench_setup bench-plan

# row LABEL A B: a table row of A's and B's figures and A's median / B's.
row() {
  local amin amed arss bmin bmed brss
  read -r amin amed arss < <(stats "$2")
  read -r bmin bmed brss < <(stats "$3")
  printf '%-44s %9s/%-9s %7d KB %9s/%-9s %7d KB %6s\n' "$1" "$amin" "$amed" "$arss" "$bmin" "$bmed" "$brss" \
    "$(awk -v a="$amed" -v b="$bmed" 'BEGIN {printf "%.2f", a / b}')"
}

# The fleet, and the config and assignment plan reads.
fleet="$work/fleet"
mkdir -p "$fleet"
"$work/gencluster" -plan -nodes "$nodes" -dir "$fleet"
config=(--mig-config "$fleet/mig.yaml" --select all-balanced)
# The same fleet declared to have the GPUs of its first node's snapshot
# (gencluster names the nodes gpu00000, gpu00001, ...).
hwlist="gpu[00000-$(printf %05d $((nodes - 1)))]"
hardware=(--hardware "$hwlist=$fleet/snapshots/gpu00000.json")

echo "one node: plan --from SNAPSHOT beside gen --from SNAPSHOT ($rounds rounds)"
printf '%-44s %27s %27s %6s\n' "snapshot, gen" "plan (min/med ms, RSS)" "gen (min/med ms, RSS)" ratio
real=testdata/real/h100-snapshot-v2
for snap in "$real/snapshot.json" "$fleet/snapshots/$(ls "$fleet/snapshots" | head -n 1)"; do
  rm -f "$work"/*.t "$work"/*.rss
  for ((r = 0; r < rounds; r++)); do
    timed plan "$work/slurm-mig" plan --from "$snap" "${config[@]}"
    timed gen "$work/slurm-mig" gen --from "$snap"
    timed least "$work/slurm-mig" --root "$real/root" gen --from "$snap" --no-cores
  done
  name="$(basename "$(dirname "$snap")")/$(basename "$snap")"
  row "$name, as typed" plan gen
  row "$name, --no-cores" plan least
done
# The 10,000-node gres.conf of scripts/bench-cluster.sh, with a slurm.conf
# of its last node, whose lines come last.
cluster="$work/cluster"
device_cluster "$cluster" "$nodes"
cnode=$(cat "$cluster/node.txt")

# merge's gres.conf of a fleet of four layouts (scripts/bench-merge.sh).
merged="$work/merged"
merged_cluster "$merged" "$nodes"
mnode=$(cat "$merged/node.txt")

# Each command must do the work it is timed for: plan prints one line a
# layout, and slurmd reads its node's records from each file.
lines=$("$work/slurm-mig" plan "${config[@]}" --assign "$fleet/assign.txt" "$fleet/snapshots" | tee "$work/own.txt" | wc -l)
[ "$lines" = 4 ] || { echo "bench-plan: plan printed $lines node lines, not one a layout (4)" >&2; exit 1; }
"$work/slurm-mig" plan "${config[@]}" --assign "$fleet/assign.txt" "${hardware[@]}" | cmp - "$work/own.txt" ||
  { echo "bench-plan: plan ${hardware[*]} does not print the lines of the nodes' own snapshots" >&2; exit 1; }
got=$(SLURM_CONF="$cluster/slurm.conf" slurmd -N "$cnode" -G 2>&1)
if [ "$(grep -c ": Gres Name=gpu " <<<"$got")" != 28 ]; then
  echo "bench-plan: slurmd -G does not read $cnode's 28 records from $cluster/gres.conf:" >&2
  echo "$got" >&2
  exit 1
fi

echo
echo "$nodes nodes: plan --assign of their snapshots ($(du -sh --apparent-size "$fleet/snapshots" | cut -f1)), and of one (--hardware '$hwlist=gpu00000.json'), beside slurmd -G ($rounds rounds)"
rm -f "$work"/*.t "$work"/*.rss
for ((r = 0; r < rounds; r++)); do
  timed plan "$work/slurm-mig" plan "${config[@]}" --assign "$fleet/assign.txt" "$fleet/snapshots"
  timed hardware "$work/slurm-mig" plan "${config[@]}" --assign "$fleet/assign.txt" "${hardware[@]}"
  SLURM_CONF="$cluster/slurm.conf" timed cluster slurmd -N "$cnode" -G
  SLURM_CONF="$merged/slurm.conf" timed merged slurmd -N "$mnode" -G
done
printf '%-44s %27s %27s %6s\n' "plan from, slurmd -G reads" "plan (min/med ms, RSS)" "slurmd -G (min/med ms, RSS)" ratio
row "snapshots, cluster gres.conf ($(du -h --apparent-size "$cluster/gres.conf" | cut -f1))" plan cluster
row "snapshots, merged gres.conf ($(du -h --apparent-size "$merged/gres.conf" | cut -f1))" plan merged
row "--hardware, cluster gres.conf" hardware cluster
row "--hardware, merged gres.conf" hardware merged

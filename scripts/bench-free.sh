#!/usr/bin/env bash
# bench-free.sh BINARY [ROUNDS] [BURST]: time `slurm-mig free` as whole
# processes on a node of 28 MIG devices (4 GPUs of seven 1g.10gb, a
# snapshot written here, --from it), one call at a time against BURST
# calls (default 32) released at once, ROUNDS rounds each (default 21).
# Each call is timed from its release to its exit; the figures are
# medians over all calls. Every round uses a fresh claims directory and
# a job process of its own, killed at the end of the round, so claims do
# not pile up. Needs bash 5 (EPOCHREALTIME) and awk, nothing else.
set -euo pipefail
export LC_ALL=C # printf and awk read and write 1.5, not 1,5
bin=$(realpath "${1:?usage: bench-free.sh BINARY [ROUNDS] [BURST]}")
rounds=${2:-21}
burst=${3:-32}
# On tmpfs where there is one: claims live in /run, a tmpfs, on nodes.
work=$(mktemp -d -p "$( [ -d /dev/shm ] && echo /dev/shm || echo "${TMPDIR:-/tmp}")")
trap 'rm -rf "$work"' EXIT

# The node: GPU g has MIG devices gi 7-13 with cap minors as driver 580
# numbers them (gpu g, gi i: 3+135g+9i and the next).
{
	printf '{"schema_version": 1, "hostname": "bench01", "driver_version": "580.159.04", "gpus": ['
	for g in 0 1 2 3; do
		[ $g -gt 0 ] && printf ','
		printf '{"index": %d, "minor": %d, "uuid": "GPU-00000000-0000-4000-8000-%012d", "name": "NVIDIA A100-SXM4-80GB", "mig_enabled": true, "mig_pending": true, "mig_devices": [' $g $g $g
		for m in 0 1 2 3 4 5 6; do
			[ $m -gt 0 ] && printf ','
			gi=$((7 + m)); cap=$((3 + 135 * g + 9 * gi))
			printf '{"gpu_instance_id": %d, "compute_instance_id": 0, "uuid": "MIG-00000000-0000-4000-8000-%06d%06d", "profile": "1g.10gb", "gi_cap_minor": %d, "ci_cap_minor": %d}' $gi $g $m $cap $((cap + 1))
		done
		printf ']}'
	done
	printf ']}\n'
} >"$work/node.json"

# round N CALLS [COMMAND]: CALLS calls released together; one line
# "seconds rc" a call. COMMAND is free (default) or list, the same start-up
# and snapshot reading without claims, for reference.
round() {
	local dir=$work/r$1 calls=$2 what=${3:-free} i
	mkdir "$dir"
	mkfifo "$dir/go"
	sleep 1000 &
	local job=$!
	for ((i = 0; i < calls; i++)); do
		{
			read -r _ <"$dir/go" || true
			local s=$EPOCHREALTIME rc=0
			if [ "$what" = free ]; then
				"$bin" free --from "$work/node.json" --claims "$dir/claims" --pid "$job" >/dev/null 2>&1 || rc=$?
			else
				"$bin" list --from "$work/node.json" >/dev/null 2>&1 || rc=$?
			fi
			echo "$s $EPOCHREALTIME $rc" >"$dir/t$i"
		} &
	done
	sleep 0.2 # let every caller reach the barrier
	: >"$dir/go"
	wait $(jobs -p | grep -vx "$job")
	kill "$job"
	cat "$dir"/t* | awk '{ printf "%.6f %d\n", $2 - $1, $3 }'
}

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) * 1000 }'; }

"$bin" free --from "$work/node.json" --claims "$work/warm" --pid $$ >/dev/null # warm the page cache
for ((r = 0; r < rounds; r++)); do round "s$r" 1; done >"$work/single"
for ((r = 0; r < rounds; r++)); do round "b$r" "$burst"; done >"$work/burst"
for ((r = 0; r < rounds; r++)); do round "ls$r" 1 list; done >"$work/lsingle"
for ((r = 0; r < rounds; r++)); do round "lb$r" "$burst" list; done >"$work/lburst"

single=$(cut -d' ' -f1 "$work/single" | median)
bmed=$(cut -d' ' -f1 "$work/burst" | median)
bmax=$(cut -d' ' -f1 "$work/burst" | sort -n | tail -1)
got=$(awk '$2 == 0' "$work/burst" | wc -l)
refused=$(awk '$2 == 1' "$work/burst" | wc -l)
other=$(awk '$2 != 0 && $2 != 1' "$work/burst" | wc -l)
# ratio A B: A / B, two decimals; awk, since GPU hosts often lack bc.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }
bmax_ms=$(awk -v s="$bmax" 'BEGIN { printf "%.6f", s * 1000 }')
echo "cpus: $(nproc), rounds: $rounds, burst: $burst calls on 28 MIG devices"
printf 'single call:        median %.2f ms\n' "$single"
printf 'in a burst of %d:   median %.2f ms (%sx), slowest %.2f ms (%sx)\n' "$burst" "$bmed" "$(ratio "$bmed" "$single")" "$bmax_ms" "$(ratio "$bmax_ms" "$single")"
echo "burst calls: $got claimed, $refused refused (no idle device), $other failed"
# slowest RC: the slowest burst call that exited RC, in ms (- if none did)
slowest() { awk -v rc="$1" '$2 == rc && $1 > m { m = $1; n = 1 } END { if (n) printf "%.2f", m * 1000; else printf "-" }' "$work/burst"; }
echo "slowest in the bursts: claimed $(slowest 0) ms, refused $(slowest 1) ms"
lsingle=$(cut -d' ' -f1 "$work/lsingle" | median)
lbmed=$(cut -d' ' -f1 "$work/lburst" | median)
printf 'reference, list --from (no claims): single %.2f ms, in a burst of %d %.2f ms (%sx)\n' "$lsingle" "$burst" "$lbmed" "$(ratio "$lbmed" "$lsingle")"

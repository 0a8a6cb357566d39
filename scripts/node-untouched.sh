#!/usr/bin/env bash
# node-untouched.sh COMMAND [ARG...]
#
# Runs COMMAND, as `make test` runs the test suite, and fails when it
# created, changed or removed anything in the places of this machine that
# slurm-mig writes when it runs for real: /run/slurm-mig (the device state
# that the TaskProlog reads, and the claims directory of free and exec),
# /etc/slurm, and the paths $SLURM_MIG_STATE and $SLURM_MIG_CLAIMS name
# when they are set. No test may write there: on a GPU node, a test's
# devices.json fails every job until the next gen.
#
# It only reads those places, before COMMAND and after it: each entry's
# type, mode, owner, size, modification time and inode, and the SHA-256 of
# each regular file it can read. It plants nothing there and restores
# nothing. A devices.json planted for the run would itself be read by the
# TaskProlog of the node's jobs meanwhile, and a guard that replaced files
# could lose the admin's own. A place that does not exist is recorded as
# absent, so that a test that creates it is caught too; a directory's
# modification time catches a file made and removed again.
#
# Exits with COMMAND's status when COMMAND failed, else 1 when something
# changed, else 0; what changed is named on stderr either way, one path a
# line. NODE_UNTOUCHED_PATHS, a list of paths separated by blanks, replaces
# the places watched (the guard's own test, testdata/script/untouched.txtar,
# watches temporary directories).
set -uo pipefail

if [ $# -eq 0 ]; then
  echo "usage: $0 COMMAND [ARG...]" >&2
  exit 2
fi

if [ -n "${NODE_UNTOUCHED_PATHS+set}" ]; then
  read -r -a paths <<<"$NODE_UNTOUCHED_PATHS"
else
  paths=(/run/slurm-mig /etc/slurm)
  [ -n "${SLURM_MIG_STATE:-}" ] && paths+=("$SLURM_MIG_STATE")
  [ -n "${SLURM_MIG_CLAIMS:-}" ] && paths+=("$SLURM_MIG_CLAIMS")
fi

scratch=$(mktemp -d "${TMPDIR:-/tmp}/node-untouched.XXXXXX") || exit 2
trap 'rm -rf "$scratch"' EXIT

# snapshot prints one line per fact about each watched entry, "PATH<TAB>
# fact", sorted: its metadata, and the hash of a regular file. FIFOs and
# the like are never opened (reading a FIFO would wait for a writer).
snapshot() {
  local p
  for p in "${paths[@]}"; do
    if [ ! -e "$p" ] && [ ! -L "$p" ]; then
      continue # absent: anything found there afterwards was created
    fi
    find "$p" -printf '%p\t%y %m %U:%G %s %T@ %i %l\n' 2>/dev/null
    find "$p" -type f -readable -print0 2>/dev/null |
      xargs -0 -r sha256sum 2>/dev/null |
      sed -E 's/^\\?([0-9a-f]{64})  (.*)$/\2\tsha256 \1/'
  done | LC_ALL=C sort
}

snapshot >"$scratch/before"
"$@"
status=$?
snapshot >"$scratch/after"

# Each path's facts before and after, compared: a path with facts only
# after was created, one with facts only before was removed.
awk -F'\t' '
  NR == FNR { before[$1] = before[$1] "|" $2; next }
            { after[$1] = after[$1] "|" $2 }
  END {
    for (p in before) {
      if (!(p in after)) print "removed: " p
      else if (before[p] != after[p]) print "changed: " p
    }
    for (p in after) if (!(p in before)) print "created: " p
  }' "$scratch/before" "$scratch/after" | LC_ALL=C sort -k2 >"$scratch/changes"

if [ -s "$scratch/changes" ]; then
  {
    echo "$(basename "$0"): the command changed this machine's ${paths[*]}; no test may write outside its own temporary directories:"
    sed 's/^/  /' "$scratch/changes"
    echo "(if a job or a config-management hook of this machine changed it meanwhile, run it again)"
  } >&2
  [ "$status" -ne 0 ] || status=1
fi
exit "$status"

#!/bin/sh
# Repartition one Slurm node's MIG GPUs without a drain for a count
# mismatch: the node is drained by the admin (with a reason of ours), never
# by slurmctld for "gres/gpu count reported lower than configured".
#
# The order matters (docs/repartition.md says why, tried on Slurm 20.11,
# 22.05, 24.11 and 26.05): slurmd must never register devices that
# slurmctld's slurm.conf does not declare, and slurmctld must never judge
# devices against counts the node does not have yet. So slurmd is stopped
# while the layout changes, and starts again only once slurmctld has the
# new counts:
#
#   1. plan      the Gres= the new layout will have (slurm-mig plan); a
#                layout the GPUs cannot hold stops here, nothing drained
#   2. drain     scontrol update State=DRAIN, then wait until no job runs
#   3. stop      slurmd on the node, and ask what else holds the GPUs
#                (slurm-mig holders): a process, DCGM, nvidia_drm
#   4. switch    the MIG layout (mig-parted apply)
#   5. gen       gres.conf and the device state (slurm-mig gen -o);
#                configless: the cluster gres.conf (slurm-mig merge -o)
#   6. update    slurm.conf's line for the node (slurm-mig node --update),
#                whose counts must be those of step 1, else stop here
#   7. restart   slurmctld, then scontrol reconfigure for the other nodes
#   8. start     slurmd, which registers the new devices
#   9. resume    once slurmctld has them (a drain for another reason,
#                an admin's, stays; step 2 keeps it too)
#
# One run at a time on a node (LOCK, flock): a second waits for the first.
#
# It runs on the GPU node, as root, with SLURM_CONF the controller's
# slurm.conf (a shared /etc/slurm, or a copy: SLURM_CONF_COPIES). Like
# mig-parted's hooks, it uses absolute paths, each a variable; the
# commands that stop and start daemons and apply the layout are variables
# too, run with sh -c:
#
#   NODE=gpu01 MIG_CONFIG=/etc/nvidia-mig-manager/config.yaml \
#   SELECT=all-balanced repartition.sh
set -eu

: "${NODE:?NODE: the node's Slurm NodeName}"
: "${MIG_CONFIG:?MIG_CONFIG: the mig-parted config file}"
: "${SELECT:?SELECT: the config of MIG_CONFIG to apply}"
# Slurm's commands print times as SLURM_TIME_FORMAT says (relative, or
# any strftime format, set in many a profile); registered() below compares
# the ISO times of the standard format.
export SLURM_TIME_FORMAT=standard
# squeue filters its list by these when set (a profile's SQUEUE_USERS or
# SQUEUE_PARTITION): the wait for the node's jobs must see them all.
unset SQUEUE_ACCOUNT SQUEUE_NAMES SQUEUE_LICENSES SQUEUE_PARTITION SQUEUE_QOS SQUEUE_USERS
SLURM_MIG=${SLURM_MIG:-/usr/local/bin/slurm-mig}
SCONTROL=${SCONTROL:-/usr/bin/scontrol}
SQUEUE=${SQUEUE:-/usr/bin/squeue}
SLURM_CONF=${SLURM_CONF:-/etc/slurm/slurm.conf}
# Where gen writes this node's gres.conf. Configless: the node's fragment,
# which merge joins with the others' (FRAGMENTS) into CLUSTER_GRES_CONF.
GRES_CONF=${GRES_CONF:-/etc/slurm/gres.conf}
FRAGMENTS=${FRAGMENTS:-}
CLUSTER_GRES_CONF=${CLUSTER_GRES_CONF:-}
# Copies of slurm.conf on the nodes (classic), space-separated: each gets
# the updated file before the reconfigure, so that no slurmd reads another
# slurm.conf than slurmctld's.
SLURM_CONF_COPIES=${SLURM_CONF_COPIES:-}
# A shell command; without it, nvidia-mig-parted apply is run directly, its
# arguments never split again.
APPLY=${APPLY:-}
SLURMD_STOP=${SLURMD_STOP:-/bin/systemctl stop slurmd.service}
# Says what holds the GPUs and exits non-zero when anything does.
HOLDERS=${HOLDERS:-$SLURM_MIG holders}
SLURMD_START=${SLURMD_START:-/bin/systemctl start slurmd.service}
# Run on the controller (ssh, ...) where this is not it.
SLURMCTLD_RESTART=${SLURMCTLD_RESTART:-/bin/systemctl restart slurmctld.service}
# Extra flags for every slurm-mig run (--root, --from, --slurm-version, ...).
SLURM_MIG_FLAGS=${SLURM_MIG_FLAGS:-}
# Extra flags for gen (--state FILE, ...).
GEN_FLAGS=${GEN_FLAGS:-}
TIMEOUT=${TIMEOUT:-600}
REASON="slurm-mig repartition to $SELECT"

say() { echo "repartition: $*"; }

# One run at a time on the node. The controller may give up on a run (its
# --change-timeout kills ssh, not what ssh started here) and start the
# rollback: that waits for this run to end, up to TIMEOUT, rather than
# switch the layout under it. flock -o holds the lock itself, so that
# slurmd and the other daemons started below do not inherit it.
LOCK=${LOCK:-/run/lock/slurm-mig-repartition.lock}
if [ "${SLURM_MIG_REPARTITION_LOCK:-}" != "$LOCK" ]; then
  export SLURM_MIG_REPARTITION_LOCK="$LOCK"
  rc=0
  flock -o -w "$TIMEOUT" -E 75 "$LOCK" /bin/sh "$0" "$@" || rc=$?
  if [ "$rc" = 75 ]; then
    say "another run on this node still holds $LOCK after ${TIMEOUT}s: nothing done" >&2
  fi
  exit "$rc"
fi
# A step's own exit 75 is not flock's "held by another run".
trap 'rc=$?; [ "$rc" != 75 ] || exit 1' EXIT

# wait_until SECONDS CMD...: polls CMD every half second.
wait_until() {
  limit=$1
  shift
  start=$(date +%s)
  until "$@"; do
    if [ $(($(date +%s) - start)) -ge "$limit" ]; then
      say "gave up after ${limit}s waiting for: $*" >&2
      return 1
    fi
    sleep 0.5
  done
}

# In UTC: registered compares its SlurmdStartTime= with since, and a local
# time repeats an hour when the clocks go back.
node_line() { TZ=UTC0 "$SCONTROL" show node -o "$NODE"; }
field() { # field LINE KEY: KEY= of a line of scontrol show -o
  printf '%s\n' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"
}
# drained_by_others LINE: the node is drained for a reason not this
# script's (an admin's, slurmctld's, the controller's "... failed"): that
# drain is theirs. Slurm ends a reason with " [user@time]".
drained_by_others() {
  case $(field "$1" State) in *DRAIN*) ;; *) return 1 ;; esac
  case $1 in *" Reason=$REASON ["* | *" Reason=$REASON") return 1 ;; esac
}
# No job runs on the node: squeue answered, and listed none. A squeue
# that failed (slurmctld not answering) printed nothing and proves
# nothing, so the wait goes on.
no_jobs() {
  jobs_on_node=$("$SQUEUE" -h -w "$NODE" -t RUNNING,COMPLETING,SUSPENDED,CONFIGURING -o %i) || return 1
  [ -z "$jobs_on_node" ] || return 1
  # A job's flags (CONFIGURING while a prolog runs) match no base state of
  # -t: slurmctld must also show nothing allocated (DOWN is fine: a rerun
  # after a failure finds slurmd stopped).
  l=$(node_line) || return 1
  case $(field "$l" State) in "" | ALLOC* | MIXED* | *COMPLETING*) return 1 ;; esac
}
# slurmctld answers: 20.11's scontrol ping exits 0 with it DOWN.
ctld_up() { "$SCONTROL" ping 2>/dev/null | grep -q ' is UP'; }
# counts GRES: a Gres= list's gpu items (slurm.conf's may hold nic, shard,
# ...) in one order, without scontrol's socket affinity "(S:0-1)": plan
# lists the types as the config does, node as NVML lists the devices.
counts() { printf '%s\n' "$1" | sed 's/([^)]*)//g' | tr ',' '\n' | grep -E '^gpu(:|$)' | sort | paste -sd, -; }
# The slurmd started at $since or later has registered. A start time
# that merely differs proves nothing: slurmctld's restart and reconfigure
# change what it shows (None, or the time saved in its state) before any
# slurmd registers. Both times are this node's clock, in UTC.
registered() {
  t=$(field "$(node_line)" SlurmdStartTime)
  case $t in [0-9]*) [ "$(LC_ALL=C expr "$t" \>= "$since")" = 1 ] ;; *) return 1 ;; esac
}

# 1. plan: the line the node will have, from its layout now.
# shellcheck disable=SC2086
planned=$("$SLURM_MIG" plan $SLURM_MIG_FLAGS --mig-config "$MIG_CONFIG" --select "$SELECT" --node-name "$NODE")
say "planned: $planned"
want_gres=$(counts "${planned#*Gres=}")

# 2. drain, and wait for the node's jobs. A node drained already for
# another reason keeps that drain, and is left drained at the end.
# A failed read stops here (set -e): an empty line reads as not drained.
line=$(node_line)
if drained_by_others "$line"; then
  say "drained already for another reason: that drain is kept"
else
  "$SCONTROL" update NodeName="$NODE" State=DRAIN Reason="$REASON"
fi
wait_until "$TIMEOUT" no_jobs
say "drained, no jobs"

# 3-4. stop slurmd; switch the layout. From here a failure (set -e)
# leaves the node drained and slurmd stopped, which is safe: slurmctld
# keeps the old counts and nothing registers against them.
sh -c "$SLURMD_STOP"
# Anything that holds a GPU once slurmd stopped and no job is left is a
# daemon or a job's stuck process (whose "Kill task failed" slurmctld
# drops under this drain): mig-parted cannot change the GPU, and the node
# is not put back in service, even when its counts need no change.
if ! held=$(sh -c "$HOLDERS"); then
  say "the GPUs are held, so mig-parted would fail: left drained, slurmd stopped:" >&2
  printf '%s\n' "$held" >&2
  exit 1
fi
if [ -n "$APPLY" ]; then
  sh -c "$APPLY"
else
  /usr/bin/nvidia-mig-parted apply -f "$MIG_CONFIG" -c "$SELECT"
fi

# 5. gen: the node's gres.conf (and device state); configless: merged.
# shellcheck disable=SC2086
"$SLURM_MIG" gen $SLURM_MIG_FLAGS --node-name "$NODE" -o "$GRES_CONF" $GEN_FLAGS
if [ -n "$CLUSTER_GRES_CONF" ]; then
  "$SLURM_MIG" merge -o "$CLUSTER_GRES_CONF" "$FRAGMENTS"
fi

# 6. slurm.conf: the node's line, which must be what plan said. If the
# layout is not what plan said, stop here with the node drained and
# slurmd stopped: starting it would register other counts.
# shellcheck disable=SC2086
now=$("$SLURM_MIG" node $SLURM_MIG_FLAGS --node-name "$NODE")
if [ "$(counts "${now#*Gres=}")" != "$want_gres" ]; then
  say "the node now has $now, not the planned $planned: left drained, slurmd stopped" >&2
  exit 1
fi
# gen -o has written the device state; this would write it again.
# shellcheck disable=SC2086
"$SLURM_MIG" node $SLURM_MIG_FLAGS --node-name "$NODE" --update "$SLURM_CONF" --no-state
for copy in $SLURM_CONF_COPIES; do
  if ! { cp "$SLURM_CONF" "$copy.new" && mv "$copy.new" "$copy"; }; then
    say "could not write $copy: left drained, slurmd stopped" >&2
    exit 1
  fi
done

# 7. slurmctld takes the new counts. A reconfigure alone is not enough
# before Slurm 23.11: slurmctld keeps the old count ("Attempt to change
# gres/gpu Count on node ... invalid with File configuration") and
# refuses the node's registration (22.05 marks it INVAL; 20.11 only logs
# it, so nothing below could see it). So slurmctld restarts, and then a reconfigure
# makes every other slurmd read the new slurm.conf (configless: fetch
# it), whose hash slurmctld checks at their registrations.
sh -c "$SLURMCTLD_RESTART"
wait_until "$TIMEOUT" ctld_up
"$SCONTROL" reconfigure
# 8. slurmd registers the new devices.
since=$(TZ=UTC0 date +%Y-%m-%dT%H:%M:%S)
sh -c "$SLURMD_START"
wait_until "$TIMEOUT" registered
# slurmctld judged the registration: INVAL when the node offers fewer
# devices than its counts; its Gres= may still show slurm.conf's counts.
line=$(node_line)
case $(field "$line" State) in
*INVAL*)
  say "$NODE registered INVAL ($(printf '%s\n' "$line" | sed 's/.* Reason=/Reason=/')): left drained" >&2
  exit 1
  ;;
esac
if [ "$(counts "$(field "$line" Gres)")" != "$want_gres" ]; then
  say "$NODE has Gres=$(field "$line" Gres), not the planned $want_gres: left drained" >&2
  exit 1
fi

# 9. resume, unless the node is drained for another reason, from before
# this ran or since (an admin's "bad fan", slurmctld's "Kill task
# failed", the controller's failed change): that drain is theirs.
line=$(node_line)
if drained_by_others "$line"; then
  say "$NODE has Gres=$want_gres, left drained: drained for another reason (Reason=${line#* Reason=})"
  exit 0
fi
"$SCONTROL" update NodeName="$NODE" State=RESUME
say "$NODE resumed with Gres=$want_gres"

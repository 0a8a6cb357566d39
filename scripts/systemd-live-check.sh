#!/usr/bin/env bash
# systemd-live-check.sh SLURM_MIG
#
# Runs slurm-mig-rebalance.service and .timer under a live systemd:
# Debian 12's systemd 252 as PID 1 of its own PID and mount namespaces,
# in a copy of a Debian 12 chroot, with SLURM_MIG (a built binary) as
# /usr/local/bin/slurm-mig. Slurm is stubbed: squeue shows one pending
# 1g.10gb job until gpu01 offers 1g.10gb, scontrol keeps gpu01's state
# in files, and the change command writes the new Gres= and a new
# SlurmdStartTime. It checks what a unit file cannot show by itself:
#   1. the timer starts the service, and the change is applied: drained,
#      changed, resumed;
#   2. systemctl stop in the middle of the change kills the change
#      command with the run (the unit's control group), the journal
#      keeps the step, and the next run finishes the change;
#   3. while a run goes on, a second start joins it and a run by hand
#      on the same journal is refused (exit 2);
#   4. a run that exits 1 (a change that failed) leaves the timer armed;
#   5. slurm-mig-gres.service, enabled as shipped, on a node whose gen
#      fails (no NVIDIA driver here): slurmd (a stand-in unit) still
#      starts, after it, with the previous gres.conf byte for byte.
# Needs root, debootstrap and the Debian mirror apt uses (the chroot is
# cached by scripts/debian-chroot.sh). Not part of make test: CI's
# machine may not let systemd run as PID 1 of a namespace. Prints one
# line per check, and exits 1 at the first that fails.
set -euo pipefail

if [ $# -ne 1 ] || [ ! -x "$1" ]; then
  echo "usage: $0 SLURM_MIG (a built slurm-mig binary)" >&2
  exit 2
fi
bin=$(readlink -f "$1")
repo=$(cd "$(dirname "$0")/.." && pwd)
cache=/var/cache/slurm-mig/chroots/bookworm-systemd
"$repo/scripts/debian-chroot.sh" bookworm "$cache" systemd systemd-sysv dbus

work=$(mktemp -d /var/tmp/slurm-mig-live.XXXXXX)
root=$work/root
pid1= ns=
cleanup() {
  [ -n "$pid1" ] && kill -KILL "$pid1" 2>/dev/null || true
  [ -n "$ns" ] && { pkill -KILL -P "$ns" 2>/dev/null; kill -KILL "$ns" 2>/dev/null; } || true
  sleep 1
  # The mounts were made in the namespace, which died with PID 1; should
  # one show here, the copy stays rather than rm follow it into /dev.
  if grep -q " $work/" /proc/mounts; then
    echo "$0: mounts left under $work; not removing it" >&2
    return
  fi
  rm -rf "$work"
}
trap cleanup EXIT
cp -a "$cache" "$root"

# The machine: the binary, the units as shipped, a snapshot and configs.
install -m 0755 "$bin" "$root/usr/local/bin/slurm-mig"
cp "$repo/scripts/systemd/slurm-mig-rebalance.service" "$repo/scripts/systemd/slurm-mig-rebalance.timer" \
  "$repo/scripts/systemd/slurm-mig-gres.service" "$root/etc/systemd/system/"
mkdir -p "$root/etc/systemd/system/timers.target.wants" "$root/etc/systemd/system/slurm-mig-rebalance.timer.d" \
  "$root/etc/slurm"
ln -s /etc/systemd/system/slurm-mig-rebalance.timer "$root/etc/systemd/system/timers.target.wants/"
# A stand-in slurmd that records when it started (slurm-mig-gres.service
# is enabled below, as its [Install] says); gres.conf as a site had it.
printf '[Unit]\nDescription=slurmd stand-in\n[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStart=/bin/sh -c "date +%%%%s.%%%%N >/var/lib/stub/slurmd-started"\n' \
  >"$root/etc/systemd/system/slurmd.service"
printf '# the site'"'"'s gres.conf, kept when gen fails\nName=gpu Type=h100 File=/dev/nvidia0\n' >"$root/etc/slurm/gres.conf"
cp "$root/etc/slurm/gres.conf" "$work/gres.conf.before"
# The check's own pace: an empty OnBootSec= resets every value of the
# timer, so the drop-in sets both again, in seconds.
printf '[Timer]\nOnBootSec=\nOnBootSec=5s\nOnUnitInactiveSec=20s\nAccuracySec=1s\n' \
  >"$root/etc/systemd/system/slurm-mig-rebalance.timer.d/check.conf"
mkdir -p "$root/etc/slurm-mig" "$root/var/lib/stub"
cp "$repo/testdata/real/h100-snapshot-v2/snapshot.json" "$root/etc/slurm-mig/h100.json"
cp "$repo/internal/tools/simulator/testdata/h100-configs.yaml" "$root/etc/slurm-mig/config.yaml"
cat >"$root/etc/default/slurm-mig-rebalance" <<'EOF'
MIG_CONFIG=/etc/slurm-mig/config.yaml
CHANGE_COMMAND=/usr/local/sbin/stub-change
REBALANCE_FLAGS=--hardware gpu01=/etc/slurm-mig/h100.json
SLURM_TIME_FORMAT=relative
EOF
cat >"$root/usr/bin/squeue" <<'EOF'
#!/bin/sh
echo "squeue SLURM_TIME_FORMAT=$SLURM_TIME_FORMAT $*" >>/var/lib/stub/calls
grep -q 1g.10gb /var/lib/stub/gres || echo '2001 2026-11-24T09:00:00 1 gres:gpu:h100_1g.10gb:1 Resources'
EOF
cat >"$root/usr/bin/scontrol" <<'EOF'
#!/bin/sh
d=/var/lib/stub
echo "scontrol $*" >>$d/calls
case "$*" in
*"show node"*)
  gres=$(cat $d/gres); used=$(echo "$gres" | sed 's/:[0-9]*$/:0(IDX:N\/A)/')
  reason=$(cat $d/reason); r=""; [ -n "$reason" ] && r=" Reason=$reason [root@2026-11-29T08:00:00]"
  echo "NodeName=gpu01 Arch=x86_64 CoresPerSocket=1 CPUAlloc=0 CPUTot=8 State=$(cat $d/state) Gres=$gres GresUsed=$used SlurmdStartTime=$(cat $d/slurmd_start) Partitions=gpu$r" ;;
*"State=DRAIN"*)
  echo IDLE+DRAIN >$d/state
  for a in "$@"; do case "$a" in Reason=*) echo "${a#Reason=}" >$d/reason ;; esac; done ;;
*"State=RESUME"*)
  echo IDLE >$d/state; : >$d/reason ;;
*) echo "stub scontrol: $*" >&2; exit 1 ;;
esac
EOF
mkdir -p "$root/usr/local/sbin"
cat >"$root/usr/local/sbin/stub-change" <<'EOF'
#!/bin/sh
d=/var/lib/stub
echo "change NODE=$NODE SELECT=$SELECT" >>$d/calls
sleep 1 # slurmd's start time is to the second
[ -f $d/hang ] && sleep 600
[ -f $d/fail ] && exit 1
case "$SELECT" in
all-1g.10gb) echo gpu:h100_1g.10gb:7 >$d/gres ;;
all-disabled) echo gpu:h100:1 >$d/gres ;;
*) exit 1 ;;
esac
date +%FT%T >$d/slurmd_start
EOF
chmod 0755 "$root/usr/bin/squeue" "$root/usr/bin/scontrol" "$root/usr/local/sbin/stub-change"
reset_node() {
  echo IDLE >"$root/var/lib/stub/state"
  echo gpu:h100:1 >"$root/var/lib/stub/gres"
  : >"$root/var/lib/stub/reason"
  date -d '-1 hour' +%FT%T >"$root/var/lib/stub/slurmd_start"
  rm -f "$root/var/lib/stub/hang" "$root/var/lib/stub/fail" "$root"/var/lib/slurm-mig/rebalance/gpu01.*
}
reset_node

# systemd as PID 1: its own PID, mount, UTS and IPC namespaces, /proc,
# /sys, /dev and /run of its own; killing it ends them all.
setsid unshare --pid --fork --mount --uts --ipc sh -c "
  mount --make-rprivate /
  mount -t proc proc '$root/proc'
  mount --rbind /sys '$root/sys'
  mount --rbind /dev '$root/dev'
  mount -t tmpfs tmpfs '$root/run'
  hostname slurm-mig-live
  exec chroot '$root' env container=other /lib/systemd/systemd --system --log-target=console
" >"$work/boot.log" 2>&1 </dev/null &
ns=$!
disown "$ns" # its end, a kill, is cleanup's: no "Killed" from the shell
# PID 1 of the namespace is unshare's child once it is systemd: found by
# its parent, never by name, which the host's own systemd may share.
for _ in $(seq 50); do
  child=$(pgrep -P "$ns" || true)
  if [ -n "$child" ] && [ "$(cat "/proc/$child/comm" 2>/dev/null)" = systemd ]; then
    pid1=$child
    break
  fi
  sleep 0.2
done
[ -n "$pid1" ] || { echo "$0: systemd did not start as PID 1 of the namespace:" >&2; cat "$work/boot.log" >&2; exit 1; }
inside() { nsenter -t "$pid1" -a -r -w "$@"; }
fail() {
  echo "FAIL: $*" >&2
  inside journalctl -u slurm-mig-rebalance.service --no-pager -n 30 >&2 || true
  exit 1
}
# wait_for SECONDS WHAT CMD...: polls CMD until it succeeds.
wait_for() {
  local s=$1 what=$2
  shift 2
  for _ in $(seq $((s * 5))); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  fail "no $what in ${s}s"
}
state_is() { [ "$(cat "$root/var/lib/stub/state")" = "$1" ] && [ "$(cat "$root/var/lib/stub/gres")" = "$2" ]; }
logged() { inside journalctl -u slurm-mig-rebalance.service --no-pager | grep -q -- "$1"; }
step_is() { grep -q "\"step\": \"$1\"" "$root/var/lib/slurm-mig/rebalance/gpu01.json"; }

wait_for 60 "systemd running" sh -c "nsenter -t $pid1 -a -r -w systemctl is-system-running | grep -qx -e running -e degraded"
echo "systemd $(inside systemctl --version | sed -n '1s/^systemd \([0-9]*\).*/\1/p') is PID 1"

# 1. The timer starts the service and the change is applied.
wait_for 60 "change applied by the timer's run" state_is IDLE gpu:h100_1g.10gb:7
wait_for 10 "resume in the journal" logged "gpu01 resume: resumed: done"
grep -q "squeue SLURM_TIME_FORMAT=standard" "$root/var/lib/stub/calls" || fail "squeue ran without SLURM_TIME_FORMAT=standard"
[ "$(stat -c %a "$root/var/lib/slurm-mig/rebalance")" = 700 ] || fail "the journal directory is not 0700"
echo "ok 1: the timer ran the service: gpu01 drained, changed to all-1g.10gb, resumed"

# 2. Stopped in the middle of the change; the next run finishes it.
inside systemctl stop slurm-mig-rebalance.timer
reset_node
touch "$root/var/lib/stub/hang"
inside systemctl start --no-block slurm-mig-rebalance.service
wait_for 30 "change command running" pgrep --ns "$pid1" --nslist pid -f "sleep 600"
inside systemctl stop slurm-mig-rebalance.service
! pgrep --ns "$pid1" --nslist pid -f "stub-change|sleep 600" >/dev/null || fail "the change command outlived systemctl stop"
step_is apply || fail "the journal does not keep the apply step"
[ "$(cat "$root/var/lib/stub/state")" = IDLE+DRAIN ] || fail "gpu01 is not left drained mid-change"
rm "$root/var/lib/stub/hang"
inside systemctl start slurm-mig-rebalance.service || fail "the run after the stop"
state_is IDLE gpu:h100_1g.10gb:7 || fail "the run after the stop did not finish the change"
echo "ok 2: systemctl stop killed the change command with the run; the next run finished the change and resumed gpu01"

# 3. One run at a time.
reset_node
touch "$root/var/lib/stub/hang"
inside systemctl start --no-block slurm-mig-rebalance.service
wait_for 30 "change command running" pgrep --ns "$pid1" --nslist pid -f "sleep 600"
inside systemctl start --no-block slurm-mig-rebalance.service
[ "$(pgrep --ns "$pid1" --nslist pid -fc '^/usr/local/bin/slurm-mig rebalance')" = 1 ] || fail "a second run started beside the first"
set +e
inside sh -c 'cd /tmp && squeue --noheader --array --states=PD --format="%i %V %D %b %r" >q.txt && scontrol --details --oneliner show node >n.txt &&
  exec /usr/local/bin/slurm-mig rebalance --apply --queue q.txt --nodes n.txt --mig-config /etc/slurm-mig/config.yaml \
    --journal /var/lib/slurm-mig/rebalance --change-command /usr/local/sbin/stub-change --hardware gpu01=/etc/slurm-mig/h100.json' >"$work/manual.out" 2>&1
rc=$?
set -e
[ $rc = 2 ] && grep -q "holds its lock" "$work/manual.out" || fail "a run by hand beside the service: exit $rc, $(cat "$work/manual.out")"
rm "$root/var/lib/stub/hang"
inside systemctl stop slurm-mig-rebalance.service
inside systemctl start slurm-mig-rebalance.service || fail "the run after the third check"
echo "ok 3: a second start joined the running one; a run by hand was refused: $(tail -n1 "$work/manual.out")"

# 4. A failed change: exit 1, the unit failed, the timer armed.
reset_node
touch "$root/var/lib/stub/fail"
inside systemctl start slurm-mig-rebalance.timer
wait_for 60 "the failed run" sh -c "nsenter -t $pid1 -a -r -w systemctl is-failed slurm-mig-rebalance.service"
next=$(inside systemctl show slurm-mig-rebalance.timer -p NextElapseUSecMonotonic --value)
[ -n "$next" ] && [ "$next" != infinity ] || fail "the timer is not armed after a failed run (next: $next)"
logged "failed 1" || fail "no failed change in the journal"
echo "ok 4: a failed change made the run exit 1 and the unit failed; the timer stays armed (NextElapseUSecMonotonic=$next)"

# 5. gen fails (no driver): slurmd starts anyway, gres.conf untouched.
inside systemctl enable --quiet slurm-mig-gres.service || fail "systemctl enable slurm-mig-gres.service"
inside systemctl start slurmd.service || fail "slurmd did not start when slurm-mig-gres failed"
inside systemctl is-failed --quiet slurm-mig-gres.service || fail "slurm-mig-gres.service did not fail without a driver"
cmp -s "$work/gres.conf.before" "$root/etc/slurm/gres.conf" || fail "gres.conf changed when gen failed"
gres_done=$(inside systemctl show slurm-mig-gres.service -p ExecMainExitTimestampMonotonic --value)
slurmd_start=$(inside systemctl show slurmd.service -p ExecMainStartTimestampMonotonic --value)
[ "$gres_done" -gt 0 ] && [ "$slurmd_start" -ge "$gres_done" ] || fail "slurmd started ($slurmd_start) before slurm-mig-gres ended ($gres_done)"
why=$(inside journalctl -u slurm-mig-gres.service --no-pager -o cat | grep '^slurm-mig: ' | tail -n1)
[ -n "$why" ] || fail "no slurm-mig error line in slurm-mig-gres.service's journal"
echo "ok 5: slurm-mig-gres.service failed ($why); slurmd started after it, gres.conf unchanged"

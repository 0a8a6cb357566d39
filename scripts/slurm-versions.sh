#!/usr/bin/env bash
# slurm-versions.sh [TARGET...]
#
# Runs the real-Slurm test suite against several Slurm releases and prints,
# per release, one line: "slurm X.Y.Z: N passed, M failed". Exits non-zero
# when any test fails (a skipped test counts as failed: every test must run
# against every release). Needs root.
#
# TARGETs (default: all four):
#   host      the Slurm installed on this machine (Debian 12: 22.05)
#   bullseye  Debian 11's Slurm (20.11), in a chroot
#   trixie    Debian 13's Slurm (24.11), in a chroot
#   sid       Debian unstable's Slurm (26.05), in a chroot
#
# The same tests run for every release: the test binaries, slurm-mig and Go
# run on this machine, and only Slurm's commands run in the release's
# chroot, through a wrapper per command (slurmd, scontrol, srun, ...) put
# first on PATH. The chroot sees this machine's /proc, /sys and the run's
# scratch directory at the same path, so files the tests make (configs,
# device nodes, logs) have one name inside and out. What each release needs
# in slurm.conf is the tests' business (internal/slurmtest/release_test.go).
#
# Chroots are made by scripts/debian-chroot.sh and kept in
# $SLURM_CHROOTS (default /var/cache/slurm-mig/chroots/<suite>); one that is
# missing or half made is made again.
#
# SLURM_SUITE lists what runs, as PACKAGE or PACKAGE:RUN-REGEXP words
# (see the Makefile's test-slurm-versions).
set -euo pipefail
cd "$(dirname "$0")/.."

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(bullseye host trixie sid)
chroots=${SLURM_CHROOTS:-/var/cache/slurm-mig/chroots}
suite_words=${SLURM_SUITE:-./internal/slurmtest}
GO=${GO:-go}
# Each target's go test -json output and its failed tests' output.
out=${SLURM_VERSIONS_OUT:-bin/slurm-versions}
mkdir -p "$out"
out=$(cd "$out" && pwd)

if [ "$(id -u)" != 0 ]; then
  echo "$0: needs root (chroot, mount, slurmd as SlurmUser=root)" >&2
  exit 2
fi

# The Slurm commands a test may run; each found in a chroot gets a wrapper.
commands=(slurmd slurmctld slurmstepd scontrol srun sinfo squeue sbatch salloc
  scancel sacct sacctmgr sattach sbcast sdiag sprio sshare sstat strigger munged slurmdbd)

scratch=$(mktemp -d /tmp/slurm-versions.XXXXXX)
mounted=()
cleanup() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    umount -R "${mounted[i]}" 2>/dev/null || umount -l "${mounted[i]}" 2>/dev/null || true
  done
  mounted=()
  rm -rf "$scratch"
}
trap cleanup EXIT
trap 'exit 130' INT TERM # run the cleanup: no mount left behind

# mount_in ROOT WHAT [OPTIONS...]: mounts WHAT at the same path inside ROOT,
# as a slave, so that nothing done below it reaches this machine's mounts.
mount_in() {
  local root=$1 what=$2
  shift 2
  mkdir -p "$root$what"
  mount "$@" "$what" "$root$what"
  mount --make-rslave "$root$what"
  mounted+=("$root$what")
}

# testsummary reads go test -json and prints the counts.
summary_bin="$scratch/testsummary"
$GO build -o "$summary_bin" ./internal/testkit/testsummary

# run_suite LABEL: runs every SLURM_SUITE word with the PATH set up, and
# prints LABEL's line.
run_suite() {
  local label=$1 version word pkg run json="$out/$1.json"
  version=$(slurmd -V 2>&1) || { echo "slurmd -V failed for $label: $version" >&2; return 1; }
  version=${version##* }
  : >"$json"
  for word in $suite_words; do
    pkg=${word%%:*} run=
    [ "$pkg" = "$word" ] || run=${word#*:}
    # A failing test is counted below, not here.
    CI=true TMPDIR="$scratch/tmp" $GO test -count=1 -json -timeout 30m ${run:+-run "$run"} "$pkg" >>"$json" 2>&1 || true
  done
  rm -f "$out/$label.failures"
  if ! "$summary_bin" -label "slurm $version" -failures "$out/$label.failures" <"$json"; then
    # CI keeps only the tail of what a run prints: the failures' first
    # lines go there too, bounded, so a failure on another machine can
    # be read.
    if [ -s "$out/$label.failures" ]; then
      echo "slurm $version: the first 120 lines of the failed tests' output:"
      head -n 120 "$out/$label.failures" | cut -c1-400
    fi
    return 1
  fi
}

status=0
for target in "${targets[@]}"; do
  mkdir -p "$scratch/tmp"
  start=$SECONDS
  if [ "$target" = host ]; then
    if ! command -v slurmd >/dev/null; then
      echo "slurm host: slurmd is not installed (apt-get install slurmd slurmctld slurm-client)" >&2
      status=1
      continue
    fi
    run_suite host || status=1
  else
    root="$chroots/$target"
    # slurmdbd: slurmctld accounts gres TRES only with a slurmdbd of its
    # own release (TestAccountingBillsByShare; MariaDB is this host's).
    scripts/debian-chroot.sh "$target" "$root" slurmd slurmctld slurm-client slurmdbd
    echo "chroot $target ready in $((SECONDS - start)) s" >&2
    cp /etc/hosts "$root/etc/hosts" # the daemons resolve this host's name
    mkdir -p "$root/run/munge"
    mount_in "$root" /proc -t proc
    mount_in "$root" /sys --rbind
    mount_in "$root" "$scratch" --bind
    bin="$scratch/bin-$target"
    mkdir -p "$bin"
    for c in "${commands[@]}"; do
      path=$(chroot "$root" sh -c "PATH=/usr/sbin:/usr/bin:/sbin:/bin command -v $c" || true)
      [ -n "$path" ] || continue
      # The command runs in the caller's directory, with the caller's
      # environment (SLURM_CONF) and the chroot's own PATH, and sees the
      # caller's /run/munge (a test may bind its own munged's socket
      # there, in a mount namespace of its own): in a mount namespace of
      # the command's own, so nothing reaches this machine's mounts.
      cat >"$bin/$c" <<EOF
#!/bin/sh
exec unshare --mount --propagation slave /bin/sh -c 'mount --bind /run/munge "\$0/run/munge" 2>/dev/null; exec chroot "\$0" /usr/bin/env PATH=/usr/sbin:/usr/bin:/sbin:/bin /bin/sh -c "cd \\"\\\$0\\" 2>/dev/null || cd /; exec \\"\\\$@\\"" "\$@"' '$root' "\$PWD" '$path' "\$@"
EOF
      chmod +x "$bin/$c"
    done
    # slurm-mig, built here, runs inside the chroot only as the TaskProlog;
    # it needs this machine's glibc (bullseye's is older): this loader and
    # libc, where the chroot sees them.
    hostlib="$scratch/hostlib"
    mkdir -p "$hostlib"
    cp -L /lib64/ld-linux-x86-64.so.2 "$(ldconfig -p | awk '$1 == "libc.so.6" && /x86-64/ {print $NF; exit}')" "$hostlib/"
    SLURMTEST_HOST_LOADER="$hostlib/ld-linux-x86-64.so.2 --library-path $hostlib" \
      PATH="$bin:$PATH" run_suite "$target" || status=1
    cleanup_mounts=("${mounted[@]}")
    for ((i = ${#cleanup_mounts[@]} - 1; i >= 0; i--)); do
      umount -R "${cleanup_mounts[i]}" || umount -l "${cleanup_mounts[i]}"
    done
    mounted=()
    rmdir "$root$scratch" 2>/dev/null || true
  fi
  rm -rf "$scratch/tmp"
  echo "$target: suite ran in $((SECONDS - start)) s" >&2
done
exit $status

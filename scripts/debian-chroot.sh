#!/usr/bin/env bash
# debian-chroot.sh SUITE DIR [PACKAGE...]
#
# Makes DIR a minimal Debian SUITE (bullseye, bookworm, trixie, sid) with
# PACKAGEs installed, from the Debian mirror this machine's apt already
# uses. Used by the tests that need another Slurm (make test-slurm-versions)
# and by the portable build (make dist). Needs root (debootstrap, chroot).
#
# A finished chroot is cached: DIR/.slurm-mig-chroot records the suite and
# the packages, and a run that finds the same record does nothing. A chroot
# left half-made (no record) is made again from scratch. Mounts are the
# caller's business: this script leaves none behind.
set -euo pipefail

if [ $# -lt 2 ]; then
  echo "usage: $0 SUITE DIR [PACKAGE...]" >&2
  exit 2
fi
suite=$1 dir=$2
shift 2
pkgs=$(printf '%s\n' "$@" | sort -u | tr '\n' ' ')
stamp="$dir/.slurm-mig-chroot"
want="suite=$suite packages=$pkgs"

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi

# The Debian mirror apt already uses here (deb822 or one-line sources):
# the chroot comes from where this machine's packages come from, and this
# script names no mirror of its own.
mirror=$(grep -hoE '^(URIs:|deb) +https?://[^ ]+/debian/?( |$)' \
  /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null |
  head -n1 | awk '{print $2}' || true)
if [ -z "$mirror" ]; then
  echo "$0: no Debian mirror in /etc/apt/sources.list or /etc/apt/sources.list.d/*.sources (a URIs: or deb line ending in /debian); add one, as apt-get uses, and run again" >&2
  exit 2
fi

for tool in debootstrap chroot; do
  command -v "$tool" >/dev/null || { echo "$0: $tool is missing (apt-get install debootstrap)" >&2; exit 2; }
done

umount_all() { # anything a caller left mounted below DIR
  local m
  for m in $(awk -v d="$dir/" 'index($2, d) == 1 {print $2}' /proc/mounts | sort -r); do
    umount -l "$m" || true
  done
}

if [ ! -f "$stamp" ] || ! grep -q "^suite=$suite " "$stamp"; then
  umount_all
  rm -rf "$dir"
  mkdir -p "$dir"
  echo "debian-chroot: debootstrap $suite into $dir from $mirror" >&2
  debootstrap --variant=minbase "$suite" "$dir" "$mirror" >"$dir.debootstrap.log" 2>&1 || {
    tail -n 20 "$dir.debootstrap.log" >&2
    echo "$0: debootstrap $suite failed (log: $dir.debootstrap.log)" >&2
    exit 1
  }
fi
rm -f "$stamp"

# sid's Release file can be past its Valid-Until on a mirror snapshot.
apt_opts=(-o Acquire::Check-Valid-Until=false -o APT::Install-Recommends=false -o Dpkg::Use-Pty=0)
cp /etc/hosts "$dir/etc/hosts"
cp /etc/resolv.conf "$dir/etc/resolv.conf" 2>/dev/null || true
if [ $# -gt 0 ]; then
  # shellcheck disable=SC2086 # pkgs is a word list
  chroot "$dir" env DEBIAN_FRONTEND=noninteractive sh -c \
    "apt-get ${apt_opts[*]} update -qq && apt-get ${apt_opts[*]} install -y -qq $pkgs" \
    >"$dir.apt.log" 2>&1 || {
    tail -n 20 "$dir.apt.log" >&2
    echo "$0: installing $pkgs in the $suite chroot failed (log: $dir.apt.log)" >&2
    exit 1
  }
fi
echo "$want" >"$stamp"

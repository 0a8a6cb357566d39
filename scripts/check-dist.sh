#!/usr/bin/env bash
# check-dist.sh (make dist-check): tries the packages make dist wrote, as
# an admin would use them. Needs root, debootstrap, rpm, qemu-user-static
# and libc6-arm64-cross.
#
#  1. Both .debs and .rpms: the right architecture, the expected files, no
#     maintainer scripts (installing enables and starts nothing); rpm -i
#     and rpm -e of the x86_64 rpm in an empty root leave nothing of ours.
#  2. The arm64 binary, from its .deb, under qemu-user: --version and gen
#     on the demo node, byte for byte what the amd64 binary prints; with
#     this machine's arm64 glibc and, where make dist's build chroot is
#     there, bullseye's (2.31).
#  3. The amd64 .deb in a clean Debian 11 (glibc 2.31) chroot: apt install,
#     slurm-mig --version and gen on the demo node, dpkg --purge, and no
#     file left behind or changed outside what dpkg and apt log.
#
# INSTALL_CHROOT (default /var/cache/slurm-mig/bullseye-install) is a
# minimal bullseye, kept between runs; the check leaves it as it found it.
set -euo pipefail
cd "$(dirname "$0")/.."

INSTALL_CHROOT=${INSTALL_CHROOT:-/var/cache/slurm-mig/bullseye-install}
CHROOT=${CHROOT:-/var/cache/slurm-mig/bullseye-build} # make dist's, if there
[ "$(id -u)" = 0 ] || { echo "dist-check: needs root (debootstrap, chroot, mount)" >&2; exit 2; }
# One run at a time per chroot: another's mounts and unmounts would clash.
mkdir -p "$(dirname "$INSTALL_CHROOT")"
exec 9>"$INSTALL_CHROOT.lock"
flock 9
t0=$SECONDS
step() { echo "dist-check: [$((SECONDS - t0))s] $*"; }
fail() { echo "dist-check: $*" >&2; exit 1; }
one() { # the one file matching a glob
  local f=("$@")
  [ ${#f[@]} -eq 1 ] && [ -f "${f[0]}" ] || fail "want exactly one of $*"
  echo "${f[0]}"
}
deb_amd64=$(one dist/slurm-mig_*_amd64.deb)
deb_arm64=$(one dist/slurm-mig_*_arm64.deb)
rpm_x86_64=$(one dist/slurm-mig-*.x86_64.rpm)
rpm_aarch64=$(one dist/slurm-mig-*.aarch64.rpm)
tmp=$(mktemp -d)
mounted=""
cleanup() {
  [ -z "$mounted" ] || umount "$INSTALL_CHROOT/proc" || umount -l "$INSTALL_CHROOT/proc"
  rm -rf "$tmp" "$INSTALL_CHROOT/tmp/slurm-mig-check"
}
trap cleanup EXIT

# 1. Contents and metadata.
step "package contents and metadata"
want_files="/usr/bin/slurm-mig /usr/share/man/man1/slurm-mig.1.gz
/usr/share/bash-completion/completions/slurm-mig /usr/share/fish/vendor_completions.d/slurm-mig.fish
/usr/share/doc/slurm-mig/copyright /usr/share/doc/slurm-mig/README.md
/usr/share/doc/slurm-mig/examples/systemd/slurm-mig-gres.service
/usr/share/doc/slurm-mig/examples/systemd/slurm-mig-rebalance.service
/usr/share/doc/slurm-mig/examples/systemd/slurm-mig-rebalance.timer
/usr/share/doc/slurm-mig/examples/mig-parted/hooks.yaml
/usr/share/doc/slurm-mig/examples/tmpfiles.d/slurm-mig.conf
/usr/share/doc/slurm-mig/examples/taskprolog/taskprolog.sh
/usr/share/doc/slurm-mig/examples/jobmap/prolog.sh
/usr/share/doc/slurm-mig/examples/jobmap/epilog.sh
/usr/share/doc/slurm-mig/examples/jobmap/slurm.conf
/usr/share/doc/slurm-mig/examples/repartition/repartition.sh
/usr/share/doc/slurm-mig/examples/repartition/repartition.yml"
for deb in "$deb_amd64" "$deb_arm64"; do
  arch=$(dpkg-deb -f "$deb" Architecture)
  [[ $deb == *_${arch}.deb ]] || fail "$deb: Architecture: $arch"
  files=$(dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|')
  for f in $want_files /usr/share/zsh/vendor-completions/_slurm-mig; do
    grep -qx "$f" <<<"$files" || fail "$deb lacks $f"
  done
  ctrl=$(dpkg-deb --ctrl-tarfile "$deb" | tar -t | sed 's|^\./||' | grep -v '^$' | sort | tr '\n' ' ')
  [ "$ctrl" = "control md5sums " ] || fail "$deb: control members $ctrl (want no maintainer scripts)"
done
for rpm in "$rpm_x86_64" "$rpm_aarch64"; do
  arch=$(rpm -qp --qf '%{ARCH}' "$rpm" 2>/dev/null)
  [[ $rpm == *.${arch}.rpm ]] || fail "$rpm: ARCH $arch"
  files=$(rpm -qpl "$rpm" 2>/dev/null)
  for f in $want_files /usr/share/zsh/site-functions/_slurm-mig /usr/share/doc/slurm-mig; do
    grep -qx "$f" <<<"$files" || fail "$rpm lacks $f"
  done
  rpm -K --nosignature "$rpm" >/dev/null || fail "$rpm: bad digests (rpm -K)"
  scripts=$(rpm -qp --scripts "$rpm" 2>/dev/null)
  [ -z "$scripts" ] || fail "$rpm has scriptlets: $scripts"
done
# rpm itself installs and erases the x86_64 rpm in an empty root (no
# dependencies there: --nodeps); afterwards only directories that RHEL's
# filesystem package owns may remain.
rpmroot=$tmp/rpmroot
rpm_() { rpm --root "$rpmroot" --dbpath /var/lib/rpm "$@" 2>&1 | grep -v 'should not be used directly\|assuming you know what' || true; }
mkdir -p "$rpmroot"
rpm_ --initdb
rpm_ -i --nodeps "$rpm_x86_64"
[ -x "$rpmroot/usr/bin/slurm-mig" ] || fail "rpm -i $rpm_x86_64 installed no /usr/bin/slurm-mig"
rpm_ -e slurm-mig
left=$(cd "$rpmroot" && find . -mindepth 1 -path ./var -prune -o -print | sort | tr '\n' ' ')
[ "$left" = "./usr ./usr/bin ./usr/share ./usr/share/doc ./usr/share/man ./usr/share/man/man1 " ] ||
  fail "rpm -e left behind: $left"
for pkg in "$deb_amd64" "$rpm_x86_64"; do
  echo "dist-check: $pkg:"
  case $pkg in
  *.deb) dpkg-deb -c "$pkg" | awk '$1 !~ /^d/ {print "  " $6}' ;;
  *.rpm) rpm -qpl "$pkg" 2>/dev/null | sed 's/^/  /' ;;
  esac
done

# 2. arm64 under qemu-user, against amd64, both from their .debs.
step "arm64 under qemu-user against amd64"
for a in amd64 arm64; do
  mkdir -p "$tmp/$a"
  deb=deb_$a
  dpkg-deb -x "${!deb}" "$tmp/$a"
done
demo=(--root testdata/demo/root gen --from testdata/demo/snapshot.json)
qemu_glibc() { # the glibc version under an aarch64 sysroot
  local so
  so=$(readlink -f "$1/lib/libc.so.6")
  qemu-aarch64-static -L "$1" "$so" 2>/dev/null | head -n1 | grep -o 'version [0-9.]*[0-9]' | cut -d' ' -f2 || echo "?"
}
qemu=(qemu-aarch64-static -L /usr/aarch64-linux-gnu)
"$tmp/amd64/usr/bin/slurm-mig" --version >"$tmp/version.amd64"
"${qemu[@]}" "$tmp/arm64/usr/bin/slurm-mig" --version >"$tmp/version.arm64"
"$tmp/amd64/usr/bin/slurm-mig" "${demo[@]}" >"$tmp/gen.amd64"
"${qemu[@]}" "$tmp/arm64/usr/bin/slurm-mig" "${demo[@]}" >"$tmp/gen.arm64"
cmp "$tmp/version.amd64" "$tmp/version.arm64" || fail "arm64 --version differs from amd64"
cmp "$tmp/gen.amd64" "$tmp/gen.arm64" || fail "arm64 gen differs from amd64"
echo "dist-check: arm64 (qemu, glibc $(qemu_glibc /usr/aarch64-linux-gnu)) --version: $(cat "$tmp/version.arm64"); gen: $(wc -l <"$tmp/gen.arm64") lines, identical to amd64"
# And against bullseye's arm64 glibc (2.31), from make dist's build chroot.
old_arm64=$CHROOT/usr/aarch64-linux-gnu
if [ -e "$old_arm64/lib/ld-linux-aarch64.so.1" ]; then
  qemu-aarch64-static -L "$old_arm64" "$tmp/arm64/usr/bin/slurm-mig" "${demo[@]}" >"$tmp/gen.arm64-old"
  cmp "$tmp/gen.amd64" "$tmp/gen.arm64-old" || fail "arm64 gen with bullseye's glibc differs from amd64"
  echo "dist-check: arm64 (qemu, glibc $(qemu_glibc "$old_arm64"), bullseye's): gen identical to amd64"
fi

# 3. Install, run, remove in a clean Debian 11.
step "clean bullseye chroot in $INSTALL_CHROOT"
scripts/debian-chroot.sh bullseye "$INSTALL_CHROOT"
mount -t proc proc "$INSTALL_CHROOT/proc"
mounted=1
in_chroot() { chroot "$INSTALL_CHROOT" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive "$@"; }
# Every file and its mode, owner and size, but for what apt and dpkg
# keep as their history and state: logs, caches, the status file.
tree() {
  (cd "$INSTALL_CHROOT" && find . -xdev \( -path ./proc -o -path ./tmp/slurm-mig-check \) -prune -o -printf '%p %M %u %s\n' |
    grep -Ev '^\./var/(log|cache/apt|lib/apt)/|^\./var/lib/dpkg/(status|status-old|available|available-old|lock|lock-frontend|triggers/\S+) ' | sort)
}
tree >"$tmp/before"
work=/tmp/slurm-mig-check
mkdir -p "$INSTALL_CHROOT$work"
cp "$deb_amd64" "$INSTALL_CHROOT$work/"
cp -r testdata/demo "$INSTALL_CHROOT$work/demo"
step "apt install ./${deb_amd64##*/} in bullseye"
in_chroot sh -c "cd $work && apt-get install -y -qq ./${deb_amd64##*/}" >"$tmp/apt.log" 2>&1 || { cat "$tmp/apt.log"; fail "apt install failed"; }
echo "dist-check: bullseye: $(in_chroot dpkg-query -W slurm-mig), glibc $(in_chroot ldd --version | head -n1 | awk '{print $NF}')"
in_chroot slurm-mig --version
in_chroot slurm-mig --root $work/demo/root gen --from $work/demo/snapshot.json >"$tmp/gen.bullseye"
cmp "$tmp/gen.amd64" "$tmp/gen.bullseye" || fail "gen in bullseye differs from gen here"
in_chroot bash -c '. /usr/share/bash-completion/completions/slurm-mig && complete -p slurm-mig' >/dev/null ||
  fail "the bash completion does not load"
tree >"$tmp/installed"
# What the install added is the package's files and dpkg's records of it.
in_chroot dpkg -L slurm-mig | sed 's|^/|./|' >"$tmp/owned"
comm -13 "$tmp/before" "$tmp/installed" | awk '{print $1}' | grep -vxF -f "$tmp/owned" |
  grep -v '^\./var/lib/dpkg/info/slurm-mig\.' >"$tmp/stray" || true
[ ! -s "$tmp/stray" ] || { cat "$tmp/stray"; fail "installing added files the package does not own (above)"; }
step "dpkg --purge slurm-mig"
in_chroot dpkg --purge slurm-mig >/dev/null
tree >"$tmp/after"
if ! diff "$tmp/before" "$tmp/after" >"$tmp/left"; then
  cat "$tmp/left"
  fail "the bullseye chroot differs after dpkg --purge (above: < before, > after)"
fi
echo "dist-check: purged: the chroot's $(wc -l <"$tmp/before") files are as before"
step "done"

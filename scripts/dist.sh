#!/usr/bin/env bash
# dist.sh (make dist): the .deb and .rpm packages of slurm-mig for amd64
# and arm64, in dist/. Needs root (debootstrap, chroot, mount).
#
# go-nvml needs cgo, so the binary links against the glibc it is built
# with. It is built inside a Debian 11 (bullseye, glibc 2.31) chroot, with
# the Go toolchain, the module cache and this tree bind-mounted in, for
# amd64 with gcc and for arm64 with Debian's aarch64 cross gcc: a floor far
# below the GLIBC_2.34 that a build on Debian 12 needs. The highest GLIBC_
# version each binary asks for (objdump -T) is printed and checked against
# MAX_GLIBC_amd64/MAX_GLIBC_arm64. The man page and completions come from
# the binary's own command-line model (slurm-mig docs ...), the packages
# from packaging/nfpm.yaml through nfpm.
#
# CHROOT (default /var/cache/slurm-mig/bullseye-build) is kept between runs;
# its Go build cache too.
set -euo pipefail
cd "$(dirname "$0")/.."

CHROOT=${CHROOT:-/var/cache/slurm-mig/bullseye-build}
MAX_GLIBC_amd64=${MAX_GLIBC_amd64:-2.28} # RHEL/Rocky 8
MAX_GLIBC_arm64=${MAX_GLIBC_arm64:-2.17} # RHEL/CentOS 7, the oldest aarch64 glibc in use
NFPM_VERSION=v2.45.2
GO=${GO:-go}
command -v "$GO" >/dev/null || GO=/usr/local/go/bin/go

version=$(scripts/version.sh)
pkgversion=$(scripts/version.sh --package)
build=dist/build
# Files in the packages carry the commit's time, not the build's.
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
export SOURCE_DATE_EPOCH
[ "$(id -u)" = 0 ] || { echo "dist: needs root (debootstrap, chroot, mount)" >&2; exit 2; }
# One run at a time per chroot: another's mounts and unmounts would clash.
mkdir -p "$(dirname "$CHROOT")"
exec 9>"$CHROOT.lock"
flock 9
t0=$SECONDS
step() { echo "dist: [$((SECONDS - t0))s] $*"; }

# nfpm, in .tools/ (not a dependency of the module), installed while the
# chroot is made: both mostly wait on the network.
nfpm=.tools/nfpm
nfpm_pid=""
if ! "$GO" version -m "$nfpm" 2>/dev/null | grep -q "nfpm/v2[[:space:]]*$NFPM_VERSION"; then
  step "installing nfpm $NFPM_VERSION into .tools/ (in the background)"
  GOBIN=$PWD/.tools GOFLAGS= "$GO" install "github.com/goreleaser/nfpm/v2/cmd/nfpm@$NFPM_VERSION" &
  nfpm_pid=$!
fi

step "bullseye build chroot in $CHROOT"
scripts/debian-chroot.sh bullseye "$CHROOT" gcc libc6-dev gcc-aarch64-linux-gnu libc6-dev-arm64-cross
"$GO" mod download # the chroot reads modules from the cache, offline

goroot=$("$GO" env GOROOT)
modcache=$("$GO" env GOMODCACHE)
umount_all() {
  local m
  for m in $(awk -v d="$CHROOT/" 'index($2, d) == 1 {print $2}' /proc/mounts | sort -r); do
    umount "$m" || umount -l "$m"
  done
}
trap umount_all EXIT
umount_all # a run killed before its trap
bind() { # SRC DST [ro]
  mkdir -p "$CHROOT$2"
  mount --bind "$1" "$CHROOT$2"
  [ "${3:-}" != ro ] || mount -o remount,bind,ro "$CHROOT$2"
}
bind "$goroot" "$goroot" ro
bind "$modcache" /opt/gomodcache ro
bind "$PWD" /src
mount -t proc proc "$CHROOT/proc"

rm -rf dist
mkdir -p "$build/amd64" "$build/arm64" "$build/share"
incroot() {
  chroot "$CHROOT" env -i PATH="$goroot/bin:/usr/bin:/bin" HOME=/root \
    GOMODCACHE=/opt/gomodcache GOCACHE=/root/.cache/go-build GOPROXY=off \
    GOFLAGS=-mod=readonly GOTOOLCHAIN=local CGO_ENABLED=1 \
    CGO_CFLAGS="-O2 -g -Wno-deprecated-declarations" "$@"
}
ldflags="-s -w -X 'main.version=$version'"
for arch in amd64 arm64; do
  cc=gcc
  [ "$arch" = amd64 ] || cc=aarch64-linux-gnu-gcc
  step "go build $arch (CC=$cc, in the chroot), version $version"
  incroot GOARCH=$arch CC=$cc sh -c "cd /src && go build -buildvcs=false -trimpath -ldflags \"$ldflags\" -o $build/$arch/slurm-mig ./cmd/slurm-mig"
done

# The highest GLIBC_ symbol version each binary needs.
declare -A floor
for arch in amd64 arm64; do
  objdump=objdump
  [ "$arch" = amd64 ] || objdump=aarch64-linux-gnu-objdump
  floor[$arch]=$(incroot $objdump -T "/src/$build/$arch/slurm-mig" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -n1)
  max=MAX_GLIBC_$arch
  echo "dist: $arch: highest GLIBC_ symbol version (objdump -T): GLIBC_${floor[$arch]} (limit ${!max})"
  if [ "$(printf '%s\n' "${floor[$arch]}" "${!max}" | sort -V | tail -n1)" != "${!max}" ]; then
    echo "dist: $arch binary needs GLIBC_${floor[$arch]}, above ${!max}" >&2
    exit 1
  fi
done
umount_all
trap - EXIT

step "man page, completions, examples, copyright"
bin=$build/amd64/slurm-mig
"$bin" docs man | gzip -9n >"$build/share/slurm-mig.1.gz"
"$bin" docs bash >"$build/share/slurm-mig.bash"
"$bin" docs zsh >"$build/share/_slurm-mig"
"$bin" docs fish >"$build/share/slurm-mig.fish"
for d in systemd mig-parted ansible tmpfiles.d taskprolog jobmap repartition; do
  mkdir -p "$build/share/examples/$d"
  for f in scripts/$d/*; do
    cp -p "$f" "$build/share/examples/$d/" # keeps taskprolog.sh, the jobmap scripts and repartition.sh executable
    sed -i 's|/usr/local/bin/slurm-mig|/usr/bin/slurm-mig|g' "$build/share/examples/$d/${f##*/}"
  done
done
{
  cat packaging/copyright
  "$GO" version -m "$bin" | awk '$1 == "dep" {print $2, $3}' | while read -r mod ver; do
    dir=$("$GO" mod download -json "$mod@$ver" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
    lic=""
    for f in "$dir"/LICENSE* "$dir"/COPYING*; do
      [ -f "$f" ] && { lic=$f; break; }
    done
    [ -n "$lic" ] || { echo "dist: no license file in $dir" >&2; exit 1; }
    printf '\n%s\nFiles: %s %s (statically linked)\n\n' "----------------------------------------------------------------------" "$mod" "$ver"
    cat "$lic"
    for f in "$dir"/NOTICE*; do
      [ ! -f "$f" ] || { printf '\n'; cat "$f"; }
    done
  done
  printf '\n%s\nFiles: the Go standard library and runtime, %s (statically linked)\n\n' \
    "----------------------------------------------------------------------" "$("$GO" env GOVERSION)"
  cat "$goroot/LICENSE"
} >"$build/share/copyright"

if [ -n "$nfpm_pid" ]; then
  wait "$nfpm_pid" || { echo "dist: installing nfpm $NFPM_VERSION failed" >&2; exit 1; }
fi
step "packages"
for arch in amd64 arm64; do
  for packager in deb rpm; do
    ARCH=$arch PKG_VERSION=$pkgversion GLIBC_FLOOR=${floor[$arch]} BUILD=$build \
      "$nfpm" package --config packaging/nfpm.yaml --packager $packager --target dist/ | sed 's/^/dist: /'
  done
done
step "done"
ls -l dist/*.deb dist/*.rpm

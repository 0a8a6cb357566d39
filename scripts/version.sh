#!/bin/sh
# version.sh [--package]
#
# Prints this source tree's version: `git describe --tags --always --dirty`
# in a git checkout; in a tree exported with `git archive` (a release
# tarball), what git wrote into VERSION on export; else "unknown (built
# without git)". With --package, prints it as a deb/rpm version that sorts
# right: v1.2.0 -> 1.2.0, v1.2.0-3-gabc1234 -> 1.2.0+git3.abc1234, an
# untagged abc1234 -> 0.0.0~git20261123.abc1234 (the commit's date);
# -dirty adds .dirty.
set -eu
cd "$(dirname "$0")/.."

describe="" date=""
# Only this tree's own git: a tarball unpacked inside another repository
# must not take that one's version.
if [ "$(git rev-parse --show-toplevel 2>/dev/null)" = "$(pwd -P)" ]; then
  describe=$(git describe --tags --always --dirty)
  date=$(git log -1 --format=%cd --date=format:%Y%m%d)
elif [ -f VERSION ] && ! grep -q '[$]Format:' VERSION; then
  describe=$(sed -n 's/^describe=//p' VERSION)
  [ -n "$describe" ] || describe=$(sed -n 's/^commit=//p' VERSION)
  date=$(sed -n 's/^date=//p' VERSION | tr -d -)
fi

if [ "${1:-}" != --package ]; then
  echo "${describe:-unknown (built without git)}"
  exit 0
fi

dirty=""
case $describe in *-dirty) dirty=.dirty describe=${describe%-dirty} ;; esac
if echo "$describe" | grep -Eq '^v?[0-9]+(\.[0-9]+)*$'; then
  echo "${describe#v}$dirty"
elif echo "$describe" | grep -Eq '^v?[0-9]+(\.[0-9]+)*-[0-9]+-g[0-9a-f]+$'; then
  echo "$describe" | sed -E "s/^v?([0-9.]+)-([0-9]+)-g([0-9a-f]+)\$/\\1+git\\2.\\3$dirty/"
elif echo "$describe" | grep -Eq '^[0-9a-f]+$'; then
  echo "0.0.0~git$date.$describe$dirty"
else
  echo "0.0.0~unknown"
fi

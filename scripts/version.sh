#!/bin/sh
# version.sh [--package]
#
# Prints this source tree's version: `git describe --tags --always --dirty`
# in a git checkout; in a tree exported with `git archive` (a release
# tarball), what git wrote into VERSION on export; else "unknown (built
# without git)". With --package, prints it as a deb/rpm version that sorts
# right: v1.2.0 -> 1.2.0, v1.2.0-3-gabc1234 -> 1.2.0+git3.abc1234,
# v1.2.0-rc1 -> 1.2.0~rc1, an untagged abc1234 ->
# 0.0.0~git20261123.abc1234 (the commit's date); -dirty adds .dirty.
# SLURM_MIG_DESCRIBE, SLURM_MIG_DATE and SLURM_MIG_TAGGED (1 if describe
# names a tag) stand in for git, to try the mapping.
set -eu
cd "$(dirname "$0")/.."

describe=${SLURM_MIG_DESCRIBE:-} date=${SLURM_MIG_DATE:-} tagged=${SLURM_MIG_TAGGED:-}
if [ -n "$describe" ]; then
  : # given
# Only this tree's own git: a tarball unpacked inside another repository
# must not take that one's version.
elif [ "$(git rev-parse --show-toplevel 2>/dev/null)" = "$(pwd -P)" ]; then
  describe=$(git describe --tags --always --dirty)
  ! git describe --tags >/dev/null 2>&1 || tagged=1
  date=$(git log -1 --format=%cd --date=format:%Y%m%d)
elif [ -f VERSION ] && ! grep -q '[$]Format:' VERSION; then
  describe=$(sed -n 's/^describe=//p' VERSION)
  [ -z "$describe" ] || tagged=1
  [ -n "$describe" ] || describe=$(sed -n 's/^commit=//p' VERSION)
  date=$(sed -n 's/^date=//p' VERSION | tr -d -)
fi

if [ "${1:-}" != --package ]; then
  echo "${describe:-unknown (built without git)}"
  exit 0
fi

dirty=""
case $describe in *-dirty) dirty=.dirty describe=${describe%-dirty} ;; esac
# TAG[-N-gHASH]: a release tag (v1.2.0, 1.2, v1.2.0-rc1) with the commits since.
tag='v?([0-9]+(\.[0-9]+)*)(-([A-Za-z][0-9A-Za-z.]*))?'
# With no tag, describe is the bare commit id (which can be all digits).
if [ -z "$tagged" ] && echo "$describe" | grep -Eq '^[0-9a-f]{7,40}$'; then
  echo "0.0.0~git$date.$describe$dirty"
elif echo "$describe" | grep -Eq "^$tag(-[0-9]+-g[0-9a-f]+)?\$"; then
  # -rc1 sorts before the release (~), commits after a tag after it (+git).
  echo "$describe" | sed -E "s/^$tag(-([0-9]+)-g([0-9a-f]+))?\$/\1~\4+git\6.\7/; s/~\+/+/; s/\+git\.\$//; s/~\$//" | sed "s/\$/$dirty/"
else
  echo "0.0.0~unknown"
fi

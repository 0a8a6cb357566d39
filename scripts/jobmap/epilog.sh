#!/bin/sh
# Slurm Epilog, the other half of prolog.sh: it takes the job's lines out
# of /run/slurm-mig/jobmap/<UUID> again, leaving those of other jobs on
# the same device (shard, mps, OverSubscribe); a file left with no job is
# removed. Install as /etc/slurm/epilog.d/slurm-mig-jobmap.sh (mode
# 0755).
#
# Slurm runs it as root when the job ends, however it ends; a non-zero
# exit drains the node.
exec /usr/local/bin/slurm-mig jobmap --dir /run/slurm-mig/jobmap --remove

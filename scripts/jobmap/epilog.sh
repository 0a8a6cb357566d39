#!/bin/sh
# Slurm Epilog, the other half of prolog.sh: it takes the job's lines out
# of both job maps again (/run/slurm-mig/jobmap-dcgm for dcgm-exporter,
# /run/gpustat for jobstats), leaving those of other jobs on the same
# device (shard, mps, OverSubscribe); a file left with no job is removed.
# Install as /etc/slurm/epilog.d/slurm-mig-jobmap.sh (mode 0755).
#
# Slurm runs it as root when the job ends, however it ends; a non-zero
# exit drains the node. Both maps are cleaned even when the first fails.
/usr/local/bin/slurm-mig jobmap --format dcgm --dir /run/slurm-mig/jobmap-dcgm --remove
rc=$?
/usr/local/bin/slurm-mig jobmap --format jobstats --dir /run/gpustat --remove || exit
exit $rc

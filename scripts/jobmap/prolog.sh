#!/bin/sh
# Slurm Prolog for GPU nodes whose gres.conf slurm-mig writes: it adds the
# job's line to the file of each GPU and MIG device the job has on this
# node, in two job maps, one per exporter:
#   /run/slurm-mig/jobmap-dcgm  dcgm-exporter's (--hpc-job-mapping-dir):
#                               files <GPU index>[.<GPU instance id>],
#                               the job id a line; its metrics then carry
#                               hpc_job="<job id>"
#   /run/gpustat                Princeton jobstats' GPU exporter: files
#                               <GPU index> and MIG-<UUID>, "JOBID UID"
# A site that runs one exporter drops the other's line (here and in
# epilog.sh). Install as /etc/slurm/prolog.d/slurm-mig-jobmap.sh (mode
# 0755), with epilog.sh beside it in epilog.d, and add the lines of
# slurm.conf in this directory.
#
# Slurm runs it as root, with SLURM_JOB_ID, SLURM_JOB_UID and
# SLURM_JOB_GPUS set. A job without GPUs on the node changes nothing.
# slurm-mig maps the GPU indices as the TaskProlog (slurm-mig env) does,
# and exits non-zero, writing nothing, when it cannot tell the job's
# devices for sure (no device state, another node's, a gres.conf the
# state does not match); Slurm then drains the node and requeues the
# job. A site that would rather lose the map than the node writes
# `... || logger -t slurm-mig "jobmap failed for job $SLURM_JOB_ID"`
# instead of `|| exit` and exec.
/usr/local/bin/slurm-mig jobmap --format dcgm --dir /run/slurm-mig/jobmap-dcgm || exit
exec /usr/local/bin/slurm-mig jobmap --format jobstats --dir /run/gpustat

#!/bin/sh
# Slurm Prolog for GPU nodes whose gres.conf slurm-mig writes: it adds the
# job's "JOBID UID" line to /run/slurm-mig/jobmap/<UUID> for each GPU and
# MIG device the job has on this node, the map that dcgm-exporter
# (--hpc-job-mapping-dir) and jobstats read to label metrics by job.
# Install as /etc/slurm/prolog.d/slurm-mig-jobmap.sh (mode 0755), with
# epilog.sh beside it in epilog.d, and add the lines of slurm.conf in
# this directory.
#
# Slurm runs it as root, with SLURM_JOB_ID, SLURM_JOB_UID and
# SLURM_JOB_GPUS set. A job without GPUs on the node changes nothing.
# slurm-mig maps the GPU indices as the TaskProlog (slurm-mig env) does,
# and exits non-zero, writing nothing, when it cannot tell the job's
# devices for sure (no device state, another node's, a gres.conf the
# state does not match); Slurm then drains the node and requeues the
# job. A site that would rather lose the map than the node writes
# `... || logger -t slurm-mig "jobmap failed for job $SLURM_JOB_ID"`
# instead of exec.
exec /usr/local/bin/slurm-mig jobmap --dir /run/slurm-mig/jobmap

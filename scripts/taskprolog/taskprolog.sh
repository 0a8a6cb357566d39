#!/bin/sh
# Slurm TaskProlog for GPU nodes whose gres.conf slurm-mig writes: it
# hands each task the UUIDs of the GPUs and MIG devices Slurm gave it
# (CUDA_VISIBLE_DEVICES=MIG-...), which Slurm itself does only with
# AutoDetect=nvml. Install as /etc/slurm/taskprolog.sh (mode 0755) and
# add the lines of slurm.conf in this directory.
#
# Slurm runs it as the job's user, once per task, and reads its stdout
# ("export NAME=value", "unset NAME"); a non-zero exit kills the task.
# slurm-mig env exits non-zero when it cannot tell the task's devices
# for sure, so a task never runs on a device that is not its own.
#
# A site TaskProlog of its own goes to /etc/slurm/taskprolog.site.sh: it
# runs first, and slurm-mig's lines come last, so that its
# CUDA_VISIBLE_DEVICES is the one the task gets.
site=/etc/slurm/taskprolog.site.sh
if [ -x "$site" ]; then
	"$site" || exit
fi
exec /usr/local/bin/slurm-mig env

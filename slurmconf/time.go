package slurmconf

// TimeLayout is how Slurm's commands print a time in their standard
// format (squeue's %V, sacct's Submit, scontrol's SlurmdStartTime): the
// local time of the host that runs them, with no zone.
const TimeLayout = "2006-01-02T15:04:05"

// UTCTimes is the environment setting that makes Slurm's commands print
// times in UTC (they use localtime_r): local times repeat an hour when the
// clocks go back, and cannot be ordered then.
const UTCTimes = "TZ=UTC0"

// StandardTimes is the environment setting that makes Slurm's commands
// print times as TimeLayout, whatever SLURM_TIME_FORMAT a profile set
// (relative, or a strftime format).
const StandardTimes = "SLURM_TIME_FORMAT=standard"

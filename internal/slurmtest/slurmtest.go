// Package slurmtest checks what slurm-mig writes against real Slurm:
// Debian's slurmd, slurmctld and slurm-client (22.05). Its tests feed every
// node layout of the golden tests to `slurmd -G`, the parser of record,
// and to a one-node cluster on loopback that must reach IDLE and run
// `srun --gres=gpu:<type>:1` jobs.
//
// The package holds tests only; the rule they share with other packages'
// tests for a missing Slurm (skip, or fail in CI) is internal/testkit/testtools.
package slurmtest

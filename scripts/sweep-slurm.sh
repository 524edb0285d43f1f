#!/usr/bin/env bash
# A sweep across a Slurm cluster: a job array whose every task runs the same `mtf sweep` on one
# study in PostgreSQL. Tasks claim trials from the study (--trials counts across all of them),
# so the array's size is how many trials run at once, not how many run in all. Submit with
#
#   MTF_STORAGE=postgresql://USER:PASSWORD@DBHOST:5432/DB scripts/sweep-slurm.sh [SBATCH OPTIONS]
#
# from the repository root, after `cargo build --release`: run outside a job, the script makes
# the folder of its output files (Slurm opens them before a task starts, so a missing folder
# failed every task) and submits itself with sbatch. On a shared filesystem the binary and
# configs are seen by every node; run directories are written under runs/ of the shared working
# directory. MTF_SWEEP, MTF_STUDY (default q1, the README's study: tasks and hand-started
# workers share it) and MTF_TRIALS choose the sweep. agents/tests/slurm.rs runs the array with a
# fake sbatch and srun that start its tasks locally.
#
#SBATCH --job-name=mtf-sweep
#SBATCH --array=0-15
#SBATCH --cpus-per-task=2
#SBATCH --mem=2G
#SBATCH --time=04:00:00
# Preemption or the time limit sends SIGTERM first: the worker finishes its episode (the
# checkpoint is written), marks its trial interrupted, and exits 0; another task re-runs it.
#SBATCH --signal=TERM@120
#SBATCH --requeue
#SBATCH --output=runs/slurm/%x-%A_%a.out
set -euo pipefail
: "${MTF_STORAGE:?set MTF_STORAGE=postgresql://USER[:PASSWORD]@HOST[:PORT]/DB}"
if [ -z "${SLURM_JOB_ID:-}" ]; then
  mkdir -p runs/slurm
  exec sbatch "$@" "$0"
fi
sweep=${MTF_SWEEP:-configs/sweeps/quickstart.toml}
study=${MTF_STUDY:-q1}
trials=${MTF_TRIALS:-64}
# One worker per task (--workers 1), using the task's CPUs for its training runs. srun makes
# Slurm's SIGTERM reach mtf itself.
srun --kill-on-bad-exit=0 target/release/mtf sweep --config "$sweep" --storage "$MTF_STORAGE" \
  --study "$study" --trials "$trials" --workers 1 --threads "${SLURM_CPUS_PER_TASK:-1}" \
  --out "runs/sweeps/$study" --quiet

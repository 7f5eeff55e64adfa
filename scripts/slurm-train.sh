#!/usr/bin/env bash
# Example Slurm batch script: real DDP epochs of `measure train` on several nodes, one task per
# GPU started by srun (docs/SCALE.md). Each task reads its rank from Slurm (SLURM_PROCID,
# SLURM_NTASKS, SLURM_LOCALID); the ranks rendezvous through a c10d TCPStore on the first node of
# the job (MASTER_ADDR, MASTER_PORT); rank 0 appends the row to reports/<machine>/runs.csv.
#   sbatch scripts/slurm-train.sh --batch-per-gpu 128        # extra arguments go to measure train
# Build first (scripts/slurm-measure.sh builds on a GPU node). Adapt the #SBATCH lines and the
# module loads to your site; torchrun works the same way (RANK, WORLD_SIZE, LOCAL_RANK, ...).
#SBATCH --job-name=trainsim-train
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=4
#SBATCH --gres=gpu:4
#SBATCH --cpus-per-task=8
#SBATCH --time=01:00:00
#SBATCH --output=trainsim-train-%j.log
set -euo pipefail
cd "${SLURM_SUBMIT_DIR:-$(dirname "$0")/..}"

# Site-specific environment, e.g.: module load cuda/12.4
export MASTER_ADDR=${MASTER_ADDR:-$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)}
export MASTER_PORT=${MASTER_PORT:-29500}
srun build/bin/measure train --strategy ddp --gpus "$SLURM_NTASKS" --threads "${SLURM_CPUS_PER_TASK:-1}" "$@"

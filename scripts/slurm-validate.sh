#!/usr/bin/env bash
# Example Slurm batch script: scripts/validate.sh across the job's nodes (docs/VALIDATION.md,
# "Several nodes"): the profile on the first node, the runs on 1 node and on 2, 4, ... up to all of
# them (srun: the C++ trainer a task per GPU, the PyTorch trainer a torchrun per node), then the
# comparison, into reports/<machine>/validate-<K>x<G>-gpus/.
#   sbatch --nodes 2 scripts/slurm-validate.sh --topology '{preset: dgx-h100}'
# Extra arguments go to validate.sh (--topology is required on GPUs: the cluster the predictions
# span nodes on). The repository, its build, the data and the results folder must be on a
# filesystem every node sees; build first (scripts/slurm-measure.sh builds on a GPU node).
# Re-submitting continues: every step resumes. Adapt the #SBATCH lines and the module loads to your
# site; where a job step gets only the GPUs it asks for, set SRUN_FLAGS (e.g. "--gres=gpu:8").
#SBATCH --job-name=trainsim-validate
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=8
#SBATCH --gres=gpu:8
#SBATCH --exclusive
#SBATCH --time=06:00:00
#SBATCH --output=trainsim-validate-%j.log
set -euo pipefail
cd "${SLURM_SUBMIT_DIR:-$(dirname "$0")/..}"

# Site-specific environment, e.g.: module load cuda/12.4 python/3.11
gpus=${GPUS_PER_NODE:-$(nvidia-smi -L 2> /dev/null | grep -c '^GPU ' || true)}
[ "${gpus:-0}" -ge 1 ] || { echo "slurm-validate: no GPU listed by nvidia-smi; set GPUS_PER_NODE" >&2; exit 2; }
exec scripts/validate.sh --device cuda --nodes "${SLURM_JOB_NUM_NODES:-1}" --gpus "$gpus" "$@"

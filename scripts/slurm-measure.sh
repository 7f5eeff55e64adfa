#!/usr/bin/env bash
# Example Slurm batch script: profile one 4-GPU node with `measure`.
#   sbatch scripts/slurm-measure.sh                 # everything, all visible GPUs (up to 4)
#   sbatch scripts/slurm-measure.sh --quick         # extra arguments go to measure
# One task: measure starts one process per rank itself (no srun per rank). Re-submitting
# continues an interrupted profile (--resume keeps every finished case).
# Adapt the #SBATCH lines and the module loads to your site.
#SBATCH --job-name=trainsim-measure
#SBATCH --nodes=1
#SBATCH --ntasks=1
#SBATCH --gres=gpu:4
#SBATCH --cpus-per-task=32
#SBATCH --mem=128G
#SBATCH --time=02:00:00
#SBATCH --output=trainsim-measure-%j.log
set -euo pipefail
cd "${SLURM_SUBMIT_DIR:-$(dirname "$0")/..}"

# Site-specific environment, e.g.: module load cuda/12.4 cmake ninja python/3.11
# LibTorch: a libtorch download (TORCH_PREFIX=/path/to/libtorch) or the PyTorch wheel's copy.
TORCH_PREFIX=${TORCH_PREFIX:-$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null || true)}
# NCCL headers and library for the GPU collectives: the nvidia-nccl wheel next to PyTorch, or
# NCCL_ROOT set by the site (the CUDA toolkit's copy is found without it).
NCCL_ROOT=${NCCL_ROOT:-$(python3 -c 'import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])' 2>/dev/null || true)}

if [ ! -x build/bin/measure ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRAINSIM_BENCHMARKS=OFF \
    ${TORCH_PREFIX:+-DCMAKE_PREFIX_PATH="$TORCH_PREFIX"} ${NCCL_ROOT:+-DNCCL_ROOT="$NCCL_ROOT"}
  cmake --build build -j "${SLURM_CPUS_PER_TASK:-$(nproc)}" --target measure
fi

nvidia-smi || true
# Writes reports/<gpu-name>-x<count>/profile.yaml and collectives.txt under the submit folder.
srun --ntasks=1 build/bin/measure --resume "$@"

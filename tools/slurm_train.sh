#!/usr/bin/env bash
# Usage: [GPUS=8 GPUS_PER_NODE=8 CPUS_PER_TASK=5 SRUN_ARGS=...] \
#        bash tools/slurm_train.sh PARTITION JOB_NAME CONFIG [WORK_DIR] [train.py args...]
# SIGTERM/SIGUSR1 to the tasks (srun forwards them; SRUN_ARGS="--signal=USR1@120" sends
# SIGUSR1 120 s before the time limit): every rank finishes its iteration, one checkpoint
# is saved, exit status 75, and the same command resumes; inside an `sbatch --requeue`
# job rank 0 requeues it after SIGUSR1 (PreemptionHook, docs/distributed.md).
set -x
PARTITION=$1
JOB_NAME=$2
CONFIG=$3
if [ $# -ge 4 ]; then
    WORK_DIR=$4
    shift 4
else
    WORK_DIR="work_dirs/${JOB_NAME}"
    shift 3
fi
GPUS=${GPUS:-8}
GPUS_PER_NODE=${GPUS_PER_NODE:-8}
CPUS_PER_TASK=${CPUS_PER_TASK:-5}
SRUN_ARGS=${SRUN_ARGS:-""}
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
# a refused run prints its message once per node, not once per task: the
# tasks of a node agree through this file (pmsn_mm.utils.refusal)
export PMSN_REFUSAL_FILE="${TMPDIR:-/tmp}/pmsn_refusal_${SLURM_JOB_ID:-$$}_$(date +%s%N)"

PYTHONPATH="$ROOT:$PYTHONPATH" \
srun -p ${PARTITION} \
    --job-name=${JOB_NAME} \
    --gres=gpu:${GPUS_PER_NODE} \
    --ntasks=${GPUS} \
    --ntasks-per-node=${GPUS_PER_NODE} \
    --cpus-per-task=${CPUS_PER_TASK} \
    --kill-on-bad-exit=1 \
    ${SRUN_ARGS} \
    python -u "$ROOT/tools/train.py" ${CONFIG} --work-dir=${WORK_DIR} --launcher="slurm" "$@"

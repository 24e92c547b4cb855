#!/usr/bin/env bash
# Usage: bash tools/dist_train.sh CONFIG NUM_PROCS [tools/train.py args...]
# Multi-node: set NNODES, NODE_RANK, MASTER_ADDR (and PORT) on every node.
# Without CUDA, tools/train.py uses the gloo backend automatically.
set -e
CONFIG=$1
GPUS=$2
shift 2
NNODES=${NNODES:-1}
NODE_RANK=${NODE_RANK:-0}
PORT=${PORT:-29500}
MASTER_ADDR=${MASTER_ADDR:-"127.0.0.1"}
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
# torchrun gives each process OMP_NUM_THREADS=1 unless it is set, and prints
# a banner saying so; set here (to the same 1) it prints nothing. Export it
# (and MKL_NUM_THREADS) to choose the threads per process.
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}

PYTHONPATH="$ROOT:$PYTHONPATH" \
python -m torch.distributed.run \
    --nnodes=$NNODES \
    --node_rank=$NODE_RANK \
    --master_addr=$MASTER_ADDR \
    --nproc_per_node=$GPUS \
    --master_port=$PORT \
    "$ROOT/tools/train.py" \
    $CONFIG \
    --launcher pytorch "$@"

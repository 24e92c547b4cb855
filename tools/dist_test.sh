#!/usr/bin/env bash
# Usage: bash tools/dist_test.sh CONFIG CHECKPOINT NUM_PROCS [tools/test.py args...]
# Multi-node: set NNODES, NODE_RANK, MASTER_ADDR (and PORT) on every node.
set -e
CONFIG=$1
CHECKPOINT=$2
GPUS=$3
shift 3
NNODES=${NNODES:-1}
NODE_RANK=${NODE_RANK:-0}
PORT=${PORT:-29500}
MASTER_ADDR=${MASTER_ADDR:-"127.0.0.1"}
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
# torchrun gives each process OMP_NUM_THREADS=1 unless it is set, and prints
# a banner saying so; set here (to the same 1) it prints nothing. Export it
# (and MKL_NUM_THREADS) to choose the threads per process.
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}

# tools/torchrun.py is torchrun that holds its own failure messages when a
# rank refused the run (the refusal is printed once, alone; exit status 1)
PYTHONPATH="$ROOT:$PYTHONPATH" \
python "$ROOT/tools/torchrun.py" \
    --nnodes=$NNODES \
    --node_rank=$NODE_RANK \
    --master_addr=$MASTER_ADDR \
    --nproc_per_node=$GPUS \
    --master_port=$PORT \
    "$ROOT/tools/test.py" \
    $CONFIG \
    $CHECKPOINT \
    --launcher pytorch "$@"

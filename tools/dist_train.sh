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

# SIGTERM and SIGUSR1 to this script (Slurm: --signal=B:USR1@120, kill)
# go to the training processes: each finishes its iteration, one checkpoint
# is saved, and the script exits 75 (PreemptionHook, docs/distributed.md).
# torchrun would die of SIGUSR1 (leaving the ranks behind): it ignores it;
# after a SIGTERM of its own it waits TORCH_ELASTIC_SHUTDOWN_TIMEOUT s.
export TORCH_ELASTIC_SHUTDOWN_TIMEOUT=${TORCH_ELASTIC_SHUTDOWN_TIMEOUT:-300}
export PMSN_PREEMPTED_STATUS_FILE="$(mktemp)"
trap 'rm -f "$PMSN_PREEMPTED_STATUS_FILE"' EXIT
trap '' USR1
# (in the background, so that the traps below run at once; Ctrl-C as before)
# tools/torchrun.py is torchrun that holds its own failure messages when a
# rank refused the run (the refusal is printed once, alone; exit status 1)
( trap - INT QUIT
PYTHONPATH="$ROOT:$PYTHONPATH" \
exec python "$ROOT/tools/torchrun.py" \
    --nnodes=$NNODES \
    --node_rank=$NODE_RANK \
    --master_addr=$MASTER_ADDR \
    --nproc_per_node=$GPUS \
    --master_port=$PORT \
    "$ROOT/tools/train.py" \
    $CONFIG \
    --launcher pytorch "$@" ) &
TORCHRUN=$!
trap 'pkill -USR1 -P $TORCHRUN || true' USR1
trap 'pkill -TERM -P $TORCHRUN || true' TERM
trap 'kill -INT $TORCHRUN 2>/dev/null || true' INT
STATUS=0
while :; do
    wait $TORCHRUN && STATUS=0 || STATUS=$?
    kill -0 $TORCHRUN 2>/dev/null || break  # else a trap ended the wait
done
# the ranks saved and stopped on a signal (torchrun fails if it got one too)
if [ -s "$PMSN_PREEMPTED_STATUS_FILE" ]; then
    STATUS=$(cat "$PMSN_PREEMPTED_STATUS_FILE")
fi
exit $STATUS

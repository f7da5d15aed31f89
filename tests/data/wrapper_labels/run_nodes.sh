#!/bin/sh
# Make one log of tests/data/wrapper_labels: run_nodes.sh odd|healthy writes nodes-MODE.log.
# Two torchrun "nodes" on localhost (static rendezvous), each one's output prefixed by a
# wrapper with its node label; node 0 exports VOCAB_PAD=64, node 1 only when healthy
# (torch 2.13 CPU, gloo; the venv of the main checkout).
mode=$1
T=/work/main/.venv/bin/torchrun
export OMP_NUM_THREADS=1
pad1=""
[ "$mode" = healthy ] && pad1=64
{
( VOCAB_PAD=64 timeout 90 $T --nnodes=2 --node-rank=0 --nproc-per-node=3 --rdzv-backend=static --master-addr=127.0.0.1 --master-port=29683 train_nodes.py 2>&1 | sed -u 's/^/[trn-a0] /' ) &
sleep 2
( env ${pad1:+VOCAB_PAD=$pad1} timeout 90 $T --nnodes=2 --node-rank=1 --nproc-per-node=1 --rdzv-backend=static --master-addr=127.0.0.1 --master-port=29683 train_nodes.py 2>&1 | sed -u 's/^/[trn-a1] /' ) &
wait
} > "nodes-$mode.log"

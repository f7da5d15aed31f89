#!/bin/sh
# node 0: one worker without PYTHONHASHSEED; node 1: three workers with PYTHONHASHSEED=7
T=/work/main/.venv/bin/torchrun
$T --nnodes=2 --node-rank=0 --nproc-per-node=1 --master-addr=127.0.0.1 --master-port=29733 train_hash.py &
PYTHONHASHSEED=7 $T --nnodes=2 --node-rank=1 --nproc-per-node=3 --master-addr=127.0.0.1 --master-port=29733 train_hash.py
wait

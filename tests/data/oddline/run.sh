#!/bin/sh
# Make one log of tests/data/oddline: run.sh MODE NPROC PORT writes MODE-NPROC.log
# (torch 2.13 CPU, gloo; the venv of the main checkout).
mode=$1; n=$2; port=$3
{ echo "$ ODD_MODE=$mode torchrun --nproc-per-node=$n --tee 3 train_odd.py"
  ODD_MODE=$mode OMP_NUM_THREADS=1 timeout 120 /work/main/.venv/bin/torchrun --nproc-per-node=$n --master-port=$port --tee 3 train_odd.py
  echo "exit code: $?"; } > "$mode-$n.log" 2>&1

#!/bin/sh
# Make one log of tests/data/thread_died: run_prefetch.sh prefetch|upload writes MODE-4.log
# (4 ranks on torchrun; torch 2.13 CPU, gloo; the venv of the main checkout). In prefetch
# mode line 6 of rank 2's token file holds id 1234 (the vocabulary has 1000).
mode=$1
rm -rf tokens; mkdir tokens
for r in 0 1 2 3; do
  i=1
  while [ $i -le 12 ]; do
    if [ $mode = prefetch ] && [ $r = 2 ] && [ $i = 6 ]; then echo "5 17 1234 9 3 3 8 2 7"; else echo "5 17 $((r + i)) 9 3 3 8 2 7"; fi
    i=$((i + 1))
  done > tokens/part-0$r.txt
done
{ echo "$ THREAD_MODE=$mode torchrun --nproc-per-node=4 train_prefetch.py"
  THREAD_MODE=$mode OMP_NUM_THREADS=1 timeout 90 /work/main/.venv/bin/torchrun --nproc-per-node=4 --master-port=29687 train_prefetch.py
  echo "exit code: $?"; } > "$mode-4.log" 2>&1

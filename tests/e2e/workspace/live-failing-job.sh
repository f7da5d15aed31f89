#!/usr/bin/env bash
# A job that keeps running after one rank failed (its peers would wait in a collective):
# two ranks print steps, rank 1 runs out of memory, and the job only exits 25 s later.
for step in 1 2 3; do
  echo "[rank0]: step $step loss 1.0$step"
  echo "[rank1]: step $step loss 1.1$step"
  sleep 0.2
done
echo "[rank1]: Traceback (most recent call last):"
echo '[rank1]:   File "train.py", line 42, in <module>'
echo "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity of 79.15 GiB of which 1.20 GiB is free."
sleep 25
exit 1

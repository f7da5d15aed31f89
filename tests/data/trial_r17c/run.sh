#!/bin/sh
# How the logs beside this file were made (new-user trial r17c re-run; torch 2.13 CPU, gloo,
# torchrun from the main checkout's venv, 2 shared cores). trial.py's docstring says what each
# TRIAL_MODE does; libprefetch.so is prefetcher.cpp built with g++.
set -x
export OMP_NUM_THREADS=1
TR=/work/main/.venv/bin/torchrun
RR="env PYTHONPATH=/work/main/server /work/main/.venv/bin/python -m rootrank"
g++ -O1 -shared -fPIC -o libprefetch.so prefetcher.cpp -lpthread
# snapshot-enospc-3.log: rank 1's snapshot thread dies of ENOSPC, the run ends, exit 0
TRIAL_CKPT=/dev/full TRIAL_FMT=rank TRIAL_MODE=snapshot \
  $RR run --log snapshot-enospc-3.log -- $TR --nproc-per-node=3 --master-port=29621 trial.py
# keyerror-abort-tee-3.log: rank 2's KeyError, then the native prefetcher's std::terminate
TRIAL_MODE=keyerror $TR --nproc-per-node=3 --tee 3 --master-port=29614 --no-python \
  bash -c 'ulimit -c unlimited; /work/main/.venv/bin/python trial.py; exit $?' > keyerror-abort-tee-3.log 2>&1
echo "exit $?" >> keyerror-abort-tee-3.log
# prefetch-thread-2.log: rank 1's prefetch thread dies, rank 1 blocks, rank 0 times out
TRIAL_BAD_RANK=1 TRIAL_TIMEOUT=10 TRIAL_FMT=plain TRIAL_MODE=prefetch \
  $RR run --log prefetch-thread-2.log -- $TR --nproc-per-node=2 --master-port=29624 trial.py
# snapshot-slow-3.log: the snapshot thread dies at step 3, rank 1 sleeps 8 s at step 4, the
# run ends, exit 0; the output as `rootrank watch --stall 4 --format json -` read it
TRIAL_CKPT=/dev/full TRIAL_SLOW=8 TRIAL_TIMEOUT=60 TRIAL_FMT=rank TRIAL_MODE=snapshot,slow \
  $TR --nproc-per-node=3 --master-port=29630 trial.py 2>&1 | tee snapshot-slow-3.log \
  | $RR watch --stall 4 --format json -

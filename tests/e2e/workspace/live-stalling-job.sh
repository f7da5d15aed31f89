#!/usr/bin/env bash
# A job whose rank 1 stops making progress while rank 0 reached the next step (a hang).
for step in 1 2 3 4 5; do
  echo "[rank0]: step $step loss 1.0"
  [ "$step" -lt 5 ] && echo "[rank1]: step $step loss 1.0"
  sleep 0.3
done
sleep 30

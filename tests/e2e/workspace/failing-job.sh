#!/usr/bin/env bash
# Prints a multi-rank failure like a torchrun job would, then fails like it.
cat "$(dirname "$0")/logs/train-8gpu.log"
exit 1

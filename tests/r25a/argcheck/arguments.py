"""Argument parsing and validation of a small trainer (a bare assert on the arguments)."""

import argparse


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--use-cpu-offload", action="store_true")
    p.add_argument("--pin-memory", action="store_true")
    p.add_argument("--steps", type=int, default=3)
    return p.parse_args()


def validate_args(args):
    if args.use_cpu_offload:
        assert not args.pin_memory
    return args

"""Compatibility: the causal analysis lives in :mod:`rootrank.analysis`."""

from rootrank.analysis import analyze, format_ranks, single_node_proof

__all__ = ["analyze", "format_ranks", "single_node_proof"]

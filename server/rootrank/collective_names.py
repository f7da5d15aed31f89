"""The function names of torch.distributed's and DeepSpeed's collectives (and their waits):
read by the live stack dumps (:mod:`rootrank.live.stacks`) and the dumps found in a log
(:mod:`rootrank.analysis.stack_desync`). No imports: both read it at start.
"""

#: Function names that are a collective or a wait on one (torch.distributed, DeepSpeed's comm).
COLLECTIVES = (
    "all_reduce",
    "allreduce",
    "all_gather",
    "all_gather_into_tensor",
    "all_gather_object",
    "reduce_scatter",
    "reduce_scatter_tensor",
    "broadcast",
    "broadcast_object_list",
    "barrier",
    "monitored_barrier",
    "all_to_all",
    "all_to_all_single",
    "reduce",
    "gather",
    "scatter",
    "send",
    "recv",
    "isend",
    "irecv",
    "batch_isend_irecv",
)

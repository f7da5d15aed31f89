"""Round 19, issue 15: the fix built from the user's own line and the log's own words.

Two mechanisms of the fix-building code (rootrank.entry.variants, rootrank.entry.fill_entry):

- ``from_data`` / ``{data_loc}`` (:func:`rootrank.entry.variants.data_frame`): the exception
  was raised in code the DataLoader ran for the batch (a Dataset's ``__getitem__``, a
  collate_fn), so the value the message names (an index) is a data record's, not the step's;
- ``message_directive`` / ``{directive}`` / ``{directive_how}``
  (:func:`rootrank.entry.variants.message_directive`, :func:`~rootrank.entry.variants.directive_how`):
  the message's own sentence that says what to change leads the fix, with the call the
  message quotes rewritten to pass the option it names.

Every fixture is a real run (torch 2.13 CPU, gloo, torchrun) of a script in tests/data/r19_fix/,
``torchrun --nproc-per-node=N <script> > <fixture> 2>&1`` from /tmp/r19fix/runs:
index-out-of-range/record-index (label_map.py, 3 ranks, num_workers=2: record 41 carries
label code 6 of a 4-entry table), computed-index (lr_table.py, 2 ranks: a per-step table one
entry short), general (emb_vocab.py, 2 ranks: a <bos> id past the embedding);
user-code-exception/unpicklable-local (gather_cfg.py, 2 ranks: all_gather_object of a
lambda), message-directive (nesterov.py, 2 ranks: SGD(nesterov=True) without momentum),
empty-reduction (empty_shard.py, 3 ranks: rank 1's shard is empty after a length filter),
key-on-some-ranks (eval_metrics.py, 3 ranks: the metrics dict is filled on rank 0 only),
none-on-some-ranks (writer_main.py, 4 ranks: the writer is None except on rank 0);
shape-mismatch/optimizer-state (resume_optim.py, 2 ranks after ``python resume_optim.py prep``:
Adam's state saved for a 16-output head loaded into a 4-output one);
dynamo-unsupported/tf32-api-mix (tf32_compile.py, 2 ranks: the legacy and the new TF32 API set,
the compiled forward reads the legacy flag). inductor-or-triton-error/tf32-api-mix is the line
torch 2.10's Inductor printed, as quoted in pytorch/pytorch#194680 (this machine's torch 2.13
Inductor reads the new API, so a CPU run cannot print it); the two ``general`` fixtures are
copies of the signatures' own positive logs; weights-only-unpickling/one-rank-file
(resume_args.py, 3 ranks after ``python resume_args.py prep``: rank 1's settings file, from an
older version, pickled an argparse.Namespace), its general fixture a copy of the signature's
positive log.

A third mechanism, ``most_ranks_raised`` / ``{raised_ranks}`` / ``{spared_ranks}``
(:func:`rootrank.entry.variants.spared_ranks`): one line raised on most ranks and not on the
others, so what it reads was made on those others only (``if rank == 0``).
"""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_paths
from rootrank.entry.variants import (
    data_frame,
    directive_how,
    lone_raiser,
    message_directive,
    passed_in,
    rank_list,
    spared_ranks,
)

FIX = Path(__file__).resolve().parent / "fix_variants"

#: torch 2.13's message for put_ under torch.use_deterministic_algorithms(True) (printed by a
#: real call on this machine, CPU).
PUT_MESSAGE = (
    "put_ does not have a deterministic implementation, but you set "
    "'torch.use_deterministic_algorithms(True)'. You can turn off determinism just for this "
    "operation, or you can use the 'warn_only=True' option, if that's acceptable for your "
    "application. You can also file an issue at https://github.com/pytorch/pytorch/issues to "
    "help us prioritize adding deterministic support for this operation."
)


def _root(signature: str, variant: str):
    rc = diagnose_paths([str(FIX / signature / f"{variant}.log")]).root_cause
    assert rc is not None and rc.signature == signature
    assert rc.fix.variant is not None and rc.fix.variant.id == variant
    return rc


def test_data_frame_reads_the_fetch_and_the_function_name():
    fetch = "/x/site-packages/torch/utils/data/_utils/fetch.py"
    frames = [
        {"file": "/w/train.py", "line": 33, "func": "main", "user": True},
        {"file": fetch, "line": 54, "func": "fetch", "user": False},
        {"file": "/w/train.py", "line": 23, "func": "lookup", "user": True},
    ]
    assert data_frame(frames) == "train.py:23 (in lookup)"
    # no fetch frame: the function's own name says it (a collate_fn called by hand)
    assert data_frame([{"file": "/w/c.py", "line": 5, "func": "pad_collate", "user": True}]) == (
        "c.py:5 (in pad_collate)"
    )
    # the step's own raise is not the data pipeline's
    assert data_frame([{"file": "/w/train.py", "line": 19, "func": "main", "user": True}]) is None


def test_message_directive_takes_the_sentences_that_say_what_to_do():
    assert message_directive(PUT_MESSAGE) == (
        "You can turn off determinism just for this operation, or you can use the "
        "'warn_only=True' option, if that's acceptable for your application."
    )
    assert (
        message_directive("Nesterov momentum requires a momentum and zero dampening")
        == "Nesterov momentum requires a momentum and zero dampening"
    )
    # messages that name a value but say nothing to do
    assert message_directive("index 6 is out of bounds for dimension 0 with size 4") is None
    assert message_directive("Can't pickle local object 'build_aug.<locals>.<lambda>'") is None
    assert message_directive("'img_r1'") is None
    # the user's own check describes a bad value: not advice
    assert message_directive("expected 16 features, got 15", requirement=False) is None


def test_directive_how_rewrites_the_quoted_call():
    directive = message_directive(PUT_MESSAGE) or ""
    assert directive_how(directive, PUT_MESSAGE) == (
        " Here: where your code calls `torch.use_deterministic_algorithms(True)`, pass the"
        " option: `torch.use_deterministic_algorithms(True, warn_only=True)`."
    )
    assert directive_how("Nesterov momentum requires a momentum", "Nesterov ...") == ""


def test_record_index_names_the_record_line_and_value():
    rc = _root("index-out-of-range", "record-index")
    assert rc.rank == 2
    assert rc.user_frame is not None and rc.user_frame.line == 23
    assert rc.fix.steps[0].startswith(
        "label_map.py:23 (in __getitem__), where rank 2 raised IndexError: "
        "`return self.x[i], LABEL_OF[self.code[i]]` looked up entry 6 of a table with 4 entries,"
        " in code the DataLoader ran to build this batch: 6 is a value a data record carries"
    )
    assert (
        "make label_map.py:23 (in __getitem__) reject or map an id of 4 or more"
        in (rc.fix.steps[0])
    )
    assert "DataLoader ran your label_map.py:23 (in __getitem__)" in rc.fix.variant.why


def test_computed_index_names_the_line_and_both_sizes():
    rc = _root("index-out-of-range", "computed-index")
    assert rc.user_frame is not None and rc.user_frame.line == 19
    assert (
        '`group["lr"] = float(LR_TABLE[step])` asked for entry 5 of a dimension that has 5'
        " entries" in rc.fix.steps[0]
    )
    assert "past the step where the index reached 5" in rc.verify


def test_index_default_keeps_the_embedding_fix():
    rc = _root("index-out-of-range", "general")
    assert "assert ids.max() < emb.num_embeddings" in rc.fix.steps[0]


def test_unpicklable_local_says_move_it_to_module_level():
    rc = _root("user-code-exception", "unpicklable-local")
    assert rc.user_frame is not None and rc.user_frame.line == 15
    assert rc.fix.steps[0].startswith(
        "gather_cfg.py:15 (in main), where ranks 0 and 1 were in all_gather_object: "
        "\"Can't pickle local object 'build_aug.<locals>.<lambda>'\": pickle stores a function"
    )
    assert "define the function at module level" in rc.fix.steps[0]


def test_message_directive_leads_the_fix():
    rc = _root("user-code-exception", "message-directive")
    assert rc.fix.steps[0].startswith(
        "nesterov.py:17 (in main), where ranks 0 and 1 raised ValueError: The message says what"
        ' to change: "Nesterov momentum requires a momentum and zero dampening" Do that where'
    )
    assert "The whole message" not in rc.fix.steps[0]  # the directive is the whole message


def test_empty_reduction_is_the_empty_input_not_the_dim_advice():
    rc = _root("user-code-exception", "empty-reduction")
    assert rc.rank == 1
    assert rc.fix.steps[0].startswith(
        "empty_shard.py:14 (in main), where rank 1 raised RuntimeError: `longest = kept.max()`"
        " reduced a tensor with no elements"
    )
    assert "passing dim as the message suggests only moves the error" in rc.fix.steps[0]


def test_spared_ranks_needs_most_ranks_raising():
    assert spared_ranks([1, 2, 3], {0, 1, 2, 3}) == ([1, 2, 3], [0])
    assert spared_ranks([2], {0, 1, 2, 3}) is None  # one rank alone: its data as likely
    assert spared_ranks([1, 2], {0, 1, 2, 3}) is None  # as many spared as raised
    assert spared_ranks([0, 1], {0, 1}) is None  # every rank raised
    assert rank_list([1, 2, 3]) == "ranks 1, 2 and 3" and rank_list([0]) == "rank 0"


def test_key_read_on_every_rank_filled_on_rank0():
    rc = _root("user-code-exception", "key-on-some-ranks")
    assert rc.user_frame is not None and rc.user_frame.line == 29
    assert "ranks 1 and 2 raised KeyError 'val_mse' at `print(" in rc.fix.steps[0]
    assert "and rank 0 did not: every rank runs this line" in rc.fix.steps[0]
    assert "dist.broadcast_object_list(obj, src=0)" in rc.fix.steps[0]


def test_none_object_made_on_rank0_only():
    rc = _root("user-code-exception", "none-on-some-ranks")
    assert rc.user_frame is not None and rc.user_frame.line == 31
    assert rc.fix.steps[0].startswith(
        "writer_main.py:31 (in main), where ranks 1, 2 and 3 raised AttributeError: ranks 1, 2"
        " and 3 raised \"'NoneType' object has no attribute 'add_scalar'\" at"
        ' `writer.add_scalar("train/loss", loss.item(), step)` and rank 0 did not'
    )


def test_optimizer_state_mismatch_is_not_a_layer_shape():
    rc = _root("shape-mismatch", "optimizer-state")
    assert rc.user_frame is not None and rc.user_frame.line == 34
    assert rc.fix.steps[0].startswith(
        "resume_optim.py:34 (in main), where ranks 0 and 1 raised RuntimeError: The shapes that"
        " disagree (16 against 4) met inside optimizer.step"
    )
    assert "did this run load an optimizer state before the step" in rc.fix.steps[0]
    assert "use_orig_params=True" in rc.fix.steps[0]


def test_tf32_api_mix_is_the_settings_not_triton():
    for sig in ("dynamo-unsupported", "inductor-or-triton-error"):
        rc = _root(sig, "tf32-api-mix")
        assert (
            "The process set the TF32 matmul mode through both of PyTorch's APIs"
            in (rc.fix.steps[0])
        )
        assert "Install the Triton version" not in " ".join(rc.fix.steps)
    rc = _root("dynamo-unsupported", "tf32-api-mix")
    assert rc.user_frame is not None and rc.user_frame.line == 19


def test_lone_raiser_is_one_rank_with_others_shown():
    assert lone_raiser([1], {0, 1, 2}) == (1, [0, 2])
    assert lone_raiser([1, 2], {0, 1, 2}) is None
    assert lone_raiser([0], {0}) is None  # no other rank in the log


def test_one_rank_file_converts_that_file():
    rc = _root("weights-only-unpickling", "one-rank-file")
    assert rc.rank == 1 and rc.user_frame is not None and rc.user_frame.line == 26
    assert rc.fix.steps[0].startswith(
        "resume_args.py:26 (in main), where rank 1 raised UnpicklingError: Only rank 1's file"
        " holds an object of class argparse.Namespace: every rank runs the same torch.load and"
        " ranks 0 and 2 did not refuse theirs"
    )
    assert "vars(obj) for an argparse.Namespace" in rc.fix.steps[0]


def test_monitored_barrier_reads_its_original_exception():
    rc = _root("monitored-barrier-rank-failed", "late-rank-said")
    assert rc.rank == 2
    assert "Rank 2 was alive and still busy when the others' 3000 ms" in rc.fix.steps[0]
    assert (
        "Its own last line before that is line 5: `rank 2 fetching shard_002 from the archive"
        " tier`" in rc.fix.steps[0]
    )
    assert "raise the timeout of this monitored_barrier" in rc.fix.steps[0]
    rc = _root("monitored-barrier-rank-failed", "late-rank")
    assert "Rank 2 was alive and had not reached monitored_barrier" in rc.fix.steps[0]
    rc = _root("monitored-barrier-rank-failed", "rank-gone")
    assert "Rank 2's process was gone before the barrier's 3000 ms ran out" in rc.fix.steps[0]


def test_passed_in_names_the_caller_and_the_shared_name():
    frames = [
        ("/w/policy.py", 176, "forward", True, "delta = self.crh(a_norm, z_v)"),
        ("/x/site-packages/torch/nn/modules/module.py", 1790, "_call_impl", False, "x"),
        ("/w/crh.py", 45, "forward", True, "x = torch.cat([a_flat, z_v], dim=1)  # [B, D]"),
    ]
    assert passed_in(frames) == (
        "policy.py:176 (in forward)",
        "delta = self.crh(a_norm, z_v)",
        ["z_v"],
    )
    # no name in common: the caller passes something else
    assert passed_in([frames[0], ("/w/crh.py", 45, "forward", True, "y = b * 2")]) is None


def test_shape_complaint_points_at_the_caller():
    rc = _root("user-code-exception", "shape-passed-in")
    assert rc.fix.steps[0].startswith(
        'fuse_cat.py:24 (in forward), where ranks 0 and 1 raised RuntimeError: "Tensors must'
        ' have same number of dimensions: got 2 and 3" at `x = torch.cat([text, image], dim=1)`'
    )
    assert (
        "`text`, `image` are passed in by fuse_cat.py:38 (in forward): `return self.fuse(text,"
        " image)`" in rc.fix.steps[0]
    )
    rc = _root("shape-mismatch", "shape-passed-in")
    assert (
        "The shapes do not fit at `return self.proj(pooled)`, and `pooled` is passed in by"
        " head_linear.py:26 (in forward): `return self.head(pooled)`" in rc.fix.steps[0]
    )


def test_glued_rank_lines_split():
    from rootrank.scan import glued_ranks

    assert glued_ranks(1, " dtype torch.float32rank 2: dtype torch.bfloat16") == [
        (1, " dtype torch.float32"),
        (2, " dtype torch.bfloat16"),
    ]
    assert glued_ranks(3, " loaded 12 rank files") == [(3, " loaded 12 rank files")]


def test_dtype_printed_by_one_rank_leads_the_fix():
    rc = _root("gloo-size-mismatch", "dtype-width-rank-said")
    assert rc.rank == 0
    assert rc.fix.steps[0].startswith(
        "The two byte counts are exactly 2 times apart (2176 vs 1088), and the ranks' own lines"
        " say why: dtype torch.float64 on rank 0, torch.float32 on ranks 1, 2."
    )


def test_group_creation_is_collective():
    rc = _root("store-key-wait-timeout", "group-creation")
    assert rc.rank == 2
    assert rc.fix.steps[0].startswith("group_order.py:14: rank 2 calls new_group here")
    assert "The ranks waited 10000 ms inside new_group for another process's key" in rc.fix.steps[1]
    assert (
        "`groups = {name: dist.new_group(members) for name, members in layout}`"
        in (rc.fix.steps[1])
    )


def test_nan_guard_names_the_rank_whose_own_value_went_nan():
    rc = _root("nan-guard-exception", "rank-went-nan-first")
    assert rc.rank == 2
    assert (
        "Rank 2's own value went non-finite first (line 28: `rank 2 step 3 loss nan mean_loss"
        " nan`)" in rc.fix.steps[0]
    )
    assert "(hi - lo).clamp_min(eps)" in rc.fix.steps[0]


def test_rank_waiting_on_a_lock_gets_the_stale_lock_fix():
    rc = _root("gloo-collective-timeout", "rank-waits-on-lock")
    assert rc.rank == 1
    assert (
        "its own line 7: `rank 1: cache build locked by /tmp/r19fix_cache/build.lock,"
        " waiting (10s)` says it was waiting for a lock" in rc.fix.steps[0]
    )
    assert "remove it when its holder is gone" in rc.fix.steps[0]

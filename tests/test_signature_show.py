"""``rootrank signatures ID``: one library entry shown whole (text and JSON), found by its id
or a unique part of it; a clear one-line error with exit code 2 when the part names none (the
closest ids are offered) or several (they are listed)."""

from __future__ import annotations

import json

from conftest import run_cli


def test_an_entry_is_shown_whole_as_text(library):
    sig = library.signatures["cuda-oom"]
    proc = run_cli("signatures", "cuda-oom")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.decode()
    lines = out.splitlines()
    assert lines[0] == f"cuda-oom: {sig.title}"
    assert "class: cuda-oom   category: memory   kind: cause   severity: error" in lines
    # what it means, in words (the {size} placeholder reads as "the requested size")
    assert "could not find the requested size of free device memory" in " ".join(out.split())
    assert "{size}" not in out
    # the fix: each variant with its condition, steps and code per stack
    assert "  variant fragmentation (when message matches /" in out
    assert "  variant in-evaluation (when frames matches /" in out
    assert "    hf:" in out and "per_device_eval_batch_size=4, eval_accumulation_steps=8" in out
    # verify (the command keeps a visible blank) and references
    verify = lines[lines.index("Verify:") + 1].strip()
    assert verify.startswith("PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True torchrun")
    assert "<gpus>" in verify
    refs = lines[lines.index("References:") + 1 :]
    assert [r.strip() for r in refs[: len(sig.references)]] == list(sig.references)


def test_an_entry_as_json(library):
    sig = library.signatures["cuda-oom"]
    proc = run_cli("signatures", "cuda-oom", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    entry = json.loads(proc.stdout)
    assert (entry["id"], entry["failure_class"], entry["kind"]) == ("cuda-oom", "cuda-oom", "cause")
    assert entry["title"] == sig.title
    assert [v["id"] for v in entry["fix"]["variants"]] == [v["id"] for v in sig.fix["variants"]]
    assert "fragmentation" in [v["id"] for v in entry["fix"]["variants"]]
    assert "<gpus>" in entry["verify"] and "{" not in entry["verify"]
    assert entry["references"] == list(sig.references)
    assert "the requested size" in entry["entry"]["summary"]


def test_a_unique_prefix_or_substring_names_the_entry(library):
    ids = sorted(library.signatures)
    assert [i for i in ids if i.startswith("ddp-unused")] == ["ddp-unused-parameters"]
    for query in ("ddp-unused", "unused-param", "DDP-Unused-Parameters"):
        proc = run_cli("signatures", query, "-f", "json")
        assert proc.returncode == 0, (query, proc.stderr)
        assert json.loads(proc.stdout)["id"] == "ddp-unused-parameters"


def test_a_part_naming_several_lists_them_and_exits_2(library):
    several = [i for i in sorted(library.signatures) if "nccl" in i]
    assert len(several) > 8
    proc = run_cli("signatures", "nccl")
    assert proc.returncode == 2 and proc.stdout == b""
    [error] = [line for line in proc.stderr.decode().splitlines() if "note:" not in line]
    assert error.startswith(f"rootrank: 'nccl' matches {len(several)} signatures: ")
    assert ", ".join(several[:8]) in error and f"and {len(several) - 8} more" in error


def test_a_part_of_several_ids_is_not_taken_for_the_one_it_starts(library):
    # "oom" starts only oom-reaper-reaped but is in cuda-oom, host-oom-killer...: list them
    several = [i for i in sorted(library.signatures) if "oom" in i]
    assert "cuda-oom" in several and len(several) > 1
    proc = run_cli("signatures", "oom")
    assert proc.returncode == 2 and proc.stdout == b""
    assert f"'oom' matches {len(several)} signatures: " in proc.stderr.decode()
    assert "cuda-oom" in proc.stderr.decode()


def test_a_part_naming_none_offers_the_closest_ids_and_exits_2():
    proc = run_cli("signatures", "cuda-omm")
    assert proc.returncode == 2 and proc.stdout == b""
    [error] = [line for line in proc.stderr.decode().splitlines() if "note:" not in line]
    assert error.startswith("rootrank: no signature id matches 'cuda-omm'; closest ids: cuda-oom")


def test_the_listing_is_unchanged_without_an_id(library):
    proc = run_cli("signatures", "-f", "json")
    assert proc.returncode == 0
    assert sorted(row["id"] for row in json.loads(proc.stdout)) == sorted(library.signatures)

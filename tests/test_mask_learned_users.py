"""A user name from a home or HPC user folder on any input line is masked on every shown line,
whatever the file order and whether or not that line is shown; never inside a URL or a word."""

from __future__ import annotations

import json

from conftest import run_cli

from rootrank.mask import Masker, learn_users

OOM = (
    "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
    " user kwalsh ran this\n"
)


def test_learn_users_reads_every_line_of_a_block():
    users: set[str] = set()
    learn_users(
        "step 1 loss 2.0\n"
        "[rank1]: loading /home/kwalsh/ckpt/model.pt\n"
        "cp /scratch/users/mtan/run1/out.log /data/imagenet/train\n"
        "https://pytorch.org/docs/stable/notes/cuda.html\n",
        users,
    )
    assert users == {"kwalsh", "mtan"}


def test_a_name_on_a_line_not_shown_is_masked_on_the_shown_line(tmp_path):
    log = tmp_path / "oom.log"
    log.write_text("[rank1]: loading /home/kwalsh/ckpt/model.pt\n" + OOM)
    for fmt in ("text", "json"):
        out = run_cli("diagnose", str(log), "--format", fmt).stdout.decode()
        assert "kwalsh" not in out, fmt
        assert "user <user> ran this" in out, fmt
    d = json.loads(run_cli("diagnose", str(log), "--format", "json").stdout)
    assert d["root_cause"]["failure_class"] == "cuda-oom" and d["initiating_rank"] == 1
    assert "user kwalsh ran this" in run_cli("diagnose", str(log), "--no-mask").stdout.decode()


def test_the_file_order_does_not_change_what_is_masked(tmp_path):
    shown = tmp_path / "a.log"
    shown.write_text(OOM)
    named = tmp_path / "b.log"
    named.write_text("[rank0]: data under /scratch/kwalsh/tokens, 8 shards\n")
    for order in ((shown, named), (named, shown)):
        out = run_cli("diagnose", *map(str, order), "--format", "json").stdout.decode()
        assert "kwalsh" not in out
        assert "user <user> ran this" in out


def test_a_learned_name_is_kept_inside_urls_and_words(tmp_path):
    log = tmp_path / "url.log"
    log.write_text(
        "[rank0]: Traceback (most recent call last):\n"
        '[rank0]:   File "/scratch/notes/run1/train.py", line 5, in <module>\n'
        "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
        " See documentation for Memory Management "
        " (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)\n"
    )
    out = run_cli("diagnose", str(log)).stdout.decode()
    assert "/scratch/<user>/run1/train.py:5" in out
    assert "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)" in out
    m = Masker()
    m.learn({"dave"})
    assert m.text("/opt/envs/dave/bin/python") == "/opt/envs/<user>/bin/python"
    assert m.text("see https://docs.python.org/3/dave/page.html") == (
        "see https://docs.python.org/3/dave/page.html"
    )
    assert m.text("davenport /x/davey/y user dave") == "davenport /x/davey/y user <user>"

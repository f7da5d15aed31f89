"""Every blank an entry shows is closed: ``<train.py>``, never ``<train.py`` (round-12 trial,
item 11: "add --max-steps 200 if <train.py takes it"). The whole library's fix steps and
verification commands are rendered as :func:`rootrank.entry.fill_entry` renders them
(:func:`~rootrank.entry.render`, :func:`~rootrank.entry.commands.fit`,
:func:`~rootrank.entry.commands.ready`) for launches the log may or may not show."""

from __future__ import annotations

import json
import re

import pytest
from conftest import ROOT, run_cli

from rootrank.entry import render
from rootrank.entry.commands import Launch, fit, ready

#: The launches an entry is rendered for: nothing known, one process, a torchrun job whose
#: script the log never names, one whose command and script it shows, a two-node DeepSpeed job.
LAUNCHES = [
    Launch(None, None, None, None, None),
    Launch(None, None, None, None, None, processes="one"),
    Launch("torchrun", None, None, None, 4, processes="several"),
    Launch(
        "torchrun",
        "torchrun --nproc-per-node=4 pretrain.py --lr 1",
        "pretrain.py",
        4,
        4,
        known=frozenset({"pretrain.py"}),
        processes="several",
    ),
    Launch(
        "deepspeed",
        None,
        "pretrain.py",
        8,
        16,
        known=frozenset({"pretrain.py"}),
        multi_node=True,
        nodes=2,
        processes="several",
    ),
]

#: A ``<`` that opens a blank: not ``numpy<2``, ``1<<30``, ``< input`` or ``<(cmd)``.
_OPEN = re.compile(r"(?<![\w<])<(?![\s<(=&-])")


def unclosed_blanks(text: str) -> list[str]:
    """The blanks of ``text`` whose ``<`` is not closed by a ``>`` before the next ``<`` or
    the end of the line (a blank inside a blank counts as unclosed)."""
    bad = []
    for m in _OPEN.finditer(text):
        nxt = re.search(r"[<>\n]", text[m.end() :])
        if nxt is None or nxt.group(0) != ">":
            bad.append(text[max(0, m.start() - 30) : m.start() + 40])
    return bad


def test_the_checker_finds_an_unclosed_blank_and_passes_shell_and_versions():
    assert len(unclosed_blanks("python <train.py  # (add --x if <train.py takes it)")) == 2
    assert unclosed_blanks("py-spy dump --pid <pid of rank <rank>>") != []
    assert unclosed_blanks("pip install 'numpy<2' && x=$((1<<30)) && cat < in.txt") == []


def test_every_rendered_step_and_verify_of_the_library_closes_its_blanks(library):
    bad: list[str] = []
    rendered = 0
    for sig in library.signatures.values():
        for variant in sig.fix.get("variants") or [sig.fix]:
            for launch in LAUNCHES:
                texts = [fit(render(s, {}), launch) for s in variant.get("steps", [])]
                verify = render(variant.get("verify", sig.verify), {})
                texts.append(ready(fit(verify, launch, verify=True), launch))
                for text in texts:
                    rendered += 1
                    bad += [f"{sig.id}/{variant.get('id')}: {b!r}" for b in unclosed_blanks(text)]
    assert rendered > 5000  # every signature, every variant, every launch
    assert bad == []


@pytest.mark.parametrize(
    "command, expected",
    [
        (
            "CUDA_LAUNCH_BLOCKING=1 python train.py --max-steps 200  # no device-side assert",
            "CUDA_LAUNCH_BLOCKING=1 python <train.py>  # no device-side assert"
            " (add --max-steps 200 if <train.py> takes it, for a short run)",
        ),
        ("python train.py --help", "python <train.py>  # (add --help if <train.py> takes it)"),
        (
            "python scripts/train.py --resume",
            "python <scripts/train.py>  # (add --resume if <train.py> takes it)",
        ),
    ],
)
def test_an_option_moved_to_the_comment_names_the_script_as_a_closed_blank(command, expected):
    assert ready(command, Launch(None, None, None, None, None)) == expected


def test_an_option_moved_to_the_comment_names_a_known_script_as_it_is():
    launch = Launch(None, None, "train.py", None, None, known=frozenset({"train.py"}))
    assert ready("python train.py --max-steps 9  # ok", launch) == (
        "python train.py  # ok (add --max-steps 9 if train.py takes it, for a short run)"
    )


def test_an_unknown_initiating_rank_is_a_phrase_not_a_blank_inside_a_blank():
    text = "Rank {initiating_rank} is behind: py-spy dump --pid <pid of rank {initiating_rank}>"
    assert render(text, {}) == (
        "The initiating rank is behind: py-spy dump --pid <pid of the initiating rank>"
    )
    assert (
        render(text, {"initiating_rank": 3})
        == "Rank 3 is behind: py-spy dump --pid <pid of rank 3>"
    )


def test_the_diagnosis_of_a_device_assert_closes_the_script_blank():
    log = ROOT / "signatures" / "cuda" / "cuda-device-assert-triggered.positive.log"
    proc = run_cli("diagnose", str(log))
    assert proc.returncode == 0, proc.stderr.decode()
    verify = next(x for x in proc.stdout.decode().splitlines() if x.startswith("Verify:"))
    assert verify.endswith(
        "<train.py>  # no device-side assert (add --max-steps 200 if <train.py> takes it,"
        " for a short run)"
    )


#: Megatron core's rerun state machine (rerun_state_machine.py, validate_result) raising with
#: reruns disabled: its iteration is ``current_iteration``, -1 until the training loop sets it.
_MEGATRON_NAN = (
    "[rank2]: Traceback (most recent call last):\n"
    '[rank2]:   File "/work/Megatron-LM/pretrain_gpt.py", line 290, in <module>\n'
    "[rank2]:     pretrain(\n"
    "[rank2]: RuntimeError: Rank 2, node gpu-07, device 2, iteration {it}: Unexpected result nan"
    " (message='found NaN in local grad norm for bucket #0 in backward pass before data-parallel"
    " communication collective')\n"
)


@pytest.mark.parametrize(
    "iteration, said", [("-1", "the failing iteration"), ("118", "iteration 118")]
)
def test_megatrons_untracked_iteration_minus_one_is_not_quoted_as_an_iteration(
    tmp_path, iteration, said
):
    """Round-12 trial, item 11: "no 'found NaN in local' on any rank past iteration -1"."""
    log = tmp_path / "train.log"
    log.write_text(_MEGATRON_NAN.format(it=iteration), encoding="utf-8")
    proc = run_cli("diagnose", str(log), "--format", "json", "--no-mask")
    assert proc.returncode == 0, proc.stderr.decode()
    d = json.loads(proc.stdout)
    assert d["root_cause"]["signature"] == "loss-or-grad-nan" and d["initiating_rank"] == 2
    assert d["root_cause"]["verify"] == (
        "<your launch command>  # rerun from the last checkpoint: no 'found NaN in local' on"
        f" any rank past {said}"
    )
    assert "iteration -1" not in json.dumps(d["root_cause"]["fix"])

"""The ``rootrank`` command as a user types it: formats, exit codes, folders, stdin."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT, run_cli

from rootrank import cli
from rootrank.extras import install_hint

OOM = ROOT / "signatures" / "memory" / "cuda-oom.positive.log"


def test_diagnose_json_contract_and_exit_code():
    proc = run_cli("diagnose", str(OOM), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    d = json.loads(proc.stdout)
    assert d["schema"] == "rootrank.diagnosis/1"
    assert d["root_cause"]["signature"] == "cuda-oom"
    assert d["initiating_rank"] == 5
    assert d["root_cause"]["evidence"][0]["line"] == 9


def test_text_report_order_and_no_colour_when_piped():
    proc = run_cli("diagnose", str(OOM))
    out = proc.stdout.decode()
    assert proc.returncode == 0
    assert "\x1b[" not in out
    # The verdict first (root cause, rank and host, one-line fix, verification), then details.
    lines = out.splitlines()
    assert lines[0].startswith("Root cause: CUDA out of memory") and "rank 5" in lines[0]
    assert lines[2].startswith("Fix: ") and lines[3].startswith("Verify: ")
    order = [
        out.index(h)
        for h in ("Root cause:", "Verify:", "Details", "Initiating rank: 5", "Collateral:")
    ]
    order += [
        out.index("\nFix", order[-1]),  # "Fix:" or "Fix (for this log, because ...):"
        out.index("Confirm:"),
    ]  # the full fix after the details
    assert order == sorted(order)


def test_markdown_report():
    proc = run_cli("diagnose", str(OOM), "--format", "markdown")
    out = proc.stdout.decode()
    assert out.startswith("## Root cause: CUDA out of memory")
    assert "### Initiating rank" in out and "**Rank 5**" in out


def test_stdin_and_nothing_found_exit_code():
    proc = run_cli("diagnose", "-", stdin=b"step 1 loss 0.5\nstep 2 loss 0.4\n")
    assert proc.returncode == 1
    assert "No known failure found." in proc.stdout.decode()


def test_folder_of_per_rank_files_takes_the_rank_from_the_path(tmp_path):
    run = tmp_path / "logs" / "abc123" / "attempt_0"
    for r in range(3):
        (run / str(r)).mkdir(parents=True)
        (run / str(r) / "stdout.log").write_text(f"step 1 loss 0.5 on local rank {r}\n")
    (run / "2" / "stderr.log").write_text(
        "Traceback (most recent call last):\n"
        '  File "/home/user/proj/train.py", line 10, in <module>\n'
        "    x = torch.empty(1 << 40, device='cuda')\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 TiB. GPU 2 has a total capacity of 79.14 GiB of which 70.00 GiB is free.\n"
    )
    proc = run_cli("diagnose", str(tmp_path / "logs"), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    d = json.loads(proc.stdout)
    assert d["initiating_rank"] == 2
    assert d["root_cause"]["evidence"][0]["line"] == 4
    assert d["root_cause"]["evidence"][0]["path"].endswith("attempt_0/2/stderr.log")


def test_missing_file_is_one_readable_line_and_exit_2():
    proc = run_cli("diagnose", "/nonexistent/train.log")
    assert proc.returncode == 2
    err = proc.stderr.decode().strip().splitlines()
    assert err == ["rootrank: /nonexistent/train.log: no such file or folder"]


def test_help_documents_exit_codes():
    proc = run_cli("diagnose", "--help")
    out = proc.stdout.decode()
    assert "0  a root cause was diagnosed" in out
    assert "1  no known failure found" in out
    assert "2  usage or input error" in out


def test_signatures_listing():
    proc = run_cli("signatures", "--format", "json")
    rows = json.loads(proc.stdout)
    assert "cuda-oom" in {r["id"] for r in rows}


def test_bundled_examples_are_diagnosed():
    hang = json.loads(
        run_cli("diagnose", str(ROOT / "examples" / "multi-rank-hang.log"), "-f", "json").stdout
    )
    assert hang["root_cause"]["failure_class"] == "collective-desync"
    assert hang["initiating_rank"] == 2
    chained = json.loads(
        run_cli("diagnose", str(ROOT / "examples" / "chained-traceback.log"), "-f", "json").stdout
    )
    assert chained["root_cause"]["failure_class"] == "dataloader-worker-killed-or-shm"
    assert chained["initiating_rank"] == 1
    ddp = json.loads(
        run_cli(
            "diagnose", str(ROOT / "examples" / "ddp-unused-parameters.log"), "-f", "json"
        ).stdout
    )
    assert ddp["root_cause"]["failure_class"] == "ddp-unused-parameters"
    assert ddp["initiating_rank"] == 2


def test_eval_says_na_when_no_case_has_a_rank_label(tmp_path):
    case = tmp_path / "c01-oom"
    case.mkdir()
    src = ROOT / "signatures" / "memory" / "cuda-oom.positive.log"
    (case / "input.log").write_bytes(src.read_bytes())
    (case / "expected.json").write_text(
        '{"failure_class": "cuda-oom", "also_acceptable": [], "initiating_rank": null}'
    )
    proc = run_cli("eval", str(tmp_path))
    out = proc.stdout.decode()
    assert proc.returncode == 0, proc.stderr
    assert "class accuracy on the failing runs: 100.0% (1/1)" in out
    assert "initiating-rank accuracy: n/a (0/0 labelled)" in out


def test_serve_without_the_lsp_extra_is_one_line_and_exit_2():
    # lsprotocol blocked as if `pip install .` had been run without the [lsp] extra.
    code = "import sys; sys.modules['lsprotocol'] = None; from rootrank.cli import main; sys.exit(main(['serve']))"
    proc = subprocess.run(
        [sys.executable, "-c", code],
        check=False,
        capture_output=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stderr.decode().strip().splitlines() == [
        "rootrank: the language server needs pygls and lsprotocol (lsprotocol is missing): "
        + install_hint("lsp")
    ]


def test_legacy_output_encoding_replaces_what_it_cannot_print(tmp_path):
    log = tmp_path / "emoji.log"
    oom = (ROOT / "signatures" / "memory" / "cuda-oom.positive.log").read_text(encoding="utf-8")
    log.write_text("gloo: GLHF! \U0001f3d6\ufe0f\n" + oom, encoding="utf-8")
    env = {**os.environ, "PYTHONIOENCODING": "cp1252"}
    for fmt in ("text", "json"):
        proc = subprocess.run(
            [sys.executable, "-m", "rootrank", "diagnose", "--format", fmt, str(log)],
            check=False,
            capture_output=True,
            env=env,
            timeout=120,
            cwd=ROOT,
        )
        assert proc.returncode == 0, proc.stderr
        assert b"Traceback" not in proc.stderr
    assert json.loads(proc.stdout.decode("cp1252"))["root_cause"]["signature"] == "cuda-oom"


def test_a_missing_signature_folder_is_an_input_error(tmp_path):
    proc = run_cli(
        "diagnose",
        "--signatures",
        str(tmp_path / "nope"),
        str(ROOT / "examples" / "multi-rank-hang.log"),
    )
    assert proc.returncode == 2
    assert (
        proc.stderr.decode().strip()
        == f"rootrank: --signatures {tmp_path / 'nope'}: no such folder"
    )


def test_verify_blanks_are_pointed_out_in_text_and_markdown(tmp_path):
    # one rank's device-mismatch line: nothing in the log tells how many processes per node,
    # and its class has no standalone check (an OOM's is a memory query: r25d)
    oom = tmp_path / "device.log"
    oom.write_text(
        "[rank1]: RuntimeError: Expected all tensors to be on the same device, but found at "
        "least two devices, cuda:1 and cpu!\n"
    )
    text = run_cli("diagnose", str(oom)).stdout.decode().splitlines()
    verify = next(i for i, line in enumerate(text) if line.startswith("Verify: "))
    assert "--nproc-per-node=gpu <train.py>" in text[verify]
    assert (
        text[verify + 1] == "  (fill in <train.py> (the script your launch runs) before running it)"
    )
    md = run_cli("diagnose", str(oom), "--format", "markdown").stdout.decode()
    assert "Fill in `<train.py>` (the script your launch runs) before running it." in md
    from rootrank.report import unfilled_placeholders

    assert unfilled_placeholders("python a.py 2>&1 | grep -c 'x < 3' > out.txt") == []
    assert unfilled_placeholders("torchrun <gpus> a.py --steps <failing step + 10> <gpus>") == [
        "<gpus>",
        "<failing step + 10>",
    ]


def test_eval_gates_on_a_minimum(tmp_path):
    case = tmp_path / "c01-oom"
    case.mkdir()
    (case / "input.log").write_text("step 1 loss 0.5\n")  # nothing to find: a miss
    (case / "expected.json").write_text('{"failure_class": "cuda-oom", "initiating_rank": null}')
    assert run_cli("eval", str(tmp_path)).returncode == 0
    gated = run_cli("eval", str(tmp_path), "--min-class", "0.5")
    assert gated.returncode == 1
    assert gated.stderr.decode().strip() == "rootrank: below the bar: class accuracy 0.0% < 50.0%"


def test_closed_standard_streams_and_bad_bars_are_one_line_errors(tmp_path):
    hang = str(ROOT / "examples" / "multi-rank-hang.log")
    closed_out = subprocess.run(
        [sys.executable, "-m", "rootrank", "diagnose", hang],
        check=False,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        timeout=120,
        preexec_fn=lambda: os.close(1),
    )
    assert closed_out.returncode == 2
    assert (
        closed_out.stderr.decode().strip()
        == "rootrank: standard output is closed; nothing can be written"
    )
    closed_in = subprocess.run(
        [sys.executable, "-m", "rootrank", "diagnose", "-"],
        check=False,
        capture_output=True,
        timeout=120,
        preexec_fn=lambda: os.close(0),
    )
    assert closed_in.returncode == 2
    assert (
        closed_in.stderr.decode().strip()
        == "rootrank: standard input is closed; nothing to read from '-'"
    )
    bar = run_cli("eval", str(tmp_path), "--min-class", "96")
    assert bar.returncode == 2
    assert "must be between 0 and 1" in bar.stderr.decode()
    assert (
        run_cli("eval", str(tmp_path / "nope")).stderr.decode().strip()
        == f"rootrank: {tmp_path / 'nope'}: no such folder"
    )


def test_an_unclassified_failure_exits_3_not_like_a_healthy_run():
    log = (
        b"[rank1]: Traceback (most recent call last):\n"
        b'[rank1]:   File "/home/u/train.py", line 12, in <module>\n'
        b"[rank1]:     raise MyPipelineFault('shard 7 lost')\n"
        b"[rank1]: MyPipelineFault: shard 7 lost\n"
    )
    proc = run_cli("diagnose", "-", "--format", "json", stdin=log)
    assert proc.returncode == 3
    out = json.loads(proc.stdout)
    assert out["root_cause"] is None
    assert out["unclassified"]["title"] == "MyPipelineFault: shard 7 lost"
    assert out["unclassified"]["rank"] == 1
    assert out["unclassified"]["evidence"][0]["line"] == 4
    text = run_cli("diagnose", "-", stdin=log).stdout.decode().splitlines()
    assert text[0] == "Unclassified failure on rank 1: MyPipelineFault: shard 7 lost"
    assert text[1] == "  at <stdin>:4" and "No known failure" not in "\n".join(text)
    md = run_cli("diagnose", "-", "--format", "markdown", stdin=log).stdout.decode()
    assert md.startswith("## rootrank: unclassified failure on rank 1\n")


def test_the_headline_names_a_rank_only_when_it_started_the_failure():
    # Three ranks report a watchdog timeout and none is singled out: the headline names no
    # rank (the victims are in the details), where it used to say "on rank 0".
    from rootrank.engine import diagnose_text
    from rootrank.report import to_text

    text = "".join(
        f"[rank{r}]:[E1129 10:00:0{r}.000 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught"
        " collective operation timeout: WorkNCCL(SeqNum=88, OpType=ALLREDUCE, NumelIn=1,"
        " NumelOut=1, Timeout(ms)=600000) ran for 600010 milliseconds before timing out.\n"
        for r in range(3)
    )
    diag = diagnose_text(text, "t.log", mask=False)
    assert diag.initiating_rank is None
    head = to_text(diag).splitlines()[0]
    assert head.startswith("Root cause: ") and " on rank" not in head


@pytest.mark.parametrize(
    "words",
    [
        ["diagnose", "a.log", "b.log", "--format", "json", "--no-mask", "--signatures", "x"],
        ["diagnose", "a.log", "--form", "markdown", "--all-stacks", "--color", "never"],
        ["eval", "cases", "--min-class", "0.9", "--min-rank", "0.5", "-f", "json"],
        ["signatures", "cuda-oom", "--format", "json"],
        ["signatures", "--check", "dir"],
        ["serve"],
        ["run", "--stall", "60", "--on-stall", "dump", "--log", "x.log", "--", "torchrun", "t.py"],
        ["watch", "logs", "-", "--progress-every", "5", "--format", "json"],
        ["triage", "archive", "--format", "html", "--since", "2026-11-01", "--keep-hosts"],
    ],
)
def test_the_parser_of_one_command_parses_and_helps_as_the_whole_parser(words):
    """cli._parser(command) builds only that subcommand (a start-up cost, issue 11): it must
    read the same arguments and show the same help as the parser of every subcommand."""
    whole, alone = cli._parser(), cli._parser(words[0])
    assert vars(alone.parse_args(words)) == vars(whole.parse_args(words))
    assert alone._subparsers is not None and whole._subparsers is not None
    (alone_sub,) = alone._subparsers._group_actions
    (whole_sub,) = whole._subparsers._group_actions
    assert list(alone_sub.choices) == [words[0]]
    assert alone_sub.choices[words[0]].format_help() == whole_sub.choices[words[0]].format_help()
    assert list(whole_sub.choices) == list(cli.COMMANDS)


def test_a_masked_user_in_the_verify_command_says_how_to_see_it(tmp_path):
    """New-user trial r18 finding 6: a verify command whose paths carry the masked ``<user>``
    says that ``--no-mask`` shows the real name, and with it the command has no blank."""
    log = tmp_path / "oom.log"
    log.write_text(
        "+ torchrun --nproc-per-node=2 /home/alice/proj/train.py --bs 8\n"
        "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. "
        "GPU 1 has a total capacity of 79.15 GiB of which 1.21 GiB is free.\n"
    )
    text = run_cli("diagnose", str(log)).stdout.decode().splitlines()
    verify = next(i for i, line in enumerate(text) if line.startswith("Verify: "))
    assert "torchrun --nproc-per-node=2 /home/<user>/proj/train.py --bs 8" in text[verify]
    assert text[verify + 1] == (
        "  (fill in <user> before running it; `--no-mask` shows the real <user>)"
    )
    raw = run_cli("diagnose", "--no-mask", str(log)).stdout.decode().splitlines()
    verify = next(i for i, line in enumerate(raw) if line.startswith("Verify: "))
    assert "/home/alice/proj/train.py --bs 8" in raw[verify]
    assert not raw[verify + 1].startswith("  (fill in")

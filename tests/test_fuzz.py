"""Property tests (hypothesis) for ingestion, rank attribution, traceback parsing, masking and
the whole diagnosis.

The run is bounded: ``ROOTRANK_FUZZ_EXAMPLES`` examples per property (default 40, about a
minute in all on 2 cores), derandomised so CI is reproducible, no example database written.
A longer local run: ``ROOTRANK_FUZZ_EXAMPLES=2000 ROOTRANK_FUZZ_RANDOM=1 pytest tests/test_fuzz.py``.
"""

from __future__ import annotations

import io
import os
import re
import string
from pathlib import Path

from conftest import ROOT
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from rootrank.engine import diagnose_stream, diagnose_text
from rootrank.ingest import InputError, logical_lines, read_blocks
from rootrank.mask import EMAIL, STARS, Masker
from rootrank.ranks import RankTagger
from rootrank.tracebacks import TracebackReader

FUZZ = settings(
    max_examples=int(os.environ.get("ROOTRANK_FUZZ_EXAMPLES", "40")),
    deadline=None,
    database=None,
    derandomize=not os.environ.get("ROOTRANK_FUZZ_RANDOM"),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

FIXTURES = sorted((ROOT / "signatures").glob("*/*.positive.log"))
FIXTURE_LINES = sorted({ln for p in FIXTURES for ln in p.read_text(encoding="utf-8").splitlines()})

PREFIXES = [
    "",
    "[rank3]: ",
    "[rank12]:",
    "3: ",
    "[1,3]<stderr>:",
    "[default5]:",
    "node01: ",
    "\x1b[1;31m",
    "\x1b[0m",
    "[2024-11-29 10:00:00,000] [INFO] ",
]
NOISE = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=80)
LOG_LINE = st.one_of(
    st.sampled_from(FIXTURE_LINES),
    st.builds(lambda p, t: p + t, st.sampled_from(PREFIXES), NOISE),
    st.builds(lambda p, t: p + t, st.sampled_from(PREFIXES), st.sampled_from(FIXTURE_LINES)),
    st.sampled_from(["", "\r", "progress 10%\rprogress 100%", "a" * 3000, "\x00\x00", "\t"]),
)
LOG_TEXT = st.lists(LOG_LINE, max_size=60).map(lambda ls: "\n".join(ls))


def _line_count(text: str) -> int:
    return text.count("\n") + 1


# -- ingestion -------------------------------------------------------------------------------


@FUZZ
@given(
    data=st.one_of(
        st.binary(max_size=4096),
        LOG_TEXT.map(lambda t: t.encode("utf-8")),
        LOG_TEXT.map(lambda t: b"\xff\xfe" + t.replace("\n", "\r\n").encode("utf-16-le")),
        st.lists(
            st.sampled_from([b"\n", b"\r\n", b"\x00", b"\xc3", b"\xff", b"ok", b"\x1b[0m"]),
            max_size=200,
        ).map(b"".join),
    )
)
def test_ingestion_never_raises_and_numbers_lines_in_order(data: bytes) -> None:
    try:
        blocks = list(read_blocks(io.BytesIO(data), block_bytes=512))
    except InputError as exc:
        assert "\n" not in str(exc)
        return
    expected_next = 1
    for block in blocks:
        assert block.first_line == expected_next
        assert len(block.lower_bytes.decode("utf-8", errors="replace")) == len(block.text)
        physical = block.text.split("\n")
        for offset, raw in enumerate(physical):
            for line in logical_lines(block.first_line + offset, raw):
                assert line.number == block.first_line + offset
        expected_next += len(physical)
    if data and not data.startswith((b"\xff\xfe", b"\xfe\xff")) and b"\x00" not in data:
        # a line ends in "\n", or in "\r" alone in a log with no "\n" (rootrank.ingest)
        assert expected_next - 1 <= data.count(b"\n") + data.count(b"\r") + 1


# -- rank attribution --------------------------------------------------------------------------


@FUZZ
@given(text=NOISE, number=st.integers(1, 10**7))
def test_rank_tagger_never_raises(text: str, number: int) -> None:
    tagged = RankTagger().tag(text, number)
    assert tagged.rank is None or tagged.rank >= 0


@FUZZ
@given(rank=st.integers(0, 4095), body=st.sampled_from(FIXTURE_LINES))
def test_rank_prefix_gives_the_rank(rank: int, body: str) -> None:
    # A body that carries its own rank tag (rootrank's, torch's, Open MPI's "[1,3]<stdout>:")
    # would name its own rank.
    if (
        body.lstrip().startswith(("[rank", "[default"))
        or body[:1].isdigit()
        or re.match(r"\[\d+,\d+\]<", body)
    ):
        body = "loss 2.31"
    tagged = RankTagger().tag(f"[rank{rank}]: {body}", 7)
    assert tagged.rank == rank


# -- traceback parsing -------------------------------------------------------------------------

IDENT = st.text(alphabet=string.ascii_letters + "_", min_size=1, max_size=12)
FRAMES = st.lists(
    st.tuples(
        st.builds(
            lambda parts: "/" + "/".join(parts) + ".py", st.lists(IDENT, min_size=1, max_size=4)
        ),
        st.integers(1, 100_000),
        IDENT,
    ),
    min_size=1,
    max_size=8,
)


@FUZZ
@given(
    frames=FRAMES,
    exc=IDENT,
    message=st.text(alphabet=string.printable.strip(), max_size=60),
    before=st.lists(st.sampled_from(["step 1 loss 2.0", "", "INFO: ok"]), max_size=5),
)
def test_traceback_is_parsed_exactly(frames, exc: str, message: str, before: list[str]) -> None:
    exc_type = exc[:1].upper() + exc[1:] + "Error"
    lines = [*before, "Traceback (most recent call last):"]
    for file, line, func in frames:
        lines += [f'  File "{file}", line {line}, in {func}', "    x = f(y)"]
    lines.append(f"{exc_type}: {message}".rstrip())
    reader = TracebackReader()
    found = [e for n, ln in enumerate(lines, 1) if (e := reader.feed(ln, n)) is not None]
    assert len(found) == 1
    got = found[0]
    assert got.type == exc_type and got.message == message.strip()
    assert got.log_line == len(lines)
    assert [(f.file, f.line, f.func) for f in got.frames] == [(f, ln, fn) for f, ln, fn in frames]


@FUZZ
@given(lines=st.lists(LOG_LINE, max_size=80))
def test_traceback_reader_never_raises(lines: list[str]) -> None:
    reader = TracebackReader()
    for n, ln in enumerate(lines, 1):
        exc = reader.feed(ln, n)
        if exc is not None:
            assert 1 <= exc.log_line <= n


# -- the whole diagnosis -----------------------------------------------------------------------


@FUZZ
@given(text=LOG_TEXT, mask=st.booleans())
def test_diagnosis_never_raises_and_points_inside_the_document(text: str, mask: bool) -> None:
    diag = diagnose_text(text, "fuzz.log", mask=mask).to_dict()
    total = _line_count(text)
    assert 0 <= diag["lines_read"] <= total
    evidence = [e for f in diag["findings"] for e in f["evidence"]]
    if diag["root_cause"]:
        evidence += diag["root_cause"]["evidence"]
    lines = text.split("\n")
    for e in evidence:
        assert 1 <= e["line"] <= total
        if e["column_start"] is not None:
            assert 0 <= e["column_start"] <= e["column_end"] <= len(lines[e["line"] - 1])
    if diag["initiating_rank"] is not None:
        assert diag["initiating_rank"] >= 0


@FUZZ
@given(data=st.binary(max_size=8192))
def test_diagnosis_of_bytes_is_a_result_or_an_input_error(data: bytes) -> None:
    try:
        diag = diagnose_stream(io.BytesIO(data), "fuzz.bin")
    except InputError as exc:
        assert str(exc) and "\n" not in str(exc)
        return
    assert diag.lines_read >= 0


UNRELATED = st.sampled_from(
    [
        "step 1234 loss 2.3141",
        "",
        "INFO: saving checkpoint to ckpt/step_1000",
        "Epoch 3:  12%|#2        | 120/1000 [00:12<01:30,  9.80it/s]",
        "wandb: Syncing run sunny-dawn-12",
        "{'loss': 1.9821, 'learning_rate': 0.0002, 'epoch': 0.12}",
    ]
)


@FUZZ
@given(
    fixture=st.sampled_from(FIXTURES),
    inserts=st.lists(st.tuples(st.integers(0, 400), UNRELATED), max_size=12),
)
@example(  # a foreign line inside torchelastic's "Root Cause" table must not lose the rank
    fixture=ROOT / "signatures" / "process" / "worker-sigkill-exit.positive.log",
    inserts=[(12, "step 1234 loss 2.3141")],
)
@example(  # a logger's "INFO: ..." line inside a traceback is not its exception line
    fixture=ROOT / "signatures" / "launch" / "ray-actor-died.positive.log",
    inserts=[
        (1, "INFO: saving checkpoint to ckpt/step_1000"),
        (3, "wandb: Syncing run sunny-dawn-12"),
    ],
)
@example(  # a step line after every error shows no warning was trained past before them
    fixture=ROOT / "signatures" / "nccl" / "nccl-net-plugin-mismatch.positive.log",
    inserts=[(142, "step 1234 loss 2.3141")],
)
def test_unrelated_lines_do_not_change_the_diagnosis(fixture: Path, inserts) -> None:
    lines = fixture.read_text(encoding="utf-8").splitlines()
    base = diagnose_text("\n".join(lines) + "\n", fixture.name, mask=False)
    at: dict[int, list[str]] = {}
    for pos, text in inserts:
        at.setdefault(pos % (len(lines) + 1), []).append(text)
    mixed: list[str] = []
    new_number: dict[int, int] = {}
    for i, line in enumerate(lines):
        mixed += at.get(i, [])
        mixed.append(line)
        new_number[i + 1] = len(mixed)
    mixed += at.get(len(lines), [])
    got = diagnose_text("\n".join(mixed) + "\n", fixture.name, mask=False)
    if base.root_cause is None:
        assert got.root_cause is None
        return
    assert got.root_cause is not None
    assert got.root_cause.signature == base.root_cause.signature
    assert got.initiating_rank == base.initiating_rank
    assert [e.line for e in got.root_cause.evidence] == [
        new_number[e.line] for e in base.root_cause.evidence
    ]


# -- masking -----------------------------------------------------------------------------------

ALNUM = string.ascii_letters + string.digits
BODY = st.text(alphabet=ALNUM, min_size=40, max_size=40).filter(
    lambda s: any(c.isdigit() for c in s) and any(c.isupper() for c in s)
)
SECRET = st.one_of(
    BODY.map(lambda b: "h" + "f_" + b[:34]),
    BODY.map(lambda b: "gh" + "p_" + b[:36]),
    BODY.map(lambda b: "s" + "k-proj-" + b),
    st.text(alphabet=string.ascii_uppercase + string.digits, min_size=16, max_size=16).map(
        lambda b: "AK" + "IA" + b
    ),
    BODY.map(lambda b: "AI" + "za" + b[:35]),
    st.builds(lambda u, d: f"{u}@{d}.com", IDENT.map(str.lower), IDENT.map(str.lower)),
)
SEPARATOR = st.sampled_from(
    [" ", "=", ": ", "'", '"', "(", "[", ", ", "\t", " token=", " --token "]
)


@FUZZ
@given(text=LOG_TEXT)
def test_masking_is_idempotent(text: str) -> None:
    m = Masker()
    once = m.text(text)
    assert m.text(once) == once
    assert Masker().text(once) == once
    for line in text.split("\n")[:20]:
        single = m.text(line)
        assert m.text(single) == single


@FUZZ
@given(before=NOISE, sep1=SEPARATOR, secret=SECRET, sep2=SEPARATOR, after=NOISE)
def test_masking_never_leaks_a_token(
    before: str, sep1: str, secret: str, sep2: str, after: str
) -> None:
    line = before + sep1 + secret + sep2 + after
    out = Masker().text(line)
    if "@" in secret:
        assert secret not in out and secret.split("@")[0] + "@" not in out
        assert EMAIL in out or STARS in out
    else:
        tail = secret[-12:]
        assert secret not in out
        assert tail not in out or tail in before + sep1 + sep2 + after
        assert STARS in out


@FUZZ
@given(text=LOG_TEXT)
def test_masking_never_unmasks(text: str) -> None:
    # Placeholders already in the text (a log pasted twice, a masked report re-read) stay.
    marked = text + "\nHF_TOKEN=hf_*** host-7:1:1 [0] NCCL INFO x /home/<user>/a <email> ip-3"
    out = Masker().text(marked)
    for placeholder in ("HF_TOKEN=hf_***", "host-7:1:1", "/home/<user>/a", "<email>", "ip-3"):
        assert placeholder in out

"""The ``rootrank`` command.

Exit codes (also in ``--help``):
    0  a root cause was diagnosed
    1  no known failure found (healthy run)
    2  usage or input error (missing file, binary data, a device); for ``diagnose``, only
       when none of its inputs can be read (an unreadable one among readable ones is a
       warning on stderr and in the report, and the exit code is the diagnosis's)
    3  an unclassified failure only
    130 interrupted
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
from typing import BinaryIO, NoReturn

from rootrank import __version__

EXIT_DIAGNOSED = 0
EXIT_NOTHING_FOUND = 1
EXIT_INPUT_ERROR = 2
#: The log shows a failure (an exception) that no signature names: not a healthy run.
EXIT_UNCLASSIFIED = 3

_EPILOG = """\
exit codes:
  0  a root cause was diagnosed
  1  no known failure found (a healthy run)
  2  usage or input error (missing or unreadable file, binary data, a device), when no
     input could be read
  3  the log shows a failure (an exception) that no signature names (unclassified)
  130  interrupted (Ctrl-C)

An input that cannot be read (diagnose good.log missing.log) is named on stderr
("rootrank: missing.log: no such file") and in the report's warnings (JSON "warnings");
the inputs that can be read are still diagnosed, and the exit code is that diagnosis's
(0, 1 or 3). Exit 2 only when none of the inputs can be read.

A bad file in a --signatures folder is reported on stderr and skipped; the rest of the
library keeps working.

Nothing leaves the machine: rootrank opens no network connection and writes nothing
unless asked. Secrets, e-mail addresses, user names, IPs and host names are masked in
every output unless --no-mask is given.
"""


def _fraction(text: str) -> float:
    """An accuracy bar: a number from 0 to 1 (argparse type; raises ArgumentTypeError)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text} must be between 0 and 1 (0.9 for 90%)")
    return value


class _Parser(argparse.ArgumentParser):
    """Usage errors are one line (and exit code 2), like every other error."""

    def error(self, message: str) -> NoReturn:
        if message.endswith("required: PATH") and _stdin_has_data():
            # `cat train.log | rootrank diagnose`: say how to read the pipe (trial r15, 7)
            message += f"; standard input is a pipe or a file: read it with - (... | {self.prog} -)"
        self.exit(EXIT_INPUT_ERROR, f"rootrank: {message} (see '{self.prog} --help')\n")


def _stdin_has_data() -> bool:
    """Whether standard input is a pipe or a regular file (``cat x | ...``, ``< x``), not a
    terminal, ``/dev/null`` or closed: ``os.fstat(0)``'s mode; ``False`` on any error."""
    import stat

    try:
        mode = os.fstat(0).st_mode
    except (OSError, ValueError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISREG(mode)


def _terminal_columns() -> int:
    """The terminal's width as ``shutil.get_terminal_size().columns`` gives it (``$COLUMNS``
    when a positive whole number, else the width of the terminal on ``sys.__stdout__``, else
    80), without importing :mod:`shutil`: argparse's help formatter imports it for this one
    call, and with it ``bz2``, ``lzma``, ``zlib`` and ``fnmatch`` (~3 ms of every start;
    issue 11). A log whose compression needs them imports them where it is read."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns or 80  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 80
    return columns


class _RawFormatter(argparse.RawDescriptionHelpFormatter):
    """``argparse.RawDescriptionHelpFormatter`` with the width argparse would give it (the
    terminal's columns less 2), found by :func:`_terminal_columns`: the same help text."""

    def __init__(
        self,
        prog: str,
        indent_increment: int = 2,
        max_help_position: int = 24,
        width: int | None = None,
    ) -> None:
        if width is None:
            width = _terminal_columns() - 2
        super().__init__(prog, indent_increment, max_help_position, width)


#: The subcommands, in ``--help``'s order.
COMMANDS = ("diagnose", "eval", "signatures", "serve", "run", "watch", "triage")


def _parser(command: str | None = None) -> argparse.ArgumentParser:
    """The CLI's parser: with ``command`` (one of :data:`COMMANDS`, the first word of the
    arguments to parse), only that subcommand's parser, else every one.

    Arguments that begin with a subcommand's name can only be parsed by it or shown in its
    own help, usage and errors (the top-level parser has no option after the command, and a
    subcommand's name must be given whole), so the others are not built: argparse's
    ``add_argument`` sets up a help formatter each time, and the parsers of all seven
    subcommands took ~5 ms of every start (issue 11). Anything else (``--help``, a wrong or
    missing command) gets every subcommand."""
    p = _Parser(
        prog="rootrank",
        description="Find the root cause and the initiating rank of a failed multi-GPU training run.",
        epilog=_EPILOG,
        formatter_class=_RawFormatter,
    )
    p.add_argument("--version", action="version", version=f"rootrank {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    if command in (None, "diagnose"):
        d = sub.add_parser(
            "diagnose",
            help="diagnose log files, folders of per-rank logs, or - for standard input",
            epilog=_EPILOG,
            formatter_class=_RawFormatter,
        )
        d.add_argument(
            "paths", nargs="+", metavar="PATH", help="a log file, a folder of logs, or - (stdin)"
        )
        d.add_argument(
            "--format",
            "-f",
            choices=("text", "json", "markdown", "sarif", "github"),
            default="text",
        )
        d.add_argument(
            "--no-mask", action="store_true", help="show raw text (secrets and hosts unmasked)"
        )
        d.add_argument(
            "--signatures",
            action="append",
            default=[],
            metavar="DIR",
            help="an extra signature folder (repeatable)",
        )
        d.add_argument(
            "--all-stacks",
            action="store_true",
            help="show the fix's code for every stack, not only the one seen",
        )
        d.add_argument("--color", choices=("auto", "always", "never"), default="auto")

    if command in (None, "eval"):
        e = sub.add_parser(
            "eval",
            help="score the engine on labelled case folders (input.log + expected.json;"
            " the label format is in the README, Evaluation and speed)",
        )
        e.add_argument("paths", nargs="+", metavar="DIR")
        e.add_argument("--format", "-f", choices=("text", "json"), default="text")
        e.add_argument("--signatures", action="append", default=[], metavar="DIR")
        e.add_argument(
            "--min-class",
            type=_fraction,
            default=None,
            metavar="FRACTION",
            help="exit 1 when the class accuracy is below FRACTION (0..1), for CI gates",
        )
        e.add_argument(
            "--min-rank",
            type=_fraction,
            default=None,
            metavar="FRACTION",
            help="exit 1 when the initiating-rank accuracy is below FRACTION (0..1)",
        )
        e.add_argument(
            "--allow-skipped",
            action="store_true",
            help="with --min-class/--min-rank: pass although some case folders could not be"
            " scored (by default a skipped folder fails the gate: the figures leave it out)",
        )

    if command in (None, "signatures"):
        s = sub.add_parser(
            "signatures",
            help="list the failure library, show one entry (ID), or check a signature folder",
            epilog="ID may be part of an id (ddp-unused, sigfpe): it must name one signature; exit 2 "
            "when it names none (the closest ids are shown) or several (oom: they are listed).",
        )
        s.add_argument(
            "id",
            nargs="?",
            metavar="ID",
            help="show this signature's whole entry (an id or part of one)",
        )
        s.add_argument(
            "--check", metavar="DIR", help="validate a signature folder and report every problem"
        )
        s.add_argument("--format", "-f", choices=("text", "json"), default="text")

    if command in (None, "serve"):
        sub.add_parser("serve", help="run the language server over stdio (for editors)")
    if command in (None, "run", "watch"):
        _live_parsers(sub, command)
    if command in (None, "triage"):
        # fleet triage (needs rootrank[fleet])
        from rootrank.triage import command as triage_command

        triage_command.add_parser(sub)
    return p


def _seconds(text: str) -> float:
    """A positive number of seconds (argparse type; raises ArgumentTypeError)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text} must be more than 0 seconds")
    return value


def _live_parsers(sub, command: str | None = None) -> None:  # type: ignore[no-untyped-def]
    """``rootrank run`` and ``rootrank watch`` (docs/live.md); with ``command``, only that
    one (see :func:`_parser`)."""
    common = _Parser(add_help=False)
    common.add_argument(
        "--format",
        "-f",
        choices=("text", "json"),
        default="text",
        help="json: one event per line (stall, straggler, failure, exit)",
    )
    common.add_argument(
        "--stall",
        type=_seconds,
        default=None,
        metavar="SECONDS",
        help="report a stall after this long without progress (default: from the step "
        "interval, at least 180)",
    )
    common.add_argument(
        "--progress-every",
        type=_seconds,
        default=None,
        metavar="SECONDS",
        help="with --format json, a progress event at most this often while steps change",
    )
    common.add_argument(
        "--no-mask", action="store_true", help="show raw text (secrets and hosts unmasked)"
    )
    common.add_argument("--signatures", action="append", default=[], metavar="DIR")
    common.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    if command in (None, "run"):
        r = sub.add_parser(
            "run",
            parents=[common],
            help="run a training command and watch it live (-- CMD ARGS...)",
            usage="rootrank run [options] -- CMD ARGS...",
            epilog="exit code: the command's own (128+N when signal N ended it, 127 not found, "
            "126 not runnable); 2 for a usage error. See docs/live.md.",
        )
        r.add_argument("--log", metavar="FILE", help="also save the command's output to FILE")
        r.add_argument(
            "--on-stall",
            choices=("report", "dump"),
            default="report",
            help="dump: collect every rank's Python stack with py-spy when a stall is found",
        )
        r.add_argument("cmd", nargs=argparse.REMAINDER, metavar="CMD ARGS...")
    if command in (None, "watch"):
        w = sub.add_parser(
            "watch",
            parents=[common],
            help="follow log files or folders written by a running job",
            epilog="runs until Ctrl-C (exit 130), or reading only -, until its end: exit 0 when a "
            "failure was reported, 1 when none. See docs/live.md.",
        )
        w.add_argument(
            "paths", nargs="+", metavar="PATH", help="a log file, a folder of logs, or - (stdin)"
        )


def _library(extra: list[str]):  # type: ignore[no-untyped-def]
    from rootrank.signatures import load_library

    if not extra:
        from rootrank.engine import default_library

        return default_library()
    from rootrank.ingest import InputError

    for folder in extra:
        if not os.path.isdir(folder):
            what = "not a folder" if os.path.exists(folder) else "no such folder"
            raise InputError(f"--signatures {folder}: {what}")
        if not any(
            name.endswith((".yaml", ".yml")) for _, _, names in os.walk(folder) for name in names
        ):
            print(
                f"rootrank: warning: --signatures {folder}: no .yaml signature files in it",
                file=sys.stderr,
            )
    dirs: list[str | os.PathLike[str]] = list(extra)
    lib = load_library(dirs, strict=False)  # a bad file is reported and skipped
    for problem in lib.problems:
        print(f"rootrank: warning: {problem}", file=sys.stderr)
    return lib


def _readable_inputs(paths: list[str]) -> tuple[list[str], list[str], BinaryIO | None]:
    """(the inputs of ``diagnose`` that can be read, one problem line per input that
    cannot, the stream to read for ``-``): the path must exist and a folder hold logs
    (``engine.expand_paths``), a file opens and its head is text (``ingest.check_log``);
    ``-`` (standard input) must not be file names only (``engine.stdin_log``)."""
    from rootrank.engine import readable_paths, stdin_log
    from rootrank.ingest import InputError

    readable: list[str] = []
    problems: list[str] = []
    stdin: BinaryIO | None = None
    for path in paths:
        if path != "-":
            ok, bad = readable_paths([path])
            readable += ok
            problems += bad
            continue
        try:
            if stdin is None and not sys.stdin.isatty():
                stdin = stdin_log(sys.stdin.buffer)
        except InputError as exc:
            problems.append(str(exc))
        else:
            readable.append(path)
    return readable, problems, stdin


def _sarif_of_unread(args: argparse.Namespace, reason: str) -> None:
    """With ``--format sarif``, write the SARIF log of a run that read no log (``reason``, the
    error text, as its notification: :func:`rootrank.report_sarif.unread_input`) to stdout, so
    a CI step's redirected file is a valid log that says why; nothing for other formats."""
    if args.format != "sarif":
        return
    from rootrank.report_sarif import unread_input  # an error path only

    sys.stdout.write(unread_input(reason))


def _cmd_diagnose(args: argparse.Namespace) -> int:
    from rootrank import report
    from rootrank.engine import diagnose_paths

    readable, unreadable, stdin = _readable_inputs(args.paths)
    for problem in unreadable:
        print(f"rootrank: {problem}", file=sys.stderr)
    if not readable:
        _sarif_of_unread(args, "; ".join(str(p) for p in unreadable))
        return EXIT_INPUT_ERROR
    library = _library(args.signatures)
    _started()
    diag = diagnose_paths(
        readable,
        library=library,
        mask=not args.no_mask,
        stdin=stdin,
        on_warning=lambda note: print(f"rootrank: warning: {note}", file=sys.stderr),
    )
    if unreadable:
        from rootrank.mask import Masker

        masker = Masker() if not args.no_mask else None
        diag.warnings.extend(f"not read: {masker.text(p) if masker else p}" for p in unreadable)
    if args.format == "json":
        out = report.to_json(diag) + "\n"
    elif args.format == "markdown":
        out = report.to_markdown(diag)
    elif args.format in ("sarif", "github"):
        from rootrank import report_sarif

        out = (
            report_sarif.to_sarif(diag) if args.format == "sarif" else report_sarif.to_github(diag)
        )
    else:
        color = args.color == "always" or (
            args.color == "auto" and sys.stdout.isatty() and not os.environ.get("NO_COLOR")
        )
        out = report.to_text(diag, color=color, all_stacks=args.all_stacks)
    sys.stdout.write(out)
    sys.stdout.flush()
    if diag.root_cause:
        return EXIT_DIAGNOSED
    return EXIT_UNCLASSIFIED if diag.unclassified else EXIT_NOTHING_FOUND


def _cmd_live(args: argparse.Namespace) -> int:
    color = args.color == "always" or (
        args.color == "auto" and sys.stderr.isatty() and not os.environ.get("NO_COLOR")
    )
    lib = _library(args.signatures)
    if args.command == "run":
        try:
            from rootrank.live.runner import run_command  # POSIX only: ptys, process groups
        except ImportError as exc:
            print(
                f"rootrank: 'rootrank run' needs Linux or macOS ({exc}); use 'rootrank watch' on the log",
                file=sys.stderr,
            )
            return EXIT_INPUT_ERROR

        cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
        return run_command(
            cmd,
            log=args.log,
            fmt=args.format,
            stall=args.stall,
            on_stall=args.on_stall,
            progress_every=args.progress_every,
            library=lib,
            mask=not args.no_mask,
            color=color,
        )
    from rootrank.live.watch import watch_paths

    return watch_paths(
        args.paths,
        out=sys.stdout,
        fmt=args.format,
        stall=args.stall,
        progress_every=args.progress_every,
        library=lib,
        mask=not args.no_mask,
        color=color,
    )


def _cmd_eval(args: argparse.Namespace) -> int:
    from rootrank import evaluate

    rep = evaluate.evaluate(args.paths, library=_library(args.signatures))
    for skipped in rep.skipped:  # one line each, before the figures they are not in
        print(f"rootrank: skipped {skipped.folder}: {skipped.why}", file=sys.stderr)
    if not rep.cases:
        print(f"rootrank: no case could be scored ({len(rep.skipped)} skipped)", file=sys.stderr)
        return EXIT_INPUT_ERROR
    if args.format == "json":
        print(json.dumps(rep.to_dict(), indent=2))
    else:
        sys.stdout.write(evaluate.to_text(rep))
    below = []
    if args.min_class is not None and rep.class_accuracy < args.min_class:
        below.append(f"class accuracy {rep.class_accuracy:.1%} < {args.min_class:.1%}")
    if args.min_rank is not None and rep.rank_accuracy < args.min_rank:
        below.append(f"initiating-rank accuracy {rep.rank_accuracy:.1%} < {args.min_rank:.1%}")
    gated = args.min_class is not None or args.min_rank is not None
    if rep.healthy_claims and gated:
        below.append(f"{rep.healthy_claims} root cause(s) claimed on healthy logs")
    if rep.skipped and gated and not args.allow_skipped:
        # a gate over the folders that could be read alone would pass a suite most of which
        # is broken (bad JSON, no log): the figures do not hold the skipped folders
        below.append(
            f"{len(rep.skipped)} of {len(rep.skipped) + len(rep.cases)} case folder(s) skipped,"
            " not scored (--allow-skipped to gate on the rest)"
        )
    if below:
        print(f"rootrank: below the bar: {'; '.join(below)}", file=sys.stderr)
        return EXIT_NOTHING_FOUND
    return 0


def _cmd_signatures(args: argparse.Namespace) -> int:
    from rootrank.signatures import Library, SignatureError, _load_dir, load_library

    if args.check:
        lib = Library(signatures={})
        _load_dir(__import__("pathlib").Path(args.check), lib, strict=False)
        if not lib.signatures and not lib.problems:  # a folder, but not of signatures
            print(
                f"rootrank: {args.check}: no signature files (*.yaml, *.yml) in this folder"
                " or below it",
                file=sys.stderr,
            )
            return EXIT_INPUT_ERROR
        for problem in lib.problems:
            print(problem)
        print(f"{len(lib)} signature(s) valid, {len(lib.problems)} problem(s)")
        return EXIT_INPUT_ERROR if lib.problems else 0
    try:
        lib = load_library()
    except SignatureError as exc:
        print(f"rootrank: {exc}", file=sys.stderr)
        return EXIT_INPUT_ERROR
    if args.id:
        from rootrank.signature_view import NoSuchSignature, entry_json, entry_text, find_signature

        try:
            signature = find_signature(lib, args.id)
        except NoSuchSignature as exc:
            print(f"rootrank: {exc}", file=sys.stderr)
            return EXIT_INPUT_ERROR
        if args.format == "json":
            print(json.dumps(entry_json(signature), indent=2))
        else:
            sys.stdout.write(entry_text(signature))
        return 0
    rows = sorted(lib.signatures.values(), key=lambda s: (s.category, s.id))
    if args.format == "json":
        print(
            json.dumps(
                [
                    {
                        "id": s.id,
                        "title": s.title,
                        "failure_class": s.failure_class,
                        "category": s.category,
                    }
                    for s in rows
                ],
                indent=2,
            )
        )
    else:
        for s in rows:
            print(f"{s.category:12} {s.id:44} {s.failure_class:34} {s.title}")
        print(f"{len(rows)} signatures")
    return 0


_frozen = False


def _started() -> None:
    """The start is over: what it made is frozen once per process (``gc.freeze``: later
    collections never walk it) and garbage collection is on again. Idempotent.

    :func:`main` turns collection off while modules load and the signature library is read:
    what they make (modules, classes, the library) lives as long as the process. Frozen, it is
    walked neither by collections while loading (~5 ms) nor by the interpreter's last
    collection and teardown at exit (23 -> 6 ms): ~20 ms of a ~170 ms ``rootrank diagnose``
    of a 3-line log (CPU; bench/startup_bench.py, issue 11)."""
    global _frozen
    if not _frozen:
        _frozen = True
        gc.freeze()
    gc.enable()


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit code (see the module docstring)."""
    gc.disable()  # until the start is over (_started): no collections while modules load
    try:
        return _main(argv)
    finally:
        _started()


def _main(argv: list[str] | None) -> int:
    for stream in (sys.stdout, sys.stderr):
        # A console or redirect in a legacy encoding (cp1252 on Windows) must not turn an
        # emoji in the log or a "·" in the report into a UnicodeEncodeError.
        if hasattr(stream, "reconfigure"):
            try:
                stream.reconfigure(errors="replace")
            except (ValueError, OSError):
                pass
    if sys.stdout is None:  # started with stdout closed (`rootrank ... >&-`)
        if sys.stderr is not None:
            print("rootrank: standard output is closed; nothing can be written", file=sys.stderr)
        return EXIT_INPUT_ERROR
    words = sys.argv[1:] if argv is None else argv
    parser = _parser(words[0] if words and words[0] in COMMANDS else None)
    args = parser.parse_args(words)
    if getattr(args, "paths", None) and "-" in args.paths and sys.stdin is None:
        print("rootrank: standard input is closed; nothing to read from '-'", file=sys.stderr)
        return EXIT_INPUT_ERROR
    if args.command is None:
        parser.print_help()
        return EXIT_INPUT_ERROR
    from rootrank.ingest import InputError
    from rootrank.signatures import SignatureError

    if args.command != "diagnose":
        _started()  # the other commands load what they need as they go; some run for hours
    try:
        if args.command == "diagnose":
            return _cmd_diagnose(args)
        if args.command == "eval":
            return _cmd_eval(args)
        if args.command == "signatures":
            return _cmd_signatures(args)
        if args.command in ("run", "watch"):
            return _cmd_live(args)
        if args.command == "triage":
            from rootrank.triage import command as triage_command

            return triage_command.run(args, _library)
        if args.command == "serve":
            try:
                from rootrank.lsp.server import serve  # imports pygls and lsprotocol
            except ImportError as exc:
                from rootrank.extras import install_hint  # an error path only

                print(
                    f"rootrank: the language server needs pygls and lsprotocol ({exc.name} is missing):"
                    f" {install_hint('lsp')}",
                    file=sys.stderr,
                )
                return EXIT_INPUT_ERROR
            return serve()  # 1 when the client left without a shutdown request
    except (InputError, SignatureError) as exc:
        print(f"rootrank: {exc}", file=sys.stderr)
        if args.command == "diagnose":
            _sarif_of_unread(args, str(exc))
        return EXIT_INPUT_ERROR
    except KeyboardInterrupt:
        print("rootrank: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        try:
            sys.stdout.close()
        except OSError:
            pass
        return 0
    except OSError as exc:  # stdout on a full disk, a closed terminal...
        print(f"rootrank: cannot write the output ({exc.strerror or exc})", file=sys.stderr)
        return EXIT_INPUT_ERROR
    except MemoryError:
        print("rootrank: out of memory while reading the input", file=sys.stderr)
        return EXIT_INPUT_ERROR
    parser.print_help()
    return EXIT_INPUT_ERROR


if __name__ == "__main__":
    sys.exit(main())

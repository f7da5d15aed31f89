"""The built-in library in a form that is cheap to read: ``rootrank/library.json``.

Parsing ~310 YAML files and validating them took ~130 ms of every ``rootrank`` start. The
package build writes the already-validated signatures, in library order, to one JSON file
beside this module, and :func:`load_builtin` reads it instead (one ``json.loads``). The
file is built, never cached at run time (rootrank writes nothing unasked):

- ``pip install .`` / ``pip wheel .``: ``hatch_build.py`` builds it into the wheel;
- ``pip install -e .`` (``scripts/test-all.sh``): the same hook writes
  ``server/rootrank/library.json`` in the checkout (a build output, ignored by git);
- by hand, after editing ``signatures/``: ``python -m rootrank.library_file`` (``--check``
  says whether it is current, exit 1 when not).

One way to load: the YAML files are read by :func:`rootrank.signatures.load_signature`, each
signature becomes a JSON record (:func:`to_record`), and a record becomes a
:class:`~rootrank.signatures.Signature` (:func:`from_record`). The built file holds those
records; when it is missing or out of date, :func:`load_builtin` builds the same records
from the YAML files in memory (slower, same answers) and says so once on stderr.

Out of date means, in a checkout: a signature file (``*.yaml``, ``taxonomy.json``) was added,
removed or changed, or so was the code that validates them (:data:`CODE`); a file whose size
and modification time match the record is taken as unchanged, any other is compared by
SHA-256. In an installed package (the YAML files under ``rootrank/signatures/``, copied by
the same build as the JSON file) only the file names and sizes are compared.

File format (``rootrank.library/3``): one line of JSON, a newline, then the bodies::

    {"schema": "rootrank.library/3",
     "sources": {"signatures": {"<path in the library folder>": [bytes, mtime_ns, sha256]},
                 "code": {"<path in the rootrank package>": [bytes, mtime_ns, sha256]}},
     "fields": ["path", "body", "id", ...],  # FIELDS: the order of a row's values
     "signatures": [<row>, ...]}             # library order (sorted file paths)
    <body of the first record><body of the second record>...

A record holds the validated fields of a :class:`~rootrank.signatures.Signature` (``path``
relative to the library folder) and ``body``, the file's whole mapping as JSON text, decoded
only when a signature's entry is shown (:func:`from_record`). In the file a record is a row,
its values in :data:`FIELDS` order (a JSON array parses ~30% faster than an object with the
same values: its keys are not read 366 times), and its ``body`` is ``[start, end]``: where that
text lies in the part after the first line (UTF-8 byte offsets). The bodies are two thirds of
the file and a diagnosis reads a few: they stay bytes of the file as read (a ``memoryview``
each), decoded by the signature that needs its entry (a decode of all of them and a slice
each cost ~3 ms of every start, issue 11). JSON text has no raw newline, so the first one
ends the line. :func:`build` gives the records as mappings with their bodies inline (what
:func:`read_built` returns); :func:`write` makes them rows and splits the bodies out.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from rootrank.signatures import (
    Library,
    Pattern,
    Signature,
    SignatureError,
    _load_dir,
    builtin_dir,
)

SCHEMA = "rootrank.library/3"
PACKAGE_DIR = Path(__file__).resolve().parent
#: The built file, beside this module (in a checkout ``server/rootrank/library.json``).
BUILT = PACKAGE_DIR / "library.json"
#: The modules whose code turns YAML into records (paths in the rootrank package).
CODE = ("signatures.py", "library_file.py", "taxonomy.py", "entry/variants.py")
#: A record's fields, in the order of a row's values in the built file.
FIELDS = (
    "path",
    "body",
    "id",
    "title",
    "failure_class",
    "category",
    "severity",
    "role",
    "specificity",
    "tags",
    "affects",
    "patterns",
    "min_count",
    "confirm",
    "verify",
    "references",
    "related",
    "inferred",
    "detector",
    "implied_rank",
    "implied_rank_reason",
    "explained_by",
    "kind",
    "fixtures",
)

_noted = False


# -- records ----------------------------------------------------------------------------------


def to_record(sig: Signature, root: Path) -> dict[str, Any]:
    """One validated signature as JSON-ready data (``path`` relative to ``root``, POSIX).

    Raises:
        SignatureError: a value of the file does not survive JSON (a YAML date, a non-string
            key): JSON must give back exactly what the YAML gave.
    """
    body = json.dumps(sig.data, ensure_ascii=False, separators=(",", ":"))
    if json.loads(body) != sig.data:
        raise SignatureError(sig.path, "(file)", "holds a value JSON cannot carry (a date?)")
    record = {
        "path": Path(sig.path).relative_to(root).as_posix(),
        "body": body,
        "id": sig.id,
        "title": sig.title,
        "failure_class": sig.failure_class,
        "category": sig.category,
        "severity": sig.severity,
        "role": sig.role,
        "specificity": sig.specificity,
        "tags": list(sig.tags),
        "affects": list(sig.affects),
        "patterns": [[p.literal, p.source, p.ignorecase] for p in sig.patterns],
        "min_count": sig.min_count,
        "confirm": list(sig.confirm),
        "verify": sig.verify,
        "references": list(sig.references),
        "related": list(sig.related),
        "inferred": (
            None
            if sig.inferred is None
            else {"from": list(sig.inferred["from"]), "differs": sig.inferred["differs"]}
        ),
        "detector": sig.detector,
        "implied_rank": sig.implied_rank,
        "implied_rank_reason": sig.implied_rank_reason,
        "explained_by": list(sig.explained_by),
        "kind": sig.kind,
        "fixtures": [dict(case) for case in sig.fixtures],
    }
    return record


def from_record(record: dict[str, Any], root: Path, *, prefix: str = "") -> Signature:
    """The :class:`Signature` a record stands for. Its ``data`` (the file's mapping, whose
    ``entry`` and ``fix`` are the signature's, as :func:`~rootrank.signatures.load_signature`
    gives them) stays JSON text until first used (``Signature._body``). ``prefix``:
    ``str(root) + os.sep``, when the caller has it (for many records)."""
    return from_row([record[name] for name in FIELDS], prefix or str(root) + os.sep)


def from_row(row: list[Any], prefix: str) -> Signature:
    """:func:`from_record` of a record given as its values in :data:`FIELDS` order; its body
    is JSON text (``str``) or its UTF-8 bytes (a ``memoryview`` of the built file).
    ``prefix``: ``str(root) + os.sep``."""
    (
        path,
        *stored,  # body, id, title, failure_class, category, severity, role, specificity
        tags,
        affects,
        patterns,
        min_count,
        confirm,
        verify,
        references,
        related,
        inferred,
        detector,
        implied_rank,
        implied_rank_reason,
        explained_by,
        kind,
        fixtures,
    ) = row
    fixtures = tuple(fixtures)
    values = (  # in FIELDS order, then the first fixture (see _FILLED)
        prefix + path.replace("/", os.sep),  # str(root / path), faster
        *stored,  # as the row holds them
        tuple(tags),
        tuple(affects),
        tuple(Pattern(lit, src, ic) for lit, src, ic in patterns),
        min_count,
        tuple(confirm),
        verify,
        tuple(references),
        tuple(related),
        None
        if inferred is None
        else {"from": tuple(inferred["from"]), "differs": inferred["differs"]},
        detector,
        implied_rank,
        implied_rank_reason,
        tuple(explained_by),
        kind,
        fixtures,
        fixtures[0],
    )
    sig = object.__new__(Signature)  # data, entry and fix are left to decode on first use
    for set_slot, value in zip(_SETTERS, values, strict=True):
        set_slot(sig, value)
    return sig


#: The :class:`Signature` slots :func:`from_row` fills, in the order it gives their values:
#: one per name of :data:`FIELDS` (the row's ``body`` is the slot ``_body``), then
#: ``fixture`` (the first of ``fixtures``). ``data``, ``entry`` and ``fix`` are left unset:
#: decoded from ``_body`` on first use.
_FILLED = (*("_body" if name == "body" else name for name in FIELDS), "fixture")
#: Each slot's own setter (what ``object.__setattr__`` finds for it, without the lookup:
#: ~30% of :func:`from_row`'s time, which runs for every signature at every start).
_SETTERS = tuple(getattr(Signature, name).__set__ for name in _FILLED)


# -- sources and freshness --------------------------------------------------------------------


def _library_files(root: Path) -> dict[str, str]:
    """The files a library folder's records come from: every ``*.yaml``/``*.yml`` (found as
    :func:`rootrank.signatures._load_dir` finds them) and ``taxonomy.json``, by POSIX path
    relative to ``root``, sorted (plain strings: this runs at every start)."""
    top = str(root)
    files: dict[str, str] = {}
    for dirpath, _dirs, names in os.walk(top, followlinks=False):
        sub = dirpath[len(top) + 1 :].replace(os.sep, "/")
        for name in names:
            if name.endswith((".yaml", ".yml")):
                files[f"{sub}/{name}" if sub else name] = os.path.join(dirpath, name)
    taxonomy = os.path.join(top, "taxonomy.json")
    if os.path.isfile(taxonomy):
        files["taxonomy.json"] = taxonomy
    return dict(sorted(files.items()))


def _code_files() -> dict[str, str]:
    return {rel: str(PACKAGE_DIR / rel) for rel in CODE if (PACKAGE_DIR / rel).is_file()}


def _sha256(path: str) -> str:
    import hashlib  # here, not at start: a current checkout is checked by size and mtime

    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _fingerprints(files: dict[str, str]) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for rel, path in files.items():
        st = os.stat(path)
        out[rel] = [st.st_size, st.st_mtime_ns, _sha256(path)]
    return out


def _changed(files: dict[str, str], recorded: dict[str, Any], *, contents: bool) -> str | None:
    """The first difference between ``files`` and their recorded fingerprints, as a phrase,
    or ``None``. ``contents``: a file whose size or mtime differs is compared by SHA-256
    (else names and sizes only)."""
    if list(files) != list(recorded):
        added = sorted(set(files) - set(recorded))
        removed = sorted(set(recorded) - set(files))
        return f"{added[0]} was added" if added else f"{removed[0]} was removed"
    for rel, path in files.items():
        size, mtime_ns, sha = recorded[rel]
        try:
            st = os.stat(path)
            if st.st_size != size or (
                contents and st.st_mtime_ns != mtime_ns and _sha256(path) != sha
            ):
                return f"{rel} changed"
        except OSError:
            return f"{rel} cannot be read"
    return None


def _packaged(root: Path) -> bool:
    """``root`` is the library inside an installed package (a wheel, the .vsix's libs)."""
    return root.resolve() == (PACKAGE_DIR / "signatures").resolve()


def stale_reason(built: Any, root: Path) -> str | None:
    """Why the built data ``built`` does not stand for the library at ``root`` (a phrase), or
    ``None`` when it does (see the module's docstring for what is compared)."""
    if not isinstance(built, dict) or built.get("schema") != SCHEMA:
        return f"it is not {SCHEMA} data"
    sources = built.get("sources") or {}
    packaged = _packaged(root)
    problem = _changed(_library_files(root), sources.get("signatures") or {}, contents=not packaged)
    if problem is None and not packaged:
        problem = _changed(_code_files(), sources.get("code") or {}, contents=True)
    return problem


# -- build and load ---------------------------------------------------------------------------


def build(root: Path) -> dict[str, Any]:
    """The built data for the library folder ``root``: every signature loaded and validated
    by :func:`~rootrank.signatures.load_signature`, in library order.

    Raises:
        SignatureError: a signature file is wrong (the built-in library must load whole).
    """
    lib = Library(signatures={})
    _load_dir(root, lib, strict=True, eager=False)
    return {
        "schema": SCHEMA,
        "sources": {
            "signatures": _fingerprints(_library_files(root)),
            "code": _fingerprints(_code_files()),
        },
        "signatures": [to_record(sig, root) for sig in lib.signatures.values()],
    }


def write(root: Path, out: Path) -> int:
    """Build the data for ``root`` and write it to ``out`` (replaced whole, never left half
    written). Returns the number of signatures. Raises SignatureError, OSError."""
    data = build(root)
    bodies: list[bytes] = []
    rows = []
    at = 0
    for record in data["signatures"]:
        body = record["body"].encode("utf-8")
        bodies.append(body)
        rows.append([[at, at + len(body)] if name == "body" else record[name] for name in FIELDS])
        at += len(body)
    head = json.dumps(
        {**data, "fields": list(FIELDS), "signatures": rows},
        ensure_ascii=False,
        separators=(",", ":"),
    )
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(head.encode("utf-8") + b"\n" + b"".join(bodies))
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return len(data["signatures"])


def read_built(root: Path, path: Path | None = None) -> tuple[list[dict[str, Any]] | None, str]:
    """The records of the built file at ``path`` (default :data:`BUILT`) when it stands for
    ``root``, else ``None`` and why not (``"missing"``, ``"out of date: memory/cuda-oom.yaml
    changed"``...): mappings with their bodies as text, as :func:`build` gives them."""
    rows, why = read_rows(root, path)
    if rows is None:
        return None, why
    records = [dict(zip(FIELDS, row, strict=True)) for row in rows]
    for record in records:
        record["body"] = str(record["body"], "utf-8")
    return records, ""


def read_rows(root: Path, path: Path | None = None) -> tuple[list[list[Any]] | None, str]:
    """:func:`read_built`'s records as the file's rows (values in :data:`FIELDS` order), each
    body the UTF-8 bytes of its text (a ``memoryview`` of the file as read, decoded only by
    the signature whose entry is shown)."""
    path = path or BUILT
    try:
        with open(path, "rb") as f:  # bytes: no newline translation of 1.8 MB (read_text)
            data = f.read()
        end = data.find(b"\n")
        built = json.loads(data[:end] if end >= 0 else data)
    except FileNotFoundError:
        return None, "missing"
    except (OSError, UnicodeDecodeError) as exc:
        return None, f"unreadable ({exc})"
    except ValueError:
        return None, "not valid JSON"
    reason = stale_reason(built, root)
    if reason is not None:
        return None, f"out of date: {reason}"
    rows = built.get("signatures")
    if not isinstance(rows, list) or built.get("fields") != list(FIELDS) or end < 0:
        return None, "not a library (no signatures)"
    bodies = memoryview(data)[end + 1 :]
    at = FIELDS.index("body")
    for row in rows:
        start, stop = row[at]
        row[at] = bodies[start:stop]
    return rows, ""


def load_builtin(lib: Library) -> None:
    """Add the built-in signatures to ``lib``, from the built file when it is current, else
    from the YAML files (the same records, built in memory; a note on stderr says why, once
    per process). Raises SignatureError when a built-in YAML file is wrong."""
    global _noted
    root = builtin_dir()
    rows, why = read_rows(root)
    if rows is None:
        if not _noted:
            _noted = True
            sys.stderr.write(
                f"rootrank: note: the built signature library ({BUILT}) is {why}; reading "
                f"{root}/*.yaml instead (slower start, same results). Build it: "
                "python -m rootrank.library_file\n"
            )
        records = json.loads(json.dumps(build(root)["signatures"]))
        rows = [[record[name] for name in FIELDS] for record in records]
    prefix = str(root) + os.sep
    for row in rows:
        sig = from_row(row, prefix)
        lib.signatures[sig.id] = sig


def main(argv: list[str] | None = None) -> int:
    """``python -m rootrank.library_file [--check] [--signatures DIR] [--out FILE]``.

    Exit codes: 0 written (or current, with ``--check``), 1 not current (``--check``),
    2 usage error or a wrong signature file.
    """
    parser = argparse.ArgumentParser(
        prog="python -m rootrank.library_file",
        description="Build the signature library's JSON form (rootrank/library.json), which "
        "rootrank reads at start instead of parsing every YAML file.",
    )
    parser.add_argument(
        "--signatures", type=Path, default=None, metavar="DIR", help="the library folder"
    )
    parser.add_argument("--out", type=Path, default=BUILT, metavar="FILE", help="the built file")
    parser.add_argument(
        "--check", action="store_true", help="only say whether FILE is current (exit 1 if not)"
    )
    args = parser.parse_args(argv)
    root = (args.signatures or builtin_dir()).resolve()
    if not root.is_dir():
        parser.error(f"--signatures {root}: no such folder")
    if args.check:
        records, why = read_built(root, args.out)
        if records is None:
            print(f"{args.out}: {why} (build it: python -m rootrank.library_file)")
            return 1
        print(f"{args.out}: current ({len(records)} signatures)")
        return 0
    try:
        count = write(root, args.out)
    except SignatureError as exc:
        print(f"rootrank.library_file: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"rootrank.library_file: cannot write {args.out}: {exc}", file=sys.stderr)
        return 2
    print(f"{args.out}: {count} signatures from {root}")
    if args.out == BUILT:  # the package's other built files (rootrank.built_code)
        import subprocess

        from rootrank import built_code

        try:
            print(built_code.build())
        except (OSError, subprocess.CalledProcessError) as exc:
            print(f"rootrank.library_file: {exc}", file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

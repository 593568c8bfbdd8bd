"""The parts of a task's prompt every kind shares: a data dictionary and a sample of rows, quoted as data."""

from __future__ import annotations

import codecs
import csv
import functools
import io
import json
from pathlib import Path
from typing import Any

from evaluation.agents.base import TaskFile
from evaluation.llm.quoting import quote

__all__ = ["data_columns", "dictionary_text", "file_preview", "sample_text", "task_file", "text_encoding"]

_FORMATS = {".csv": "csv", ".tsv": "tsv", ".dta": "stata"}

SAMPLE_CELL_CHARS = 60


def text_encoding(path: Path) -> str:
    """The encoding a text table reads in, by the import layer's rule (exports.discoverybench.tree): UTF-8, else
    cp1252 (DiscoveryBench ships both; a header in ASCII can still hide cp1252 bytes further down, so the whole
    file is checked, once per file version: the queries of one folder share its files)."""
    stat = path.stat()
    return _encoding(path, stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=1024)
def _encoding(path: Path, _size: int, _mtime_ns: int) -> str:
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        with path.open("rb") as fh:
            while chunk := fh.read(1 << 20):
                decoder.decode(chunk)
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return "cp1252"
    return "utf-8"


def task_file(name: str, path: Path) -> TaskFile:
    """A task's file with its format (csv, tsv, stata or other) and, for a text table, its encoding."""
    fmt = _FORMATS.get(Path(name).suffix.lower(), "other")
    encoding = text_encoding(path) if fmt in ("csv", "tsv") and path.is_file() else None
    return TaskFile(name=name, path=path, format=fmt, encoding=encoding)


def _stata_sample(path: Path, rows: int) -> tuple[str, tuple[str, ...], dict[str, str]]:
    import pandas as pd  # only for a Stata file (the csv module reads the text tables)

    with pd.read_stata(path, iterator=True) as reader:
        labels = {k: v for k, v in reader.variable_labels().items() if v}
        frame = reader.read(rows) if rows else reader.read(0)
    out = io.StringIO()
    frame.to_csv(out, index=False, lineterminator="\n")
    text = "\n".join(line if len(line) <= 400 else line[:400] + "…" for line in out.getvalue().splitlines())
    return text + "\n", tuple(str(c) for c in frame.columns), labels


def file_preview(f: TaskFile, rows: int) -> tuple[str, tuple[str, ...]]:
    """How the prompt shows one file of a task (its columns and first rows, or its first lines), and its columns.

    Raises nothing for a file that cannot be read: the preview says so."""
    try:
        if f.format == "stata":
            sample, columns, labels = _stata_sample(f.path, rows)
            described = f"; variable labels: {quote(json.dumps(labels, ensure_ascii=False), limit=3000)}" if labels \
                else ""
            return (f"- {quote(f.name)} (Stata .dta; read it with pd.read_stata): columns "
                    f"{quote(', '.join(columns), limit=4000)}{described}; its first rows, as CSV: "
                    f"{quote(sample, limit=6000)}"), columns
        if f.table:
            sample, columns = sample_text(f.path, rows, encoding=f.encoding or "utf-8",
                                          delimiter="\t" if f.format == "tsv" else ",")
            how = "read it with pd.read_csv" + (", sep='\\t'" if f.format == "tsv" else "")
            note = " (converted from cp1252 to UTF-8)" if (f.encoding or "utf-8") != "utf-8" else ""
            return (f"- {quote(f.name)} ({f.format.upper()}{note}; {how}): columns "
                    f"{quote(', '.join(columns), limit=4000)}; its first rows: {quote(sample, limit=6000)}"), columns
        with f.path.open(encoding="utf-8", errors="replace") as fh:
            head = fh.read(600)
        return (f"- {quote(f.name)} (another file, {f.path.stat().st_size:,} bytes; its beginning: "
                f"{quote(head, limit=800)})"), ()
    except Exception as exc:  # noqa: BLE001 - a damaged file is said in the prompt, not a failed task
        return f"- {quote(f.name)} (cannot be previewed: {type(exc).__name__})", ()


def sample_text(path: Path | None, rows: int, *, encoding: str = "utf-8", delimiter: str = ","
                ) -> tuple[str, tuple[str, ...]]:
    """The first ``rows`` rows of a CSV as text (cells cut to a few dozen characters), and its columns.

    Read with the csv module (no pandas in the parent: the sandbox does the analysis)."""
    if path is None or not path.is_file():
        return "(no data file)", ()
    with path.open(encoding=encoding, errors="replace", newline="") as fh:
        reader = csv.reader(fh, delimiter=delimiter)
        header = next(reader, [])
        body = [row for _, row in zip(range(rows), reader, strict=False)]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    for row in body:
        writer.writerow([c if len(c) <= SAMPLE_CELL_CHARS else c[:SAMPLE_CELL_CHARS] + "…" for c in row])
    return out.getvalue(), tuple(header)


def data_columns(path: Path | None) -> tuple[str, ...]:
    return sample_text(path, 0)[1]


def dictionary_text(entries: list[dict[str, Any]] | dict[str, Any] | None, fallback: str = "") -> str:
    """A data dictionary (a list of column descriptions, or BLADE's data_desc object) as quoted JSON."""
    if not entries:
        return quote(fallback or "(no data dictionary)", limit=4000)
    return quote(json.dumps(entries, ensure_ascii=False), limit=12000)

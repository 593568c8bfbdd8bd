"""The parts of a task's prompt every kind shares: a data dictionary and a sample of rows, quoted as data."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from evaluation.llm.quoting import quote

__all__ = ["data_columns", "dictionary_text", "sample_text"]

SAMPLE_CELL_CHARS = 60


def sample_text(path: Path | None, rows: int) -> tuple[str, tuple[str, ...]]:
    """The first ``rows`` rows of a CSV as text (cells cut to a few dozen characters), and its columns.

    Read with the csv module (no pandas in the parent: the sandbox does the analysis)."""
    if path is None or not path.is_file():
        return "(no data file)", ()
    with path.open(encoding="utf-8", errors="replace", newline="") as fh:
        reader = csv.reader(fh)
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

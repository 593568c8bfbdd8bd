"""DiscoveryBench's answer keys, ``answer_key_real.csv`` and ``answer_key_synth.csv``.

Columns ``dataset, metadataid, query_id, gold_hypo``: the dataset folder's name, the ``k`` of
``metadata_<k>.json``, the query's ``qid`` and the gold hypothesis. Test-split gold hypotheses exist only here.
Upstream writes them with minimal quoting and CRLF line ends; the writer does the same (the line end read is
kept), and columns beyond the four are kept in place.

An answer key is read whole: it may be at most :data:`MAX_ANSWER_KEY_BYTES` (upstream's is 32 KB), and a cell
holding a control character (NUL...) is refused with its row, line and column (:mod:`exports.control_chars`).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, Field

from exports.control_chars import CONTROL, describe_control
from exports.errors import DiscoveryBenchFormatError, DiscoveryBenchProblem

__all__ = ["ANSWER_KEY_COLUMNS", "MAX_ANSWER_KEY_BYTES", "AnswerKey", "AnswerKeyRow", "parse_answer_key", "write_answer_key"]

ANSWER_KEY_COLUMNS = ("dataset", "metadataid", "query_id", "gold_hypo")
#: Largest answer key read (upstream's answer_key_real.csv is 32 KB).
MAX_ANSWER_KEY_BYTES = 32 * 2**20


class AnswerKeyRow(BaseModel):
    """One row: which query (folder, metadata ``k``, ``qid``) and its gold hypothesis."""

    dataset: str
    metadataid: int
    query_id: int
    gold_hypo: str
    extra: dict[str, str] = Field(default_factory=dict)
    row: int | None = None  # 1-based data row it was read from

    @property
    def key(self) -> tuple[str, int, int]:
        return (self.dataset, self.metadataid, self.query_id)


class AnswerKey(BaseModel):
    """A whole answer key file."""

    kind: Literal["real", "synth"]
    rows: list[AnswerKeyRow] = Field(default_factory=list)
    header: tuple[str, ...] = ANSWER_KEY_COLUMNS
    newline: Literal["\n", "\r\n"] = "\r\n"
    label: str = ""

    @property
    def file_name(self) -> str:
        return f"answer_key_{self.kind}.csv"


def _fail(label: str, message: str, *, row: int | None = None, field: str | None = None) -> DiscoveryBenchProblem:
    return DiscoveryBenchProblem(file=label, message=message, row=row, field=field)


def parse_answer_key(content: bytes, *, kind: Literal["real", "synth"], label: str) -> AnswerKey:
    """Read an answer key's bytes.

    Raises:
        DiscoveryBenchFormatError: not UTF-8; not CSV; a missing or repeated column; a row with the wrong number
            of cells, an empty dataset or gold hypothesis, a ``metadataid``/``query_id`` that is not a whole
            number, or the same (dataset, metadataid, query_id) twice. Each problem names the row and column.
    """
    if len(content) > MAX_ANSWER_KEY_BYTES:
        raise DiscoveryBenchFormatError(_fail(label, f"{label} is {len(content):,} bytes; an answer key may be at most "
                                              f"{MAX_ANSWER_KEY_BYTES:,} bytes (upstream's is 32 KB)."))
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DiscoveryBenchFormatError(
            _fail(label, f"{label} is not UTF-8 text (undecodable byte at offset {exc.start}); save it as UTF-8.")
        ) from exc
    # the file's line end is the header's: a quoted value may hold other line ends of its own
    first_end = text.find("\n")
    newline: Literal["\n", "\r\n"] = "\r\n" if first_end > 0 and text[first_end - 1] == "\r" else "\n"
    records: list[list[str]] = []
    lines: list[int] = []  # the line each record starts on
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        end = 0
        for record in reader:
            if record:
                records.append(record)
                lines.append(end + 1)
            end = reader.line_num
    except csv.Error as exc:
        raise DiscoveryBenchFormatError(_fail(label, f"{label} is not readable as CSV (line {reader.line_num}): "
                                              f"{exc}.")) from exc
    if not records:
        raise DiscoveryBenchFormatError(
            _fail(label, f"{label} is empty; it needs the header {', '.join(ANSWER_KEY_COLUMNS)} and the rows.")
        )
    header = tuple(records[0])
    problems: list[DiscoveryBenchProblem] = []
    missing = [name for name in ANSWER_KEY_COLUMNS if name not in header]
    repeated = sorted({name for name in header if header.count(name) > 1})
    if missing:
        problems.append(_fail(label, f"{label}: the header lacks the column(s) {', '.join(missing)}; an answer "
                              f"key has {', '.join(ANSWER_KEY_COLUMNS)}.", field=missing[0]))
    if repeated:
        problems.append(_fail(label, f"{label}: the header repeats the column(s) {', '.join(repeated)}.",
                              field=repeated[0]))
    if problems:
        raise DiscoveryBenchFormatError(problems)
    rows: list[AnswerKeyRow] = []
    seen: dict[tuple[str, int, int], int] = {}
    for number, record in enumerate(records[1:], start=1):
        where = f"{label}: row {number}"
        if len(record) != len(header):
            problems.append(_fail(label, f"{where} has {len(record)} cells but the header has {len(header)}.",
                                  row=number))
            continue
        cells = dict(zip(header, record, strict=True))
        bad = False
        for column, value in cells.items():
            control = CONTROL.search(value)
            if control:
                problems.append(_fail(label, f"{where} (line {lines[number]}), column {column} holds "
                                      f"{describe_control(control.group())}; control characters have no place in an "
                                      "answer key (and PostgreSQL cannot store NUL): remove it.",
                                      row=number, field=column))
                bad = True
        numbers: dict[str, int] = {}
        for column in ("metadataid", "query_id"):
            try:
                numbers[column] = int(cells[column].strip())
            except ValueError:
                problems.append(_fail(label, f"{where}, column {column}: {cells[column]!r} is not a whole number.",
                                      row=number, field=column))
                bad = True
        for column in ("dataset", "gold_hypo"):
            if not cells[column].strip():
                problems.append(_fail(label, f"{where}, column {column} is empty.", row=number, field=column))
                bad = True
        if bad:
            continue
        entry = AnswerKeyRow(
            dataset=cells["dataset"],
            metadataid=numbers["metadataid"],
            query_id=numbers["query_id"],
            gold_hypo=cells["gold_hypo"],
            extra={name: value for name, value in cells.items() if name not in ANSWER_KEY_COLUMNS},
            row=number,
        )
        if entry.key in seen:
            problems.append(_fail(label, f"{where} repeats the query of row {seen[entry.key]} ({entry.dataset}, "
                                  f"metadata {entry.metadataid}, query {entry.query_id}).", row=number))
            continue
        seen[entry.key] = number
        rows.append(entry)
    if problems:
        raise DiscoveryBenchFormatError(problems)
    return AnswerKey(kind=kind, rows=rows, header=header, newline=newline, label=label)


def write_answer_key(key: AnswerKey) -> bytes:
    """The CSV bytes: the header read (or the four columns), minimal quoting, the line end read."""
    lines = [_csv_line(key.header)]
    for row in key.rows:
        values = {
            "dataset": row.dataset,
            "metadataid": str(row.metadataid),
            "query_id": str(row.query_id),
            "gold_hypo": row.gold_hypo,
            **row.extra,
        }
        lines.append(_csv_line([values.get(name, "") for name in key.header]))
    return "".join(line + key.newline for line in lines).encode("utf-8")


def _csv_line(cells: Iterable[str]) -> str:
    # Minimal quoting as upstream's files have it (pandas / the csv module with CRLF line ends): a cell is quoted
    # when it holds a comma, a quote, CR or LF. The csv module with "\n" line ends would leave a lone CR
    # unquoted, which no reader gives back.
    return ",".join(
        f'"{cell.replace(chr(34), chr(34) * 2)}"' if any(ch in cell for ch in ',"\r\n') else cell for cell in cells
    )

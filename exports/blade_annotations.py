"""BLADE's ``annotations.csv``: typed rows, a validating reader and a byte-faithful writer.

The file (blade-reference 1.4, 1.5) has eight columns: ``spec_id`` and seven JSON columns, of which each row
fills exactly one; the filled column is the row's *kind*. :class:`BladeRow` keeps the parsed JSON object as a
plain dict, with every key (legacy ones such as ``time_stamp``, ``annotator``, ``is_negative``,
``annotator_labeled`` included) in the file's order, so nothing is lost on the way through. Typed views
(:class:`TransformSpec`, :class:`ConceptualVarSpec`, :class:`ModelSpec`, :class:`AnnotateCvarSpec`,
:class:`AnnotateTransformSpec`) are built from that dict on demand; they normalise (legacy list-of-lists
``branches`` become ``[{dependencies, condition}]``) without touching the dict.

How the shipped files are serialised, measured on all nine released files:

* CSV written with minimal quoting (a cell is quoted only when it holds a comma, a quote or a line break;
  quotes are doubled), records separated by ``\\r\\n`` and **no** line break after the last record (the shape
  of a Google-Sheets CSV download; the authors' tool stored rows in a Sheet).
* The ``dependency_graph`` cell is ``json.dumps(obj, indent=2, ensure_ascii=True)``; its line breaks are
  ``\\n`` except in affairs, where they are ``\\r\\n``.
* Every other JSON cell is ``json.dumps(obj, ensure_ascii=True)``: one line, ``", "`` / ``": "`` separators,
  non-ASCII text (the ``🟨 `` / ``🟩 `` prefixes) as ``\\ud83d\\udfe8`` surrogate-pair escapes.
* crofoot has three extra, always empty columns ``Unnamed: 8..10`` (a pandas round trip of a sheet with
  stray columns).

The types (rows, views, located error messages) live in :mod:`exports.blade_rows`; this module reads, checks
and writes the file, and every name a caller needs is importable from here.

The reader remembers these details (:class:`CsvStyle`, :attr:`BladeAnnotations.extra_columns`), so writing an
unmodified file gives back its bytes; new files get BLADE's dominant style.
"""

from __future__ import annotations

import csv
import io
import json
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Literal, get_args

from exports.blade_rows import (
    ANNOTATION_COLUMNS,
    COLUMN_KINDS,
    DERIVED_PREFIX,
    KIND_COLUMNS,
    ORIGINAL_PREFIX,
    ROOT_SPEC_ID,
    VIEW_TYPES,
    AnnotateCvarSpec,
    AnnotateTransformSpec,
    BladeAnnotations,
    BladeKind,
    BladeRow,
    Branch,
    ConceptualVarSpec,
    CsvStyle,
    ModelSpec,
    RowView,
    TransformSpec,
    Vote,
    build_view,
    located_problem,
    spec_name_from_specification,
)
from exports.errors import BladeFormatError, BladeProblem
from exports.jsontext import JsonTextError, RepeatedKey, load_json, refuse_repeated_keys

if TYPE_CHECKING:  # networkx is imported where branches are checked: importing the format must not load it
    import networkx as nx

__all__ = [
    "ANNOTATION_COLUMNS",
    "DERIVED_PREFIX",
    "KIND_COLUMNS",
    "ORIGINAL_PREFIX",
    "ROOT_SPEC_ID",
    "AnnotateCvarSpec",
    "AnnotateTransformSpec",
    "BladeAnnotations",
    "BladeKind",
    "BladeRow",
    "Branch",
    "ConceptualVarSpec",
    "CsvStyle",
    "ModelSpec",
    "TransformSpec",
    "Vote",
    "check_annotations",
    "spec_name_from_specification",
    "parse_annotations",
    "read_annotations",
    "validate_against_data",
    "write_annotations",
]



# ---------------------------------------------------------------------------------------------- reading



def _ensure_large_csv_fields() -> None:
    # A code or graph cell can exceed the csv module's default 128 KiB field limit. The limit is
    # process-wide; it is only ever raised here, which cannot make any other reader stricter.
    wanted = min(sys.maxsize, 2**31 - 1)
    if csv.field_size_limit() < wanted:
        csv.field_size_limit(wanted)


def _records(text: str, label: str) -> Iterator[tuple[int, list[str]]]:
    """Yield ``(first physical line, cells)`` per CSV record, skipping empty lines as pandas does."""
    _ensure_large_csv_fields()
    reader = csv.reader(io.StringIO(text, newline=""))
    previous_end = 0
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise BladeFormatError(
                located_problem(label, f"the CSV cannot be read near line {reader.line_num}: {exc}.")
            ) from exc
        start = previous_end + 1
        previous_end = reader.line_num
        if cells:
            yield start, cells


def _detect_style(text: str, bom: bool, json_cells: Iterable[str]) -> CsvStyle:
    first_break = text.find("\n")
    line_terminator: Literal["\r\n", "\n"] = (
        "\n" if first_break > 0 and text[first_break - 1] != "\r" else "\r\n"
    )
    cell_newline: Literal["\r\n", "\n"] = "\n"
    for cell in json_cells:
        if "\r\n" in cell:
            cell_newline = "\r\n"
            break
    final_newline = text.endswith(line_terminator) if first_break >= 0 else False
    return CsvStyle(
        line_terminator=line_terminator, cell_newline=cell_newline, final_newline=final_newline, bom=bom
    )


def read_annotations(source: Path | str | bytes, *, label: str | None = None) -> BladeAnnotations:
    """Read and validate an ``annotations.csv``.

    Args:
        source: a path, or the file's bytes (e.g. from an upload).
        label: how to name the file in error messages; defaults to the path (or ``annotations.csv``).

    Returns:
        The rows in file order, with the file's layout remembered for a faithful write-back.

    Raises:
        BladeFormatError: the file is missing or unreadable, or see :func:`parse_annotations`.
    """
    if isinstance(source, bytes):
        return parse_annotations(source, label=label or "annotations.csv")
    path = Path(source)
    name = label or str(path)
    try:
        content = path.read_bytes()
    except FileNotFoundError as exc:
        raise BladeFormatError(located_problem(name, "the file does not exist.")) from exc
    except OSError as exc:
        raise BladeFormatError(located_problem(name, f"the file could not be read: {exc.strerror}.")) from exc
    return parse_annotations(content, label=name)


def parse_annotations(content: bytes, *, label: str = "annotations.csv") -> BladeAnnotations:
    """Parse the bytes of an ``annotations.csv`` and check them (see :func:`check_annotations`).

    Whitespace-only cells count as empty (as BLADE's loader does). Extra header columns are accepted and
    remembered when all their cells are empty.

    Raises:
        BladeFormatError: every problem found, each naming the file, the data row (1-based, header not
            counted) with its line and ``spec_id``, the column and, inside JSON, the field: text that is not
            UTF-8 or not CSV, a missing BLADE column, a cell that is not a JSON object (with the JSON error's
            position), a row filling zero or several JSON columns, a duplicate ``spec_id``, and everything
            :func:`check_annotations` reports.
    """
    bom = content.startswith(b"\xef\xbb\xbf")
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise BladeFormatError(
            located_problem(label, f"the file is not UTF-8 text (undecodable byte at offset {exc.start}).")
        ) from exc
    if not text.strip():
        raise BladeFormatError(located_problem(label, "the file is empty; it needs at least BLADE's header row."))

    records = _records(text, label)
    _, header = next(records)
    header_problems = []
    duplicates = sorted({name for name in header if header.count(name) > 1})
    if duplicates:
        header_problems.append(located_problem(label, f"the header repeats the column(s) {', '.join(duplicates)}."))
    missing = [name for name in ANNOTATION_COLUMNS if name not in header]
    if missing:
        header_problems.append(
            located_problem(
                label,
                f"the header lacks BLADE's column(s) {', '.join(missing)}; "
                f"expected {', '.join(ANNOTATION_COLUMNS)}.",
            )
        )
    if header_problems:
        raise BladeFormatError(header_problems)
    index_of = {name: header.index(name) for name in ANNOTATION_COLUMNS}
    extra_columns = tuple(name for name in header if name not in index_of)

    problems: list[BladeProblem] = []
    rows: list[BladeRow] = []
    positions: dict[str, tuple[int, int]] = {}
    raw_json: list[str] = []
    for number, (line, cells) in enumerate(records, start=1):
        position = (number, line)
        if len(cells) > len(header):
            problems.append(
                located_problem(
                    label,
                    f"the row has {len(cells)} cells but the header has {len(header)} columns "
                    "(an unquoted comma?).",
                    position=position,
                )
            )
            continue
        cells = cells + [""] * (len(header) - len(cells))
        if not any(cell.strip() for cell in cells):
            continue  # a row of empty cells carries nothing (spreadsheet exports add them)
        spec_id = cells[index_of["spec_id"]]
        for name in extra_columns:
            if cells[header.index(name)].strip():
                problems.append(
                    located_problem(
                        label,
                        f"the extra column {name!r} is not one of BLADE's and would be lost; "
                        "move its content into the row's JSON or delete it.",
                        position=position,
                        spec_id=spec_id or None,
                        column=name,
                    )
                )
        if not spec_id.strip():
            problems.append(
                located_problem(
                    label, "spec_id is empty; every row needs an id.", position=position, column="spec_id"
                )
            )
            continue
        filled = [column for column in KIND_COLUMNS.values() if cells[index_of[column]].strip()]
        if not filled:
            problems.append(
                located_problem(
                    label,
                    "the row fills none of the JSON columns; exactly one of "
                    f"{', '.join(KIND_COLUMNS.values())} must hold the spec.",
                    position=position,
                    spec_id=spec_id,
                )
            )
            continue
        if len(filled) > 1:
            problems.append(
                located_problem(
                    label,
                    f"the row fills {len(filled)} JSON columns ({', '.join(filled)}); "
                    "each row must fill exactly one. Split it into one row per spec.",
                    position=position,
                    spec_id=spec_id,
                    column=filled[1],
                )
            )
            continue
        column = filled[0]
        cell = cells[index_of[column]]
        try:
            data = load_json(cell, label="the cell", object_pairs_hook=refuse_repeated_keys)
        except JsonTextError as exc:
            cause = exc.__cause__
            reason = (
                f"is not valid JSON: {cause.msg} at line {cause.lineno}, column {cause.colno} of the cell "
                f"(character {cause.pos})"
                if isinstance(cause, json.JSONDecodeError)
                else exc.reason
            )
            problems.append(
                located_problem(
                    label,
                    f"the cell {reason}.",
                    position=position,
                    spec_id=spec_id,
                    column=column,
                )
            )
            continue
        except RepeatedKey as exc:
            problems.append(
                located_problem(
                    label,
                    f"the JSON object has the key {exc.key!r} twice; one value would be lost.",
                    position=position,
                    spec_id=spec_id,
                    column=column,
                    field=exc.key,
                )
            )
            continue
        if not isinstance(data, dict):
            problems.append(
                located_problem(
                    label,
                    f"the cell must hold a JSON object ({{...}}), not a {type(data).__name__}.",
                    position=position,
                    spec_id=spec_id,
                    column=column,
                )
            )
            continue
        if spec_id in positions:
            first_row, first_line = positions[spec_id]
            problems.append(
                located_problem(
                    label,
                    f"the spec_id is already used by data row {first_row} (line {first_line}); "
                    "spec_ids must be unique.",
                    position=position,
                    spec_id=spec_id,
                    column="spec_id",
                )
            )
            continue
        positions[spec_id] = position
        raw_json.append(cell)
        rows.append(BladeRow(spec_id=spec_id, kind=COLUMN_KINDS[column], data=data))
    if problems:
        raise BladeFormatError(problems)

    annotations = BladeAnnotations(
        label=label,
        rows=rows,
        extra_columns=extra_columns,
        style=_detect_style(text, bom, raw_json),
        source_positions=positions,
    )
    problems = check_annotations(annotations)
    if problems:
        raise BladeFormatError(problems)
    return annotations


# --------------------------------------------------------------------------------------------- checking


def check_annotations(annotations: BladeAnnotations) -> list[BladeProblem]:
    """Every problem of content in the rows (those that need no ``data.csv``), earliest row first.

    * each row fits its kind's typed view (types of known fields; ``variable_type`` and ``concept`` for
      variables, ``code`` for LLM transforms);
    * unique ``spec_id``; at most one ``dependency_graph`` row;
    * a non-ROOT transform has non-empty ``code``, a verb, a name and at least one branch; a model has
      non-empty ``code``;
    * every branch dependency is ``ROOT_SPEC_ID`` or the id of a transform row, and the branches have no
      cycle (the message names the specs on it);
    * every derived (``🟩 ``) column of a conceptual or model spec is an output of some transform's mapping.

    Not checked, because the release breaks them by design (blade-reference 1.5.5, 1.5.6, 9): the legacy ids
    of ``annotate_*`` rows (``associated_cv_spec_id``, ``associated_cvar_spec_id``, ``associated_tspec_ids``)
    and anything inside the embedded ``associated_cvar_spec`` copy; the keys of ``column_rationales``
    (stale entries for columns no longer selected are common).
    """
    label = annotations.label
    problems: list[BladeProblem] = []
    positions: dict[str, tuple[int, int | None]] = {}
    graph_rows: list[str] = []
    transforms: dict[str, TransformSpec] = {}
    transform_ids: set[str] = set()
    others: list[tuple[BladeRow, RowView]] = []

    for index, row in enumerate(annotations.rows):
        position = annotations._position(row, index)
        if row.spec_id in positions:
            first = positions[row.spec_id]
            problems.append(
                located_problem(
                    label,
                    f"the spec_id is already used by data row {first[0]}; spec_ids must be unique.",
                    position=position,
                    spec_id=row.spec_id,
                    column="spec_id",
                )
            )
            continue
        positions[row.spec_id] = position
        if row.kind == "dependency_graph":
            graph_rows.append(row.spec_id)
            if len(graph_rows) == 2:
                problems.append(
                    located_problem(
                        label,
                        f"a second dependency_graph row (the first is spec_id {graph_rows[0]!r}); "
                        "a file holds at most one.",
                        position=position,
                        spec_id=row.spec_id,
                        column=row.column,
                    )
                )
            continue
        if row.kind == "transform":
            transform_ids.add(row.spec_id)
        view_type = VIEW_TYPES.get(row.kind)
        if view_type is None:
            continue
        view, view_problems = build_view(view_type, row, label=label, position=position)
        problems.extend(view_problems)
        if isinstance(view, TransformSpec):
            transforms[row.spec_id] = view
            problems.extend(_required_transform_fields(view, row, label, position))
        elif view is not None:
            others.append((row, view))
            if isinstance(view, ModelSpec) and not view.code.strip():
                problems.append(
                    located_problem(
                        label,
                        "a model needs its code (e.g. smf.ols('y ~ x', data=df).fit()).",
                        position=position,
                        spec_id=row.spec_id,
                        column=row.column,
                        field="code",
                    )
                )

    problems.extend(_branch_problems(transforms, transform_ids, positions, label))
    problems.extend(_derived_column_problems(transforms, others, positions, label))
    return sorted(problems, key=lambda p: p.row if p.row is not None else 0)


def _required_transform_fields(
    view: TransformSpec, row: BladeRow, label: str, position: tuple[int, int | None]
) -> list[BladeProblem]:
    if view.is_root:
        if view.branches:
            return [
                located_problem(
                    label,
                    "the ROOT transform stands for the raw data and cannot have branches.",
                    position=position,
                    spec_id=row.spec_id,
                    column=row.column,
                    field="branches",
                )
            ]
        return []
    needs = []
    if not view.code.strip():
        needs.append(("code", "the pandas statements that act on df"))
    if not view.trans_verb:
        needs.append(("trans_verb", 'at least one verb such as ["derive"]'))
    if not (view.spec_name.strip() or view.specification.strip()):
        needs.append(("spec_name", "a name (or a specification to derive it from)"))
    if not view.branches:
        needs.append(("branches", f"at least one branch; use [{ROOT_SPEC_ID!r}] to start from the raw data"))
    return [
        located_problem(
            label,
            f"a transform needs {wanted} (missing or empty).",
            position=position,
            spec_id=row.spec_id,
            column=row.column,
            field=field,
        )
        for field, wanted in needs
    ]


def _branch_problems(
    transforms: dict[str, TransformSpec],
    transform_ids: set[str],
    positions: dict[str, tuple[int, int | None]],
    label: str,
) -> list[BladeProblem]:
    import networkx as nx

    problems = []
    graph: nx.DiGraph[str] = nx.DiGraph()
    column = KIND_COLUMNS["transform"]
    for spec_id, spec in transforms.items():
        for b, branch in enumerate(spec.branches):
            for d, dependency in enumerate(branch.dependencies):
                if dependency != ROOT_SPEC_ID and dependency not in transform_ids:
                    problems.append(
                        located_problem(
                            label,
                            f"the dependency {dependency!r} names no transform in this file "
                            f"(it must be {ROOT_SPEC_ID} or the spec_id of a {column} row).",
                            position=positions[spec_id],
                            spec_id=spec_id,
                            column=column,
                            field=f"branches[{b}].dependencies[{d}]",
                        )
                    )
                elif dependency in transforms:
                    graph.add_edge(dependency, spec_id)
    for component in nx.strongly_connected_components(graph):
        if len(component) == 1:
            (node,) = component
            if not graph.has_edge(node, node):
                continue
        start = min(component, key=lambda sid: positions[sid][0])
        cycle = [edge[0] for edge in nx.find_cycle(graph.subgraph(component), source=start)]
        names = [transforms[sid].name for sid in cycle]
        problems.append(
            located_problem(
                label,
                "the branches form a cycle, so no order of the steps exists: "
                + " → ".join([*names, names[0]])
                + " (each arrow: 'comes before'). Remove one of these dependencies.",
                position=positions[start],
                spec_id=start,
                column=column,
                field="branches",
            )
        )
    return problems


def _derived_column_problems(
    transforms: dict[str, TransformSpec],
    others: list[tuple[BladeRow, RowView]],
    positions: dict[str, tuple[int, int | None]],
    label: str,
) -> list[BladeProblem]:
    produced = {column for spec in transforms.values() for column in spec.output_cols}
    problems = []
    for row, view in others:
        if isinstance(view, ConceptualVarSpec):
            field, columns = "final_columns_derived", view.final_columns_derived
        elif isinstance(view, ModelSpec):
            field, columns = "associated_columns_derived", view.associated_columns_derived
        else:
            continue
        for i, column in enumerate(columns):
            name = column.removeprefix(DERIVED_PREFIX)
            if name not in produced:
                problems.append(
                    located_problem(
                        label,
                        f"the derived column {column!r} is not produced by any transform "
                        "(no input_cols_to_output_col_mapping has it as output).",
                        position=positions[row.spec_id],
                        spec_id=row.spec_id,
                        column=row.column,
                        field=f"{field}[{i}]",
                    )
                )
    return problems


def validate_against_data(
    annotations: BladeAnnotations, data_columns: Iterable[str], *, label: str = "data.csv"
) -> None:
    """Check that the original (``🟨 ``) columns named by conceptual and model specs exist in the data.

    Looks at ``final_columns_orig`` of conceptual specs and ``associated_columns_orig`` of model specs (the
    prefix is stripped before comparing). ``annotate_*`` rows are not checked: their ``columns`` are an
    LLM's proposal, which may name columns the data lacks (that is what the annotators voted on).

    Args:
        annotations: the parsed file; its label and source positions locate the problems.
        data_columns: the header of ``data.csv`` as pandas reads it.
        label: how to name the data file in messages.

    Raises:
        BladeFormatError: one problem per missing column, naming the annotations file, row, spec_id, column
            and field (e.g. ``final_columns_orig[1]``).
    """
    available = list(data_columns)
    known = set(available)
    shown = ", ".join(available[:30]) + (", ..." if len(available) > 30 else "")
    fields = {"conceptual": "final_columns_orig", "model": "associated_columns_orig"}
    problems = []
    for index, row in enumerate(annotations.rows):
        field = fields.get(row.kind)
        values = row.data.get(field) if field else None
        if field is None or not isinstance(values, list):
            continue
        for i, value in enumerate(values):
            if isinstance(value, str) and value.removeprefix(ORIGINAL_PREFIX) not in known:
                problems.append(
                    located_problem(
                        annotations.label,
                        f"the original column {value!r} is not a column of {label} (its columns: {shown}).",
                        position=annotations._position(row, index),
                        spec_id=row.spec_id,
                        column=row.column,
                        field=f"{field}[{i}]",
                    )
                )
    if problems:
        raise BladeFormatError(problems)


# ---------------------------------------------------------------------------------------------- writing


def _cell_text(row: BladeRow, style: CsvStyle, label: str, position: tuple[int, int | None]) -> str:
    try:
        if row.kind == "dependency_graph":
            text = json.dumps(row.data, indent=2, ensure_ascii=True)
            return text.replace("\n", style.cell_newline) if style.cell_newline != "\n" else text
        return json.dumps(row.data, ensure_ascii=True)
    except (TypeError, ValueError) as exc:
        raise BladeFormatError(
            located_problem(
                label,
                f"the data cannot be written as JSON: {exc}.",
                position=position,
                spec_id=row.spec_id,
                column=row.column,
            )
        ) from exc


def write_annotations(
    annotations: BladeAnnotations,
    *,
    keep_extra_columns: bool = False,
    style: CsvStyle | None = None,
    validate: bool = True,
) -> bytes:
    """Serialise to BLADE's ``annotations.csv`` bytes.

    Writes BLADE's eight columns in order, each row filling exactly its kind's column, with the JSON of
    each cell serialised as BLADE does (see the module docstring) in the remembered :class:`CsvStyle`. An
    unmodified :func:`read_annotations` result is written back byte for byte (crofoot only with
    ``keep_extra_columns=True``).

    Args:
        annotations: the rows to write.
        keep_extra_columns: also write the (empty) extra columns the source file had.
        style: override the remembered layout (e.g. ``CsvStyle()`` for BLADE's dominant style).
        validate: refuse to write rows that :func:`check_annotations` rejects.

    Raises:
        BladeFormatError: a row's data is not JSON-serialisable, or (with ``validate``) its content is wrong.
    """
    if validate:
        problems = check_annotations(annotations)
        if problems:
            raise BladeFormatError(problems)
    style = style or annotations.style
    extra = annotations.extra_columns if keep_extra_columns else ()
    lines = [_csv_record([*ANNOTATION_COLUMNS, *extra])]
    blank = [""] * (len(ANNOTATION_COLUMNS) - 1 + len(extra))
    for index, row in enumerate(annotations.rows):
        cells = list(blank)
        cells[ANNOTATION_COLUMNS.index(row.column) - 1] = _cell_text(
            row, style, annotations.label, annotations._position(row, index)
        )
        lines.append(_csv_record([row.spec_id, *cells]))
    text = style.line_terminator.join(lines)
    if style.final_newline:
        text += style.line_terminator
    return (b"\xef\xbb\xbf" if style.bom else b"") + text.encode("utf-8")


def _csv_record(cells: list[str]) -> str:
    """One CSV record with minimal quoting: a cell is quoted only if it holds a comma, a quote or a line
    break, quotes doubled (what the shipped files do).

    Written by hand because the csv module decides by the line terminator in use: with ``"\\n"`` it leaves a
    lone ``"\\r"`` unquoted, which a reader then takes for a line break.
    """
    return ",".join(
        '"' + cell.replace('"', '""') + '"' if any(c in cell for c in ',"\r\n') else cell for cell in cells
    )


# Keep the literal in sync with the mapping (a cheap guard against adding a kind in only one place).
assert set(get_args(BladeKind)) == set(KIND_COLUMNS), "BladeKind and KIND_COLUMNS disagree"

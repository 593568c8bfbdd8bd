"""BLADE's ``info.json``: pydantic models, a reader with user-facing errors and a byte-faithful writer.

The layout (blade-reference 1.2) is the "data summary" popularised by LIDA::

    {"research_questions": [str],
     "data_desc": {"dataset_description": str,
                   "fields": [{"column": str, "properties": {dtype, std, min, max, samples,
                                                             num_unique_values, semantic_type, description}}],
                   "num_rows": int, "field_names": [str]},
     "data_path": str}

Every model keeps keys it does not know (``extra="allow"``) and remembers the order in which a file listed
its keys, so ``dump_info_json(read_info_json(p))`` gives back the file's bytes. The shipped BLADE files are
``json.dumps(obj, indent=2, ensure_ascii=True)`` without a trailing newline (non-ASCII text such as en dashes
is written as ``\\u2013`` escapes); :func:`dump_info_json` writes exactly that.

Values are validated with strict types so that nothing is silently converted: ``4`` stays an int, ``4.0`` a
float, and ``"601"`` for ``num_rows`` is an error rather than a number.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from pydantic import (
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
)

from exports.errors import FormatError
from exports.jsontext import JsonTextError, load_json
from exports.ordered import SourceOrdered

__all__ = [
    "BladeInfo",
    "DataDesc",
    "FieldProperties",
    "FieldSpec",
    "dump_info_json",
    "parse_info_json",
    "read_info_json",
]

#: A JSON scalar kept with its exact type (min / max are ints, floats or date strings).
JsonScalar = StrictBool | StrictInt | StrictFloat | StrictStr

_MAX_PROBLEMS_SHOWN = 5


class _OrderedModel(SourceOrdered):
    """info.json objects: source key order, unknown keys kept, unset optional statistics not written."""

    drop_unset_none: ClassVar[bool] = True


class FieldProperties(_OrderedModel):
    """Statistics and description of one column; every key is optional, as in BLADE's files.

    ``dtype`` is one of ``number``, ``category``, ``date``, ``string`` (and ``boolean`` in LIDA's
    vocabulary). ``std`` exists for numbers; ``min`` / ``max`` for numbers (ints stay ints) and dates (as
    text in the CSV's own format). ``semantic_type`` is always ``""`` in BLADE's data.
    """

    dtype: StrictStr | None = None
    std: StrictFloat | StrictInt | None = None
    min: JsonScalar | None = None
    max: JsonScalar | None = None
    samples: list[Any] | None = None
    num_unique_values: StrictInt | None = None
    semantic_type: StrictStr | None = None
    description: StrictStr | None = None


class FieldSpec(_OrderedModel):
    """One entry of ``data_desc.fields``: a column name and its properties."""

    column: StrictStr
    properties: FieldProperties = Field(default_factory=FieldProperties)

    @property
    def description(self) -> str:
        """The column's human description (``""`` when there is none)."""
        return self.properties.description or ""


class DataDesc(_OrderedModel):
    """``data_desc``: the dataset description and its data dictionary."""

    dataset_description: StrictStr | None = None
    fields: list[FieldSpec]
    num_rows: StrictInt | None = None
    field_names: list[StrictStr] | None = None


class BladeInfo(_OrderedModel):
    """A whole ``info.json``. BLADE always has exactly one research question and uses the first."""

    research_questions: list[StrictStr] = Field(min_length=1)
    data_desc: DataDesc
    data_path: StrictStr | None = None

    @property
    def research_question(self) -> str:
        return self.research_questions[0]


def _json_path(loc: tuple[int | str, ...], data: Any, *, missing: bool) -> tuple[str, Any]:
    """Turn a pydantic error location into a JSON path (``data_desc.fields[3].properties.min``).

    Pydantic appends union member tags (``int``, ``str``...) to locations; only the part of ``loc`` that
    walks through the actual data is kept. Returns the path and, when the problem is inside
    ``data_desc.fields[i]``, that field's column name (or ``None``).
    """
    path = ""
    node = data
    column = None
    walked: list[int | str] = []
    for index, part in enumerate(loc):
        if isinstance(part, int) and isinstance(node, list) and 0 <= part < len(node):
            path += f"[{part}]"
        elif isinstance(part, str) and isinstance(node, Mapping) and part in node:
            path += f".{part}" if path else part
        elif missing and isinstance(part, str) and isinstance(node, Mapping) and index == len(loc) - 1:
            path += f".{part}" if path else part  # a missing key
            break
        else:
            break  # a union member tag such as "int" or "str", not a place in the data
        walked.append(part)
        node = node[part]
    if len(walked) >= 3 and walked[:2] == ["data_desc", "fields"] and isinstance(walked[2], int):
        entry = data["data_desc"]["fields"][walked[2]]
        if isinstance(entry, Mapping) and isinstance(entry.get("column"), str):
            column = entry["column"]
    return path or "(top level)", column


_TYPE_WORDS = {
    "bool_type": "true or false",
    "int_type": "a whole number",
    "float_type": "a number",
    "string_type": "a string",
    "list_type": "a list",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
}


def _describe_validation_error(exc: ValidationError, data: Any, label: str) -> str:
    grouped: dict[str, tuple[str | None, list[dict[str, Any]]]] = {}
    for error in exc.errors():
        path, column = _json_path(tuple(error["loc"]), data, missing=error["type"] == "missing")
        grouped.setdefault(path, (column, []))[1].append(dict(error))
    problems = []
    for path, (column, errors) in grouped.items():
        where = f"{path} (column '{column}')" if column else path
        kinds = [str(e["type"]) for e in errors]
        if "missing" in kinds:
            problems.append(f"{where} is missing")
        elif kinds == ["too_short"]:
            problems.append(f"{where} must not be empty")
        elif all(kind in _TYPE_WORDS for kind in kinds):
            wanted = " or ".join(dict.fromkeys(_TYPE_WORDS[kind] for kind in kinds))
            got = json.dumps(errors[0].get("input"), ensure_ascii=False, default=str)
            if len(got) > 60:
                got = got[:57] + "..."
            problems.append(f"{where} must be {wanted}, not {got}")
        else:
            problems.append(f"{where}: {errors[0]['msg']}")
    shown = problems[:_MAX_PROBLEMS_SHOWN]
    more = len(problems) - len(shown)
    tail = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
    return f"{label} does not have BLADE's info.json layout: " + "; ".join(shown) + tail + "."


def parse_info_json(content: bytes | str, *, label: str = "info.json") -> BladeInfo:
    """Validate the text of an ``info.json``.

    Args:
        content: the file's bytes (UTF-8, a byte-order mark is tolerated) or text; read by
            :func:`exports.jsontext.load_json`, like every JSON file.
        label: how to name the file in error messages (a path, or ``upload.zip:affairs/info.json``).

    Raises:
        FormatError: the text is not UTF-8, not JSON (with line and column), nested too deeply, or not BLADE's layout
            (with the JSON path of each problem, e.g. ``data_desc.fields[3].properties.num_unique_values``).
    """
    try:
        data = load_json(content, label=label)
    except JsonTextError as exc:
        if exc.reason == "is empty":
            raise FormatError(f"{label} is empty; it should hold BLADE's info.json object.") from exc
        raise
    if not isinstance(data, dict):
        raise FormatError(
            f"{label} must hold a JSON object with research_questions and data_desc, "
            f"but it holds a {type(data).__name__}."
        )
    try:
        return BladeInfo.model_validate(data)
    except ValidationError as exc:
        raise FormatError(_describe_validation_error(exc, data, label)) from exc


def read_info_json(path: Path) -> BladeInfo:
    """Read and validate an ``info.json`` file; errors name the file and the JSON path of the problem.

    Raises:
        FormatError: the file is missing or unreadable, or see :func:`parse_info_json`.
    """
    try:
        content = Path(path).read_bytes()
    except FileNotFoundError as exc:
        raise FormatError(f"{path} does not exist.") from exc
    except OSError as exc:
        raise FormatError(f"{path} could not be read: {exc.strerror}.") from exc
    return parse_info_json(content, label=str(path))


def dump_info_json(info: BladeInfo) -> str:
    """Serialise like BLADE's own files: key order kept, ``indent=2``, ASCII escapes, no final newline.

    Python-mode dumping keeps ``NaN`` / ``Infinity`` as Python's json module writes them (as a summariser
    writes the ``std`` of a one-row column), where JSON mode would turn them into ``null``.
    """
    return json.dumps(info.model_dump(mode="python"), indent=2, ensure_ascii=True)

"""BLADE's ``mcq_dataset.json``: pydantic models, a validating reader and a byte-faithful writer.

Layout (blade-reference 5.1)::

    {"mcqs_cvar": [{"mc_type", "options": [{"cvar_str", "rationale", "is_llm_generated"}], "correct_answer"}],
     "mcqs_transform": {"<concept>": [{"coneptual_var_str", "mc_type",
                                       "options": [{"code", "rationale", "is_llm_generated"}],
                                       "correct_answer"}]}}

``coneptual_var_str`` is misspelled in BLADE and kept so (:attr:`MCQTransform.conceptual_var_str` reads it
under the right name). ``correct_answer`` is a full copy of one option; options may repeat exactly, so the
answer's index is the first equal option (:func:`correct_index`).

The shipped files are ``json.dumps(obj, indent=2)`` without a final newline. They are pure ASCII, so whether
the authors escaped non-ASCII text cannot be seen; :func:`write_mcqs` uses ``ensure_ascii=True`` like
Python's default and like BLADE's ``info.json`` and ``annotations.csv`` cells (which do show ``\\uXXXX``
escapes). Models keep unknown keys and the file's key order, so an unmodified read→write is byte-identical.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    Field,
    StrictBool,
    StrictStr,
    ValidationError,
)

from exports.errors import BladeFormatError, BladeProblem
from exports.jsontext import JsonTextError, RepeatedKey, load_json, refuse_repeated_keys
from exports.ordered import SourceOrdered

__all__ = [
    "BladeMCQs",
    "MCQCvar",
    "MCQCvarChoice",
    "MCQTransform",
    "MCQTransformChoice",
    "McType",
    "correct_index",
    "parse_mcqs",
    "read_mcqs",
    "write_mcqs",
]

McType = Literal["select_pos", "select_neg"]
"""Select the MOST (``select_pos``) or LEAST (``select_neg``) justifiable option."""

_MAX_VALUE_SHOWN = 60


class _Ordered(SourceOrdered):
    """mcq_dataset.json objects: source key order and unknown keys kept."""

    def same_value(self, other: _Ordered) -> bool:
        """Equality of content, ignoring key order (pydantic's ``==`` also compares private state)."""
        return bool(self.model_dump() == other.model_dump())


class MCQCvarChoice(_Ordered):
    """An option of a conceptual-variable MCQ; ``cvar_str`` like ``"Control: Age"``."""

    cvar_str: StrictStr
    rationale: StrictStr
    is_llm_generated: StrictBool


class MCQTransformChoice(_Ordered):
    """An option of a transform MCQ: pandas code (a whole path's code for human options) and its rationale."""

    code: StrictStr
    rationale: StrictStr
    is_llm_generated: StrictBool


class MCQCvar(_Ordered):
    """Which conceptual variable is the most / least justifiable for the research question."""

    mc_type: McType
    options: list[MCQCvarChoice] = Field(min_length=2)
    correct_answer: MCQCvarChoice


class MCQTransform(_Ordered):
    """Which code is the most / least justifiable operationalisation of one conceptual variable."""

    coneptual_var_str: StrictStr
    mc_type: McType
    options: list[MCQTransformChoice] = Field(min_length=2)
    correct_answer: MCQTransformChoice

    @property
    def conceptual_var_str(self) -> str:
        """``coneptual_var_str`` under its intended spelling."""
        return self.coneptual_var_str


class BladeMCQs(_Ordered):
    """A whole ``mcq_dataset.json``."""

    mcqs_cvar: list[MCQCvar]
    mcqs_transform: dict[str, list[MCQTransform]]

    def all_mcqs(self) -> Iterator[MCQCvar | MCQTransform]:
        """Every MCQ: the cvar ones, then the transform ones concept by concept, in file order."""
        yield from self.mcqs_cvar
        for mcqs in self.mcqs_transform.values():
            yield from mcqs

    @property
    def num_transform(self) -> int:
        return sum(len(mcqs) for mcqs in self.mcqs_transform.values())

    @property
    def expected_correct(self) -> float:
        """Expected number of correct answers when guessing uniformly (BLADE's chance baseline)."""
        return sum(1 / len(mcq.options) for mcq in self.all_mcqs())


def correct_index(mcq: MCQCvar | MCQTransform, *, label: str = "mcq_dataset.json", where: str = "") -> int:
    """Index of the first option equal to ``correct_answer`` (options may repeat exactly).

    Args:
        mcq: the question.
        label, where: the file and JSON path to name if the answer is not among the options.

    Raises:
        BladeFormatError: no option equals the correct answer.
    """
    answer = mcq.correct_answer.model_dump()
    for index, option in enumerate(mcq.options):
        if option.model_dump() == answer:
            return index
    field = f"{where}.correct_answer" if where else "correct_answer"
    raise BladeFormatError(
        BladeProblem(
            file=label,
            message=f"{label}, field {field}: the correct answer is a copy of none of the "
            f"{len(mcq.options)} options (it must equal one of them exactly, rationale and "
            "is_llm_generated included).",
            field=field,
        )
    )


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= _MAX_VALUE_SHOWN else text[: _MAX_VALUE_SHOWN - 3] + "..."


def _path(loc: tuple[int | str, ...]) -> str:
    path = ""
    for position, part in enumerate(loc):
        if isinstance(part, int):
            path += f"[{part}]"
        elif position == 1 and loc[0] == "mcqs_transform":
            path += f"[{json.dumps(part, ensure_ascii=False)}]"  # a concept string, not a field name
        else:
            path += f".{part}" if path else part
    return path or "(top level)"


def _describe(error: Mapping[str, Any]) -> str:
    kind = str(error["type"])
    got = _short(error.get("input"))
    if kind == "missing":
        return "is missing"
    if kind == "literal_error":
        return f"must be one of {error.get('ctx', {}).get('expected', '')}, not {got}"
    words = {
        "bool_type": "true or false",
        "string_type": "a string",
        "list_type": "a list",
        "dict_type": "an object",
        "model_type": "an object",
    }
    if kind in words:
        return f"must be {words[kind]}, not {got}"
    if kind == "too_short":
        return "needs at least 2 options"
    return f"{error['msg']} (got {got})"



def parse_mcqs(content: bytes | str, *, label: str = "mcq_dataset.json") -> BladeMCQs:
    """Validate the text of an ``mcq_dataset.json``.

    Raises:
        BladeFormatError: not UTF-8, not JSON (with line and column), a repeated key, not the layout (with
            the JSON path of each problem), a ``mcqs_transform`` key that differs from its questions'
            ``coneptual_var_str``, or a ``correct_answer`` equal to none of its options.
    """
    try:
        data = load_json(content, label=label, object_pairs_hook=refuse_repeated_keys)
    except JsonTextError as exc:
        raise BladeFormatError(BladeProblem(label, f"{label}: {exc.reason.removeprefix('is ')}.")) from exc
    except RepeatedKey as exc:
        raise BladeFormatError(
            BladeProblem(label, f"{label}: the key {exc.args[0]!r} appears twice in one object.")
        ) from exc
    if not isinstance(data, dict):
        raise BladeFormatError(
            BladeProblem(
                label,
                f"{label}: must hold a JSON object with mcqs_cvar and mcqs_transform, "
                f"not a {type(data).__name__}.",
            )
        )
    try:
        mcqs = BladeMCQs.model_validate(data)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            field = _path(tuple(error["loc"]))
            problems.append(BladeProblem(label, f"{label}, field {field}: {_describe(error)}.", field=field))
        raise BladeFormatError(problems) from exc

    problems = []
    for i, cvar_mcq in enumerate(mcqs.mcqs_cvar):
        problems.extend(_answer_problems(cvar_mcq, label, f"mcqs_cvar[{i}]"))
    for concept, questions in mcqs.mcqs_transform.items():
        key = f"mcqs_transform[{json.dumps(concept, ensure_ascii=False)}]"
        for i, transform_mcq in enumerate(questions):
            where = f"{key}[{i}]"
            if transform_mcq.coneptual_var_str != concept:
                field = f"{where}.coneptual_var_str"
                problems.append(
                    BladeProblem(
                        label,
                        f"{label}, field {field}: {_short(transform_mcq.coneptual_var_str)} differs from "
                        "the key it is filed under; they must be equal.",
                        field=field,
                    )
                )
            problems.extend(_answer_problems(transform_mcq, label, where))
    if problems:
        raise BladeFormatError(problems)
    return mcqs


def _answer_problems(mcq: MCQCvar | MCQTransform, label: str, where: str) -> list[BladeProblem]:
    try:
        correct_index(mcq, label=label, where=where)
    except BladeFormatError as exc:
        return list(exc.problems)
    return []


def read_mcqs(source: Path | str | bytes, *, label: str | None = None) -> BladeMCQs:
    """Read and validate an ``mcq_dataset.json`` (a path or the file's bytes); see :func:`parse_mcqs`."""
    if isinstance(source, bytes):
        return parse_mcqs(source, label=label or "mcq_dataset.json")
    path = Path(source)
    name = label or str(path)
    try:
        content = path.read_bytes()
    except FileNotFoundError as exc:
        raise BladeFormatError(BladeProblem(name, f"{name}: the file does not exist.")) from exc
    except OSError as exc:
        raise BladeFormatError(
            BladeProblem(name, f"{name}: the file could not be read: {exc.strerror}.")
        ) from exc
    return parse_mcqs(content, label=name)


def write_mcqs(mcqs: BladeMCQs) -> bytes:
    """Serialise like BLADE's files: key order kept, ``indent=2``, ASCII escapes, no final newline."""
    return json.dumps(mcqs.model_dump(mode="python"), indent=2, ensure_ascii=True).encode("ascii")

"""BLADE's ``annotations.csv`` rows as types: the row, the file, the typed views of each kind and the error
messages that locate a problem (file, data row, line, spec_id, column, field).

:mod:`exports.blade_annotations` reads, checks and writes the file with these; import from there.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, Literal, TypeVar, cast

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictStr,
    ValidationError,
    field_validator,
)

from exports.errors import BladeFormatError, BladeProblem

BladeKind = Literal[
    "dependency_graph",
    "conceptual",
    "transform",
    "model",
    "tisane",
    "annotate_cvar",
    "annotate_transform",
]

#: The JSON column each kind fills, in BLADE's column order.
KIND_COLUMNS: dict[BladeKind, str] = {
    "dependency_graph": "dependency_graph",
    "conceptual": "conceptual_spec_json",
    "transform": "transform_spec_json",
    "model": "model_spec_json",
    "tisane": "tisane_spec_json",
    "annotate_cvar": "annotate_cvar_spec_json",
    "annotate_transform": "annotate_transform_spec_json",
}
COLUMN_KINDS: dict[str, BladeKind] = {column: kind for kind, column in KIND_COLUMNS.items()}

#: BLADE's header, in order.
ANNOTATION_COLUMNS: tuple[str, ...] = ("spec_id", *KIND_COLUMNS.values())

ROOT_SPEC_ID = "ROOT_SPEC_ID"
#: Marks an original dataset column in conceptual / model specs (blade-reference 1.6).
ORIGINAL_PREFIX = "🟨 "
#: Marks a column derived by some transform.
DERIVED_PREFIX = "🟩 "


def spec_name_from_specification(text: str) -> str:
    """BLADE's rule for an empty ``spec_name``: strip punctuation, keep at most 10 words (then ``etc``), join
    with ``_``, lower-case."""
    words = re.sub(r"[^\w\s]", "", text).split()
    if len(words) > 10:
        words = [*words[:10], "etc"]
    return "_".join(words).lower()

Vote = Literal["Yes", "No", "Unsure"]

_MAX_VALUE_SHOWN = 60


# ----------------------------------------------------------------------------------------------- models


class CsvStyle(BaseModel):
    """How a file was laid out, so that writing it back reproduces its bytes.

    The defaults are BLADE's dominant style (8 of the 9 shipped files).
    """

    model_config = ConfigDict(frozen=True)

    line_terminator: Literal["\r\n", "\n"] = "\r\n"
    """Between records."""
    cell_newline: Literal["\r\n", "\n"] = "\n"
    """Line breaks inside the indented ``dependency_graph`` cell."""
    final_newline: bool = False
    """Whether the last record is followed by a line terminator."""
    bom: bool = False
    """Whether the file starts with a UTF-8 byte-order mark."""


class BladeRow(BaseModel):
    """One row of ``annotations.csv``: its id, which JSON column it fills, and that cell's JSON object.

    ``data`` is the parsed object exactly as in the file (key order and every key kept, legacy encodings
    untouched); use :meth:`view` for a typed, normalised reading of it.
    """

    spec_id: str
    kind: BladeKind
    data: dict[str, Any]

    @property
    def column(self) -> str:
        """The JSON column this row fills (``transform_spec_json``...)."""
        return KIND_COLUMNS[self.kind]

    def view(self) -> SpecView | None:
        """The typed view of ``data`` for this kind (``None`` for ``dependency_graph`` and ``tisane``).

        Raises:
            BladeFormatError: ``data`` does not fit the kind (see :func:`check_annotations`).
        """
        view_type = VIEW_TYPES.get(self.kind)
        if view_type is None:
            return None
        view, problems = build_view(view_type, self, label="annotations.csv", position=None)
        if view is None:
            raise BladeFormatError(problems)
        return cast("SpecView", view)


class BladeAnnotations(BaseModel):
    """A whole ``annotations.csv``: rows in file order plus what is needed to write the file back as it was.

    Attributes:
        label: how the file is named in error messages (a path or an upload label).
        rows: the rows, in file order.
        extra_columns: header names beyond BLADE's eight (crofoot's empty ``Unnamed: 8..10``); written back
            only on request (``write_annotations(..., keep_extra_columns=True)``).
        style: the file's CSV layout (:class:`CsvStyle`).
        source_positions: for a file that was read, ``spec_id -> (data row, line)`` of each row, so that
            later checks (e.g. against ``data.csv``) can point into the file. Empty for rows built in memory.
    """

    label: str = "annotations.csv"
    rows: list[BladeRow] = Field(default_factory=list)
    extra_columns: tuple[str, ...] = ()
    style: CsvStyle = Field(default_factory=CsvStyle)
    source_positions: dict[str, tuple[int, int]] = Field(default_factory=dict, repr=False)

    def rows_of(self, kind: BladeKind) -> list[BladeRow]:
        """The rows of one kind, in file order."""
        return [row for row in self.rows if row.kind == kind]

    def row(self, spec_id: str) -> BladeRow:
        """The row with this ``spec_id``.

        Raises:
            KeyError: no row has it.
        """
        for row in self.rows:
            if row.spec_id == spec_id:
                return row
        raise KeyError(spec_id)

    @property
    def dependency_graph(self) -> BladeRow | None:
        """The stored ``dependency_graph`` row (networkx node-link JSON, a stale snapshot; see 1.5.7)."""
        rows = self.rows_of("dependency_graph")
        return rows[0] if rows else None

    @property
    def transforms(self) -> dict[str, TransformSpec]:
        """``spec_id -> TransformSpec`` for every transform row, ROOT included, in file order."""
        return self._views("transform", TransformSpec)

    @property
    def variables(self) -> dict[str, ConceptualVarSpec]:
        """``spec_id -> ConceptualVarSpec`` for every conceptual-variable row, in file order."""
        return self._views("conceptual", ConceptualVarSpec)

    @property
    def models(self) -> dict[str, ModelSpec]:
        """``spec_id -> ModelSpec`` for every model row, in file order."""
        return self._views("model", ModelSpec)

    @property
    def annotate_cvars(self) -> dict[str, AnnotateCvarSpec]:
        """``spec_id -> AnnotateCvarSpec``: judged LLM-proposed conceptual variables."""
        return self._views("annotate_cvar", AnnotateCvarSpec)

    @property
    def annotate_transforms(self) -> dict[str, AnnotateTransformSpec]:
        """``spec_id -> AnnotateTransformSpec``: judged LLM-proposed transforms."""
        return self._views("annotate_transform", AnnotateTransformSpec)

    @property
    def multi_branch_transforms(self) -> dict[str, TransformSpec]:
        """Transforms with more than one branch (alternative parent sets)."""
        return {sid: spec for sid, spec in self.transforms.items() if len(spec.branches) > 1}

    def _views(self, kind: BladeKind, view_type: type[_V]) -> dict[str, _V]:
        views: dict[str, _V] = {}
        for index, row in enumerate(self.rows):
            if row.kind != kind:
                continue
            view, problems = build_view(
                view_type, row, label=self.label, position=self._position(row, index)
            )
            if view is None:
                raise BladeFormatError(problems)
            views[row.spec_id] = view
        return views

    def _position(self, row: BladeRow, index: int) -> tuple[int, int | None]:
        if row.spec_id in self.source_positions:
            return self.source_positions[row.spec_id]
        return index + 1, None


# ------------------------------------------------------------------------------------------ typed views


class RowView(BaseModel):
    """Base of the typed views: unknown keys are kept (``model_extra``), the row's id is attached.

    Types are strict (``"true"`` is not a bool, ``5`` is not a string) so a view never silently converts
    what an annotator typed.
    """

    model_config = ConfigDict(extra="allow")

    spec_id: str
    """From the ``spec_id`` column; BLADE never stores it inside the JSON."""

    #: The row kind this view reads.
    kind: ClassVar[BladeKind]

    @classmethod
    def from_row(cls: type[_V], row: BladeRow) -> _V:
        """Validate ``row.data`` as this view (the ``spec_id`` column wins over any key of that name)."""
        return cls.model_validate({**row.data, "spec_id": row.spec_id})


_V = TypeVar("_V", bound=RowView)


class _TaggedSpec(RowView):
    """Fields common to transform, conceptual and model specs (``BaseSpec`` / ``SpecWithTags``)."""

    time_stamp: StrictStr | None = None
    tags: list[StrictStr] = Field(default_factory=list)
    read_only_tags: list[StrictStr] = Field(default_factory=list)
    is_negative: StrictBool = False
    annotator: Any = None


class Branch(BaseModel):
    """One alternative way to reach a transform: parents that must all precede it, and an (unused) guard."""

    model_config = ConfigDict(extra="allow")

    dependencies: list[StrictStr]
    condition: StrictStr = ""


class TransformSpec(_TaggedSpec):
    """``transform_spec_json`` (blade-reference 1.5.1). The ROOT row is just ``{"spec_name": "ROOT"}``."""

    kind: ClassVar[BladeKind] = "transform"

    specification: StrictStr = ""
    spec_name: StrictStr = ""
    trans_verb: list[StrictStr] = Field(default_factory=list)
    code: StrictStr = ""
    rationale: StrictStr = ""
    conditions: StrictStr = ""
    input_cols_to_output_col_mapping: list[tuple[list[StrictStr], StrictStr]] = Field(default_factory=list)
    branches: list[Branch] = Field(default_factory=list)

    @field_validator("branches", mode="before")
    @classmethod
    def _upgrade_legacy_branches(cls, value: Any) -> Any:
        # Legacy encoding: a bare list of dependency lists, e.g. [["ROOT_SPEC_ID"], ["a", "b"]].
        if isinstance(value, list):
            return [
                {"dependencies": item, "condition": ""} if isinstance(item, list) else item for item in value
            ]
        return value

    @property
    def is_root(self) -> bool:
        return self.spec_id == ROOT_SPEC_ID

    @property
    def output_cols(self) -> list[str]:
        """Columns this transform creates (the non-empty outputs of its mapping), in order."""
        return [output for _, output in self.input_cols_to_output_col_mapping if output]

    @property
    def input_cols(self) -> list[str]:
        """Columns this transform reads (all mapping inputs, flattened, in order)."""
        return [column for inputs, _ in self.input_cols_to_output_col_mapping for column in inputs]

    @property
    def name(self) -> str:
        """``spec_name``, else ``specification``, else the id: what to call the spec in messages."""
        return self.spec_name or self.specification or self.spec_id


class ConceptualVarSpec(_TaggedSpec):
    """``conceptual_spec_json`` (blade-reference 1.5.2); a moderator is a Control with ``interaction``."""

    kind: ClassVar[BladeKind] = "conceptual"

    variable_type: Literal["IV", "DV", "Control"]
    concept: StrictStr
    final_columns_derived_spec_ids: list[StrictStr] = Field(default_factory=list)
    final_columns_orig: list[StrictStr] = Field(default_factory=list)
    final_columns_derived: list[StrictStr] = Field(default_factory=list)
    final_columns_leaf_spec_ids: list[StrictStr] = Field(default_factory=list)
    column_rationales: dict[str, StrictStr] = Field(default_factory=dict)
    interaction: StrictBool = False
    rationale: StrictStr = ""
    on: StrictStr = ""
    random_effect: StrictBool = False

    @property
    def role(self) -> Literal["IV", "DV", "Control", "Moderator"]:
        """IV / DV / Control, or Moderator for a Control with ``interaction``."""
        if self.variable_type == "Control" and self.interaction:
            return "Moderator"
        return self.variable_type


class ModelSpec(_TaggedSpec):
    """``model_spec_json`` (blade-reference 1.5.3): one model family fitted on one column set."""

    kind: ClassVar[BladeKind] = "model"

    specification: StrictStr = ""
    spec_name: StrictStr = ""
    rationale: StrictStr = ""
    dependencies: list[StrictStr] = Field(default_factory=list)
    code: StrictStr = ""
    associated_columns_derived_spec_ids: list[StrictStr] = Field(default_factory=list)
    associated_columns_orig: list[StrictStr] = Field(default_factory=list)
    associated_columns_derived: list[StrictStr] = Field(default_factory=list)
    associated_columns_leaf_spec_ids: list[StrictStr] = Field(default_factory=list)
    associated_specified_spec_ids: list[StrictStr] = Field(default_factory=list)


class _AnnotatorJudgement(RowView):
    """Fields of the annotator's review common to both ``annotate_*`` kinds (1.5.5, 1.5.6)."""

    time_stamp: StrictStr | None = None
    annotator_labeled: StrictBool = False
    annotator_label: Any = None
    annotator_explanation: StrictStr = ""
    annotator_is_rationale_reasonable: Vote | None = None
    rationale: StrictStr = ""
    annotator: Any = None


class AnnotateCvarSpec(_AnnotatorJudgement):
    """An LLM-proposed conceptual variable and the annotator's three votes on it.

    ``associated_cv_spec_id`` is legacy: it names ids of the annotators' pre-merge databases and resolves to
    nothing in the release (blade-reference 1.5.5); it is never checked.
    """

    kind: ClassVar[BladeKind] = "annotate_cvar"

    variable_type: Literal["IV", "DV", "Control"]
    concept: StrictStr
    columns: list[StrictStr] = Field(default_factory=list)
    interaction: StrictBool = False
    on: StrictStr = ""
    can_derive_from_data: Vote | None = None
    is_reasonable: Vote | None = None
    associated_cv_spec_id: StrictStr | None = None


class AnnotateTransformSpec(_AnnotatorJudgement):
    """An LLM-proposed transform and the annotator's three votes on it.

    ``associated_cvar_spec_id`` and ``associated_tspec_ids`` are legacy pre-merge ids that mostly resolve to
    nothing (blade-reference 1.5.6) and are never checked; the embedded ``associated_cvar_spec`` copy is the
    only reliable link to the variable (see :meth:`associated_cvar`).
    """

    kind: ClassVar[BladeKind] = "annotate_transform"

    code: StrictStr
    output_col: StrictStr = ""
    associated_cvar_spec_id: StrictStr | None = None
    associated_cvar_spec: dict[str, Any] | None = None
    is_suited_to_cv: Vote | None = None
    is_steps_reasonable: Vote | None = None
    associated_tspec_ids: list[StrictStr] = Field(default_factory=list)
    state_col_val_hash: StrictStr | None = None

    def associated_cvar(self) -> ConceptualVarSpec | None:
        """The embedded conceptual-variable copy as a typed view (its id is the legacy, dangling one).

        Raises:
            pydantic.ValidationError: the embedded copy is not a conceptual spec.
        """
        if self.associated_cvar_spec is None:
            return None
        return ConceptualVarSpec.model_validate(
            {**self.associated_cvar_spec, "spec_id": self.associated_cvar_spec_id or ""}
        )


SpecView = TransformSpec | ConceptualVarSpec | ModelSpec | AnnotateCvarSpec | AnnotateTransformSpec

VIEW_TYPES: dict[BladeKind, type[RowView]] = {
    "transform": TransformSpec,
    "conceptual": ConceptualVarSpec,
    "model": ModelSpec,
    "annotate_cvar": AnnotateCvarSpec,
    "annotate_transform": AnnotateTransformSpec,
}


# ---------------------------------------------------------------------------------------- error helpers


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= _MAX_VALUE_SHOWN else text[: _MAX_VALUE_SHOWN - 3] + "..."


def located_problem(
    label: str,
    what: str,
    *,
    position: tuple[int, int | None] | None = None,
    spec_id: str | None = None,
    column: str | None = None,
    field: str | None = None,
) -> BladeProblem:
    """A problem whose message starts with its location: file, data row (line, spec_id), column, field."""
    parts = [label]
    row = line = None
    if position is not None:
        row, line = position
        inner = [f"line {line}"] if line is not None else []
        if spec_id is not None:
            inner.append(f"spec_id {spec_id!r}")
        parts.append(f"data row {row}" + (f" ({', '.join(inner)})" if inner else ""))
    elif spec_id is not None:
        parts.append(f"spec_id {spec_id!r}")
    if column is not None:
        parts.append(f"column {column}")
    if field is not None:
        parts.append(f"field {field}")
    return BladeProblem(
        file=label,
        message=f"{', '.join(parts)}: {what}",
        row=row,
        line=line,
        spec_id=spec_id,
        column=column,
        field=field,
    )


def _loc_path(loc: Iterable[int | str]) -> str:
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path or "(the object)"


_TYPE_WORDS = {
    "bool_type": "true or false",
    "string_type": "a string",
    "list_type": "a list",
    "tuple_type": "a [input columns, output column] pair",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
}


def _describe_pydantic_error(error: Mapping[str, Any]) -> str:
    kind = str(error["type"])
    if kind == "missing":
        return "is missing"
    if kind in _TYPE_WORDS:
        return f"must be {_TYPE_WORDS[kind]}, not {_short(error.get('input'))}"
    if kind == "literal_error":
        expected = error.get("ctx", {}).get("expected", "")
        return f"must be one of {expected}, not {_short(error.get('input'))}"
    if kind in ("too_short", "too_long"):
        return f"has the wrong length: {error['msg']}"
    return f"{error['msg']} (got {_short(error.get('input'))})"


def build_view(
    view_type: type[_V], row: BladeRow, *, label: str, position: tuple[int, int | None] | None
) -> tuple[_V | None, list[BladeProblem]]:
    try:
        return view_type.from_row(row), []
    except ValidationError as exc:
        problems = [
            located_problem(
                label,
                _describe_pydantic_error(error),
                position=position,
                spec_id=row.spec_id,
                column=row.column,
                field=_loc_path(error["loc"]),
            )
            for error in exc.errors()
        ]
        return None, problems

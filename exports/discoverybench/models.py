"""Pydantic models of DiscoveryBench's ``metadata_<k>.json`` (evaluation-seeds-reference §1.3).

Both shapes upstream ships are one model:

- *real*: ``columns`` is an object ``{"raw": [{name, description[, depth]}]}`` and ``queries`` a list of lists;
- *synth*: ``columns`` is a list of ``{name, description}`` and ``queries`` a flat list.

Each shape is kept as read (a discriminated union picks the branch from the data, so an error names one
branch only), every object keeps keys it does not know and the order its file listed them
(:class:`exports.ordered.SourceOrdered`), and optional keys a file lacks are not written back. Values are
strict: ``"3"`` for a ``qid`` is an error, not a number.

``question_type`` is kept as written (``relationhsip`` stays ``relationhsip`` on the way out);
:attr:`Query.kind` is the normalised :class:`QuestionType`.
"""

from __future__ import annotations

import difflib
from enum import StrEnum
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Discriminator, Field, StrictInt, StrictStr, Tag

from exports.ordered import SourceOrdered

__all__ = [
    "ColumnGroups",
    "ColumnInfo",
    "DatasetInfo",
    "Hypotheses",
    "MainHypothesis",
    "Metadata",
    "Query",
    "QuestionType",
    "normalise_question_type",
]


class QuestionType(StrEnum):
    """What a query asks for: one dimension of the hypothesis (real tasks) or all of it (synth's ``general``)."""

    CONTEXT = "context"
    VARIABLES = "variables"
    RELATIONSHIP = "relationship"
    GENERAL = "general"


_ALIASES = {
    "context": QuestionType.CONTEXT,
    "contexts": QuestionType.CONTEXT,
    "variable": QuestionType.VARIABLES,
    "variables": QuestionType.VARIABLES,
    "relationship": QuestionType.RELATIONSHIP,
    "relationships": QuestionType.RELATIONSHIP,
    "relation": QuestionType.RELATIONSHIP,
    "relations": QuestionType.RELATIONSHIP,
    "general": QuestionType.GENERAL,
}


def normalise_question_type(raw: str | None) -> QuestionType | None:
    """The question type a written ``question_type`` means, or ``None`` when it is absent or unrecognisable.

    Case, surrounding blanks, ``-``/``_``/spaces, singular/plural and close misspellings (upstream ships
    ``relationhsip``) are forgiven: a word within a small edit distance of one known spelling is that type.
    """
    if raw is None:
        return None
    word = "".join(ch for ch in raw.strip().lower() if ch.isalpha())
    if not word:
        return None
    if word in _ALIASES:
        return _ALIASES[word]
    close = difflib.get_close_matches(word, list(_ALIASES), n=2, cutoff=0.8)
    kinds = {_ALIASES[match] for match in close}
    return kinds.pop() if len(kinds) == 1 else None


class _Ordered(SourceOrdered):
    """Source key order, unknown keys kept, optional keys a file lacks not written as ``null``."""

    drop_unset_none: ClassVar[bool] = True


class ColumnInfo(_Ordered):
    """One column of a dataset's data dictionary. Real train files add ``depth``; names can be ``""``."""

    name: StrictStr
    description: StrictStr | None = None
    depth: StrictInt | None = None


class ColumnGroups(_Ordered):
    """Real tasks' ``columns`` object: the columns are under ``raw``."""

    raw: list[ColumnInfo]


def _columns_shape(value: Any) -> str:
    if isinstance(value, ColumnGroups | dict):
        return "object"
    return "list"


Columns = Annotated[
    Annotated[ColumnGroups, Tag("object")] | Annotated[list[ColumnInfo], Tag("list")],
    Discriminator(_columns_shape),
]


class DatasetInfo(_Ordered):
    """One entry of ``datasets``: a data file of the folder (``name``), its description and columns."""

    name: StrictStr = Field(min_length=1)
    description: StrictStr | None = None
    max_depth: StrictInt | None = None
    columns: Columns

    @property
    def column_list(self) -> list[ColumnInfo]:
        """The columns whatever the shape (``columns.raw`` or ``columns``)."""
        return self.columns.raw if isinstance(self.columns, ColumnGroups) else self.columns

    @property
    def columns_shape(self) -> Literal["object", "list"]:
        return "object" if isinstance(self.columns, ColumnGroups) else "list"


class MainHypothesis(_Ordered):
    """An entry of ``hypotheses.main``: filled in real train files, ``{}`` in real test files."""

    depth: StrictInt | None = None
    target: StrictStr | None = None
    expr: StrictStr | None = None
    expr_ind: StrictStr | None = None
    text: StrictStr | None = None


class Hypotheses(_Ordered):
    """``hypotheses``: ``main`` and ``intermediate`` (the latter empty in practice)."""

    main: list[MainHypothesis] | None = None
    intermediate: list[Any] | None = None


class Query(_Ordered):
    """One query. Train and dev queries carry ``true_hypothesis``; synth dev (and some train) queries also
    ``target_col``, ``true_hypothesis_expr`` (a pandas expression) and ``relevant_cols``."""

    qid: StrictInt
    question: StrictStr
    question_type: StrictStr | None = None
    difficulty: StrictInt | None = None
    true_hypothesis: StrictStr | None = None
    target_col: StrictStr | None = None
    true_hypothesis_expr: StrictStr | None = None
    relevant_cols: list[StrictStr] | None = None

    @property
    def kind(self) -> QuestionType | None:
        """The normalised question type (``relationhsip`` → ``relationship``), ``None`` if unrecognisable."""
        return normalise_question_type(self.question_type)


def _queries_shape(value: Any) -> str:
    if isinstance(value, list) and any(isinstance(item, list) for item in value):
        return "nested"
    return "flat"


Queries = Annotated[
    Annotated[list[list[Query]], Tag("nested")] | Annotated[list[Query], Tag("flat")],
    Discriminator(_queries_shape),
]


class Metadata(_Ordered):
    """A whole ``metadata_<k>.json``.

    ``id`` is not the file's ``k`` in real files (it is ``0`` in all of them); the file name's ``k`` is what
    the answer keys call ``metadataid``. Real files have ``workflow_tags``, ``domain_knowledge`` (missing in
    one upstream file), ``intermediate``, ``hypotheses`` and, in train, the gold ``workflow``; synth files
    have none of these.
    """

    id: StrictInt | None = None
    domain: StrictStr | None = None
    workflow_tags: StrictStr | None = None
    domain_knowledge: StrictStr | None = None
    datasets: list[DatasetInfo] = Field(min_length=1)
    intermediate: list[Any] | None = None
    hypotheses: Hypotheses | None = None
    workflow: StrictStr | None = None
    queries: Queries

    @property
    def queries_shape(self) -> Literal["nested", "flat"]:
        return "flat" if all(isinstance(item, Query) for item in self.queries) else "nested"

    def query_list(self) -> list[tuple[str, Query]]:
        """Every query with its JSON path (``queries[0][1]`` or ``queries[2]``), in file order."""
        found: list[tuple[str, Query]] = []
        items: list[Any] = list(self.queries)
        for index, item in enumerate(items):
            if isinstance(item, Query):
                found.append((f"queries[{index}]", item))
            else:
                group: list[Query] = item
                found.extend((f"queries[{index}][{inner}]", query) for inner, query in enumerate(group))
        return found

"""The ground-truth view of a release dataset's transforms: small immutable records the engine works on.

A release stores transforms with structured fields (:class:`exports.schema.ReleaseTransform`); the engine
needs only the id, the name, the first verb (BLADE reads only the first, blade-reference 3), the code, the
input → output column mapping and the alternative parent sets. ROOT (the raw table) is implicit in a release:
every dependency on :data:`ROOT_SPEC_ID` (or a transform with no branch at all) hangs below it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from evaluation.errors import EvaluationError
from exports.blade_annotations import ROOT_SPEC_ID
from exports.schema import DatasetRelease

__all__ = ["ROOT_NAME", "ROOT_SPEC_ID", "GroundTruthError", "Spec", "rewrite_groupby", "specs_from_release"]

ROOT_NAME = "ROOT"


class GroundTruthError(EvaluationError):
    """The release cannot be turned into ground truth; the message names the dataset and the transform."""


@dataclass(frozen=True)
class Spec:
    id: str
    name: str
    verb: str = ""
    code: str = ""
    mapping: tuple[tuple[tuple[str, ...], str], ...] = ()
    branches: tuple[tuple[str, ...], ...] = ()
    conditions: tuple[str, ...] = field(default=(), compare=False)

    @property
    def input_cols(self) -> list[str]:
        return [c for inputs, _ in self.mapping for c in inputs]


def rewrite_groupby(code: str) -> str:
    """BLADE's ``process_groupby_code`` (blade-reference 2.4) as source text.

    ``dfX = <expr>.groupby(...)`` assigns to ``dfX_grp`` instead, so the group-by object does not replace the
    frame and later roll-ups written against ``dfX_grp`` find it. Only a direct ``.groupby(...)`` call and plain
    names starting with ``df`` (not already ending with ``_grp``) are rewritten; the code is re-printed by
    ``ast.unparse`` as BLADE does.
    """
    tree = ast.parse(code)
    for node in ast.walk(tree):
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                and isinstance(node.value.func, ast.Attribute) and node.value.func.attr == "groupby"):
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id.startswith("df") and not target.id.endswith("_grp"):
                    target.id += "_grp"
    return ast.unparse(tree)


def specs_from_release(dataset: DatasetRelease) -> dict[str, Spec]:
    """The dataset's transforms as :class:`Spec` records, ROOT first, then in release order.

    Raises:
        GroundTruthError: a dependency names no transform of the dataset, a branch carries a condition
            (BLADE's condition language is never used in its data and forkpaths does not evaluate it), or a
            transform's code does not parse.
    """
    specs: dict[str, Spec] = {ROOT_SPEC_ID: Spec(id=ROOT_SPEC_ID, name=ROOT_NAME)}
    ids = {t.id for t in dataset.transforms} | {ROOT_SPEC_ID}
    for t in dataset.transforms:
        label = f"dataset {dataset.name!r}, transform {t.spec_name!r} ({t.id})"
        if t.id == ROOT_SPEC_ID:
            raise GroundTruthError(f"{label}: the id {ROOT_SPEC_ID!r} is reserved for the raw table")
        branches = tuple(tuple(b.dependencies) or (ROOT_SPEC_ID,) for b in t.branches) or ((ROOT_SPEC_ID,),)
        for deps in branches:
            unknown = [d for d in deps if d not in ids]
            if unknown:
                raise GroundTruthError(f"{label}: depends on {', '.join(unknown)}, which is not a transform of "
                                       "this dataset")
        conditions = tuple(b.condition for b in t.branches if b.condition.strip())
        if conditions:
            raise GroundTruthError(f"{label}: branch condition {conditions[0]!r} is not supported; remove it "
                                   "or express the alternative as its own branch")
        if t.code.strip():
            try:
                ast.parse(t.code)
            except SyntaxError as exc:
                raise GroundTruthError(f"{label}: its code does not parse (line {exc.lineno}: {exc.msg})") from exc
        specs[t.id] = Spec(
            id=t.id, name=t.spec_name, verb=(t.verbs[0] if t.verbs else ""), code=t.code,
            mapping=tuple((tuple(m.inputs), m.output) for m in t.mapping), branches=branches)
    return specs

"""BLADE's dataset layout ⇄ the forkpaths release schema, as pure functions.

Import keeps every BLADE field: each spec's structured fields are parsed into the release schema, and its
original JSON object is kept in ``extra["blade"]`` together with a digest of the structured fields as they
were parsed. Export re-emits that original object unchanged while the digest still matches (so an untouched
import round-trips exactly, legacy keys, nulls and key order included); once a decision was edited, its BLADE
object is regenerated from the structured fields on top of the original (legacy keys kept).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from exports.blade_annotations import (
    DERIVED_PREFIX,
    ORIGINAL_PREFIX,
    ROOT_SPEC_ID,
    spec_name_from_specification,
)
from exports.mcq_part import MCQ, MCQOption, MCQPart
from exports.schema import (
    Alternative,
    Annotator,
    DatasetRelease,
    LLMProvenance,
    ReleaseBranch,
    ReleaseColumn,
    ReleaseMapping,
    ReleaseModel,
    ReleaseTransform,
    ReleaseVariable,
    Vote,
)

__all__ = [
    "BLADE_ANNOTATOR",
    "ORIGINAL_PREFIX",
    "DERIVED_PREFIX",
    "ROOT_SPEC_ID",
    "RowLike",
    "blade_rows_from_release",
    "blade_mcqs_from_release",
    "classify_model_family",
    "release_dataset_from_blade",
]

BLADE_ANNOTATOR = Annotator(id="BLADE", kind="imported", label="BLADE experts (imported from a BLADE release)")
BLADE_LLM = LLMProvenance(model="unrecorded (BLADE release)", prompt_template="BLADE generation prompts (unreleased)")

# BLADE judgement keys → forkpaths vote questions, per alternative kind.
CVAR_QUESTIONS = {"can_derive_from_data": "can_derive_from_data", "is_reasonable": "is_reasonable",
                  "annotator_is_rationale_reasonable": "is_rationale_reasonable"}
TRANSFORM_QUESTIONS = {"is_suited_to_cv": "is_suited_to_cv", "is_steps_reasonable": "is_steps_reasonable",
                       "annotator_is_rationale_reasonable": "is_rationale_reasonable"}
_ANSWERS = {"yes": "yes", "no": "no", "unsure": "unsure"}
_BLADE_ANSWERS = {"yes": "Yes", "no": "No", "unsure": "Unsure"}


class RowLike(Protocol):
    spec_id: str
    kind: str
    data: dict[str, Any]


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _strip(col: str) -> str:
    for prefix in (ORIGINAL_PREFIX, DERIVED_PREFIX):
        if col.startswith(prefix):
            return col[len(prefix):]
    return col


def _answer(value: Any) -> str | None:
    return _ANSWERS.get(str(value).strip().lower()) if value is not None else None


def classify_model_family(specification: str) -> str:
    """Map BLADE's free-text model names onto forkpaths' model families (``evaluation.specs.ModelFamily``)."""
    s = specification.lower()
    rules = [
        (("mixed", "multilevel", "hierarchical", "random effect", "glmm", "lme"), "Mixed-effects model"),
        (("logistic", "logit"), "Logistic regression"),
        (("probit",), "Probit regression"),
        (("negative binomial", "negbin"), "Negative binomial regression"),
        (("poisson",), "Poisson regression"),
        (("ordinal", "ordered"), "Ordinal regression"),
        (("survival", "cox", "hazard"), "Survival model"),
        (("anova", "ancova"), "ANOVA"),
        (("t-test", "t test", "chi", "wilcoxon", "mann"), "Statistical test (t, chi-square, ...)"),
        (("correlation",), "Correlation"),
        (("glm", "generalized linear", "generalised linear"), "Generalized linear model (other)"),
        (("linear", "ols", "least squares", "regression"), "Linear regression (OLS)"),
    ]
    return next((family for keys, family in rules if any(k in s for k in keys)), "Other")


def _branches(raw: Any) -> list[ReleaseBranch]:
    out = []
    for b in raw or []:
        if isinstance(b, dict):
            out.append(ReleaseBranch(dependencies=list(b.get("dependencies") or []), condition=b.get("condition") or ""))
        else:  # legacy encoding: a bare list of parent ids
            out.append(ReleaseBranch(dependencies=list(b)))
    return out


def _structured(item: Any, *, exclude: Iterable[str] = ("extra",)) -> dict[str, Any]:
    return dict(item.model_dump(mode="json", exclude=set(exclude)))


# --------------------------------------------------------------------------------------------------- import


def _producer(name: str, candidates: Sequence[str], outputs: dict[str, list[str]]) -> str | None:
    for tid in candidates:
        if name in outputs.get(tid, []):
            return tid
    return next((tid for tid, outs in outputs.items() if name in outs), None)


def _columns(orig: Sequence[str], derived: Sequence[str], producer_ids: Sequence[str],
             rationales: dict[str, str], outputs: dict[str, list[str]]) -> list[ReleaseColumn]:
    cols: list[ReleaseColumn] = []
    seen: set[tuple[str, str]] = set()
    for raw in orig:
        name = _strip(raw)
        if ("o", name) not in seen:
            seen.add(("o", name))
            cols.append(ReleaseColumn(name=name, origin="original", rationale=rationales.get(raw, "")))
    for raw in derived:
        name = _strip(raw)
        if ("d", name) not in seen:
            seen.add(("d", name))
            cols.append(ReleaseColumn(name=name, origin="derived", producer_id=_producer(name, producer_ids, outputs),
                                      rationale=rationales.get(raw, "")))
    return cols


def _prefixed(cols: Sequence[ReleaseColumn]) -> set[str]:
    return {(ORIGINAL_PREFIX if c.origin == "original" else DERIVED_PREFIX) + c.name for c in cols}


def _votes_for(alt_id: str, data: dict[str, Any], questions: dict[str, str], first_key: str) -> list[Vote]:
    votes = []
    for key, question in questions.items():
        if key not in data:
            continue
        answer = _answer(data[key])
        skipped = ""
        if answer is None:
            skipped = (f"not asked: {first_key} was No" if _answer(data.get(first_key)) == "no"
                       else "no answer recorded in the BLADE release")
        votes.append(Vote(target_kind="alternative", target_id=alt_id, annotator=BLADE_ANNOTATOR.id,
                          question=question, answer=answer, skipped_reason=skipped,  # type: ignore[arg-type]
                          explanation=data.get("annotator_explanation") or ""))
    return votes


def _alt_digest(alt: Alternative, votes: Sequence[Vote]) -> str:
    return _digest({"alt": _structured(alt), "votes": [_structured(v, exclude=("created_at",)) for v in votes]})


def _mcq_option(choice: dict[str, Any], text_key: str) -> MCQOption:
    rest = {k: v for k, v in choice.items() if k not in (text_key, "rationale", "is_llm_generated")}
    return MCQOption(text=str(choice.get(text_key, "")), rationale=choice.get("rationale") or "",
                     is_llm_generated=bool(choice.get("is_llm_generated")), extra=rest)


def _mcq(mcq_id: str, raw: dict[str, Any], kind: str, concept: str = "") -> MCQ:
    text_key = "cvar_str" if kind == "variable" else "code"
    options = [_mcq_option(o, text_key) for o in raw.get("options", [])]
    correct = raw.get("correct_answer")
    index = next((i for i, o in enumerate(raw.get("options", [])) if o == correct), -1)
    item = MCQ(id=mcq_id, kind=kind, mc_type=raw.get("mc_type", "select_neg"), concept=concept,  # type: ignore[arg-type]
               options=options, correct_index=index)
    item.extra = {"blade": raw, "blade_digest": _digest(_structured(item))}
    return item


def release_dataset_from_blade(
    *,
    name: str,
    info: dict[str, Any],
    dictionary: list[dict[str, Any]],
    data_file: str,
    data_sha256: str,
    num_rows: int,
    num_columns: int,
    rows: Sequence[Any],
    mcqs: dict[str, Any] | None,
    title: str = "",
    extra_columns: Sequence[str] = (),
) -> DatasetRelease:
    """A BLADE dataset folder's content as a release dataset (see the module docstring for losslessness)."""
    question = (info.get("research_questions") or [""])[0].strip()
    ds = DatasetRelease(name=name, title=title or name, research_question=question,
                        description=str(info.get("data_desc", {}).get("dataset_description", "")).strip(),
                        dictionary=dictionary, info=info, data_file=data_file, data_sha256=data_sha256,
                        num_rows=num_rows, num_columns=num_columns, annotators=[BLADE_ANNOTATOR])
    blade_extra: dict[str, Any] = {"row_order": [[r.spec_id, r.kind] for r in rows], "other_rows": [],
                                   "extra_columns": list(extra_columns)}
    outputs = {r.spec_id: [p[1] for p in (r.data.get("input_cols_to_output_col_mapping") or []) if p[1]]
               for r in rows if r.kind == "transform"}
    for r in rows:
        d = r.data
        if r.kind == "transform" and r.spec_id == ROOT_SPEC_ID:
            blade_extra["root"] = d
        elif r.kind == "transform":
            t = ReleaseTransform(
                id=r.spec_id, annotator=BLADE_ANNOTATOR.id,
                spec_name=d.get("spec_name") or spec_name_from_specification(d.get("specification", "")),
                specification=d.get("specification") or "", verbs=list(d.get("trans_verb") or []),
                code=d.get("code") or "", rationale=d.get("rationale") or "",
                mapping=[ReleaseMapping(inputs=list(p[0]), output=p[1] or "")
                         for p in d.get("input_cols_to_output_col_mapping") or []],
                branches=_branches(d.get("branches")), tags=list(d.get("tags") or []))
            t.extra = {"blade": d, "blade_digest": _digest(_structured(t))}
            ds.transforms.append(t)
        elif r.kind == "conceptual":
            v = ReleaseVariable(
                id=r.spec_id, annotator=BLADE_ANNOTATOR.id, variable_type=d.get("variable_type", "Control"),
                interaction=bool(d.get("interaction")), moderates=d.get("on") or "", concept=d.get("concept") or "",
                rationale=d.get("rationale") or "", random_effect=bool(d.get("random_effect")),
                tags=list(d.get("tags") or []),
                columns=_columns(d.get("final_columns_orig") or [], d.get("final_columns_derived") or [],
                                 d.get("final_columns_derived_spec_ids") or [], d.get("column_rationales") or {},
                                 outputs))
            v.extra = {"blade": d, "blade_digest": _digest(_structured(v))}
            ds.variables.append(v)
        elif r.kind == "model":
            m = ReleaseModel(
                id=r.spec_id, annotator=BLADE_ANNOTATOR.id,
                family=classify_model_family(d.get("specification") or ""),
                specification=d.get("specification") or "", spec_name=d.get("spec_name") or "",
                code=d.get("code") or "", rationale=d.get("rationale") or "", tags=list(d.get("tags") or []),
                columns=_columns(d.get("associated_columns_orig") or [], d.get("associated_columns_derived") or [],
                                 d.get("associated_columns_derived_spec_ids") or [], {}, outputs),
                transform_ids=[i for i in (d.get("associated_specified_spec_ids")
                                           or d.get("associated_columns_leaf_spec_ids") or []) if i in outputs])
            ds.models.append(m)
        elif r.kind in ("annotate_cvar", "annotate_transform"):
            if r.kind == "annotate_cvar":
                payload = {k: d.get(k) for k in ("variable_type", "concept", "interaction", "on", "rationale", "columns")}
                votes = _votes_for(r.spec_id, d, CVAR_QUESTIONS, "can_derive_from_data")
                kind = "variable"
            else:
                payload = {k: d.get(k) for k in ("code", "output_col", "rationale", "associated_cvar_spec")}
                votes = _votes_for(r.spec_id, d, TRANSFORM_QUESTIONS, "is_suited_to_cv")
                kind = "transform"
            alt = Alternative(id=r.spec_id, kind=kind, source="llm", llm=BLADE_LLM, payload=payload)  # type: ignore[arg-type]
            alt.extra = {"blade": d, "blade_digest": _alt_digest(alt, votes)}
            ds.alternatives.append(alt)
            ds.votes.extend(votes)
        else:  # dependency_graph, tisane: kept verbatim
            blade_extra["other_rows"].append({"spec_id": r.spec_id, "kind": r.kind, "data": d})
    # models stand for the variables whose columns they use (BLADE's own linking rule, on prefixed columns)
    for m in ds.models:
        mine = _prefixed(m.columns)
        m.variable_ids = [v.id for v in ds.variables if _prefixed(v.columns) & mine]
        m.extra = {"blade": next(r.data for r in rows if r.spec_id == m.id), "blade_digest": _digest(_structured(m))}
    questions: list[MCQ] = []
    if mcqs is not None:
        blade_extra["mcq_keys"] = [k for k in mcqs]
        blade_extra["mcq_transform_keys"] = list(mcqs.get("mcqs_transform") or {})  # some keys hold no MCQ
        for i, raw in enumerate(mcqs.get("mcqs_cvar") or []):
            questions.append(_mcq(f"{name}:cvar:{i}", raw, "variable"))
        for key, items in (mcqs.get("mcqs_transform") or {}).items():
            for j, raw in enumerate(items):
                questions.append(_mcq(f"{name}:transform:{_digest(key)[:8]}:{j}", raw, "transform", concept=key))
    ds.extra = {"blade": blade_extra}
    return ds.with_parts(**{MCQPart.kind: MCQPart(items=questions)})


# --------------------------------------------------------------------------------------------------- export


def _unchanged(item: Any, digest: str) -> bool:
    blade = item.extra.get("blade")
    return isinstance(blade, dict) and item.extra.get("blade_digest") == digest


def _columns_out(cols: Sequence[ReleaseColumn]) -> tuple[list[str], list[str], list[str]]:
    orig = [ORIGINAL_PREFIX + c.name for c in cols if c.origin == "original"]
    derived = [DERIVED_PREFIX + c.name for c in cols if c.origin == "derived"]
    producers = list(dict.fromkeys(c.producer_id for c in cols if c.origin == "derived" and c.producer_id))
    return orig, derived, producers


def _transform_out(t: ReleaseTransform) -> dict[str, Any]:
    if _unchanged(t, _digest(_structured(t))):
        return t.extra["blade"]
    out = dict(t.extra.get("blade") or {})
    out.update({"specification": t.specification, "spec_name": t.spec_name, "trans_verb": list(t.verbs),
                "code": t.code, "rationale": t.rationale, "tags": list(t.tags),
                "input_cols_to_output_col_mapping": [[list(m.inputs), m.output] for m in t.mapping],
                "branches": [b.model_dump() for b in t.branches]})
    return out


def _variable_out(v: ReleaseVariable, leaves: dict[str, bool]) -> dict[str, Any]:
    if _unchanged(v, _digest(_structured(v))):
        return v.extra["blade"]
    orig, derived, producers = _columns_out(v.columns)
    out = dict(v.extra.get("blade") or {})
    out.update({"variable_type": v.variable_type, "concept": v.concept, "interaction": v.interaction,
                "on": v.moderates, "rationale": v.rationale, "random_effect": v.random_effect, "tags": list(v.tags),
                "final_columns_orig": orig, "final_columns_derived": derived,
                "final_columns_derived_spec_ids": producers,
                "final_columns_leaf_spec_ids": [p for p in producers if leaves.get(p)],
                "column_rationales": {(ORIGINAL_PREFIX if c.origin == "original" else DERIVED_PREFIX) + c.name:
                                      c.rationale for c in v.columns}})
    return out


def _model_out(m: ReleaseModel, leaves: dict[str, bool]) -> dict[str, Any]:
    if _unchanged(m, _digest(_structured(m))):
        return m.extra["blade"]
    orig, derived, producers = _columns_out(m.columns)
    out = dict(m.extra.get("blade") or {})
    out.update({"specification": m.specification or m.family, "spec_name": m.spec_name or spec_name_from_specification(m.specification),
                "rationale": m.rationale, "code": m.code, "tags": list(m.tags),
                "associated_columns_orig": orig, "associated_columns_derived": derived,
                "associated_columns_derived_spec_ids": producers,
                "associated_columns_leaf_spec_ids": [p for p in m.transform_ids if leaves.get(p)] or
                [p for p in producers if leaves.get(p)],
                "associated_specified_spec_ids": list(m.transform_ids)})
    out.setdefault("dependencies", [])
    return out


def _majority(votes: Sequence[Vote], question: str) -> str | None:
    answers: list[str] = [v.answer for v in votes if v.question == question and v.answer is not None]
    if not answers:
        return None
    return max(["yes", "no", "unsure"], key=answers.count)


def _alternative_out(alt: Alternative, votes: Sequence[Vote]) -> dict[str, Any]:
    if _unchanged(alt, _alt_digest(alt, [v for v in votes if v.annotator == BLADE_ANNOTATOR.id])) and \
            all(v.annotator == BLADE_ANNOTATOR.id for v in votes):
        return alt.extra["blade"]
    out = dict(alt.extra.get("blade") or {})
    out.update({k: v for k, v in alt.payload.items()})
    questions = CVAR_QUESTIONS if alt.kind == "variable" else TRANSFORM_QUESTIONS
    for key, question in questions.items():
        answer = _majority(votes, question)
        out[key] = _BLADE_ANSWERS[answer] if answer else None
    explanations = [v.explanation for v in votes if v.explanation]
    out["annotator_explanation"] = explanations[0] if len(set(explanations)) <= 1 and explanations else \
        "\n".join(dict.fromkeys(explanations))
    return out


def blade_rows_from_release(ds: DatasetRelease) -> list[tuple[str, str, dict[str, Any]]]:
    """The rows of BLADE's ``annotations.csv`` (spec_id, kind, JSON object), in the imported order when known."""
    blade = ds.extra.get("blade", {}) if isinstance(ds.extra.get("blade"), dict) else {}
    children = {d for t in ds.transforms for b in t.branches for d in b.dependencies}
    leaves = {t.id: t.id not in children for t in ds.transforms}
    by_id: dict[str, tuple[str, dict[str, Any]]] = {
        ROOT_SPEC_ID: ("transform", blade.get("root", {"spec_name": "ROOT"}))}
    for t in ds.transforms:
        by_id[t.id] = ("transform", _transform_out(t))
    for v in ds.variables:
        by_id[v.id] = ("conceptual", _variable_out(v, leaves))
    for m in ds.models:
        by_id[m.id] = ("model", _model_out(m, leaves))
    for alt in ds.alternatives:
        kind = "annotate_cvar" if alt.kind == "variable" else "annotate_transform"
        by_id[alt.id] = (kind, _alternative_out(alt, [v for v in ds.votes if v.target_id == alt.id]))
    for other in blade.get("other_rows", []):
        by_id[other["spec_id"]] = (other["kind"], other["data"])
    ordered = [sid for sid, _ in blade.get("row_order", []) if sid in by_id]
    ordered += [sid for sid in by_id if sid not in set(ordered)]
    return [(sid, by_id[sid][0], by_id[sid][1]) for sid in ordered]


def _mcq_out(item: MCQ) -> dict[str, Any]:
    if _unchanged(item, _digest(_structured(item))):
        return item.extra["blade"]
    text_key = "cvar_str" if item.kind == "variable" else "code"
    # BLADE's own extra keys come back; forkpaths' provenance stays in the native release only
    options = [{text_key: o.text, "rationale": o.rationale, "is_llm_generated": o.is_llm_generated,
                **{k: v for k, v in o.extra.items() if k != "provenance"}} for o in item.options]
    out: dict[str, Any] = {}
    if item.kind == "transform":
        out["coneptual_var_str"] = item.concept  # sic: BLADE's own key
    out.update({"mc_type": item.mc_type, "options": options,
                "correct_answer": options[item.correct_index] if 0 <= item.correct_index < len(options) else None})
    return out


def blade_mcqs_from_release(ds: DatasetRelease) -> dict[str, Any] | None:
    """BLADE's ``mcq_dataset.json`` content, or None when the dataset has no MCQs and never had the file."""
    blade = ds.extra.get("blade", {}) if isinstance(ds.extra.get("blade"), dict) else {}
    questions = MCQPart.of(ds).items
    if not questions and "mcq_keys" not in blade:
        return None
    transform: dict[str, list[dict[str, Any]]] = {key: [] for key in blade.get("mcq_transform_keys", [])}
    for item in questions:
        if item.kind == "transform":
            transform.setdefault(item.concept, []).append(_mcq_out(item))
    out = {"mcqs_cvar": [_mcq_out(m) for m in questions if m.kind == "variable"], "mcqs_transform": transform}
    keys = blade.get("mcq_keys") or list(out)
    return {k: out.get(k) for k in keys if k in out} | {k: v for k, v in out.items() if k not in keys}

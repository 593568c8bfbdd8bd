"""Judge one analysis's variables and model against the ground truth, BLADE's way (blade-reference 4.5, 4.6),
and turn the outcome into the run record the metrics consume.

Variables: per ground-truth role bucket (IV, DV, Control, Moderator) the judge compares the ground truth's
variables of that role with the agent's of the same role. A bucket the agent left empty is skipped (it cannot
match; BLADE still asked its LLM). Models: the ground-truth specifications are de-duplicated
(``strip().lower()``), the judge names the equivalent ones, and each match fans out to every row with that
specification. For every matched row the variables linked to the ground-truth model and those linked to the
agent's model (agent columns that the model uses, directly or through lineage) are compared per type (IV, DV,
Control; moderators count as controls here, as in BLADE). Unlike BLADE, each row is checked against *its own*
variables (``cvars_all_matched``); the representative-row check BLADE actually performs is kept next to it
(``cvars_all_matched_representative``) for ``blade`` mode.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, Field

from evaluation.judges.base import (
    MATCH_THRESHOLD,
    AgentVar,
    GTVariable,
    Judge,
    JudgeError,
    VariableJudgement,
)
from evaluation.judges.decisions import GroundTruthDecisions, normalise_spec
from evaluation.judges.model_code import AgentModel
from evaluation.records import (
    BLADE_GENERATION_FAILED,
    FailureCategory,
    ModelMatchRecord,
    RunRecord,
    TransformMatch,
    VariableMatchRecord,
)
from evaluation.submissions import AnalysisStatus, CodeStatus, SubmittedAnalysis

__all__ = ["AnalysisJudgement", "agent_variables", "judge_analysis", "run_record_for_unscored"]

ROLES = ("IV", "DV", "Control", "Moderator")
JUDGED_TOGETHER = (("IV",), ("DV",), ("Control", "Moderator"))  # one judge request per group (see _judge)


class AnalysisJudgement(BaseModel):
    """Everything the judge said about one analysis, with provenance, plus the resulting run record."""

    variables: list[VariableMatchRecord] = Field(default_factory=list)
    models: list[ModelMatchRecord] = Field(default_factory=list)
    agent_model: AgentModel | None = None
    record: RunRecord


def _lineage(columns: Sequence[str], lineage: dict[str, list[str]], model: AgentModel | None = None) -> list[str]:
    out: set[str] = set()
    for col in columns:
        if model is not None and col in model.derived_in_model and col not in lineage:
            out |= set(_lineage(model.derived_in_model[col], lineage))
        else:
            out |= set(lineage.get(col) or [col])
    return sorted(out)


def agent_variables(analysis: SubmittedAnalysis, lineage: dict[str, list[str]],
                    model: AgentModel | None = None) -> list[AgentVar]:
    """The agent's variables with the original columns behind them."""
    assert analysis.analysis is not None
    return [AgentVar(index=i, role=role, description=v.description, columns=list(v.columns),
                     original_columns=_lineage(v.columns, lineage, model))
            for i, (role, v) in enumerate(analysis.analysis.cvars.flat())]


def _records(judgements: Sequence[VariableJudgement], gt: Sequence[GTVariable], agent: Sequence[AgentVar],
             ) -> list[VariableMatchRecord]:
    gts = {g.id: g for g in gt}
    ags = {a.index: a for a in agent}
    return [VariableMatchRecord(gt_id=j.gt_id, gt_text=gts[j.gt_id].text, agent_index=j.agent_index,
                                agent_text=ags[j.agent_index].text, role=gts[j.gt_id].role,
                                similarity=j.similarity, judge=j.judge, rationale=j.rationale)
            for j in judgements if j.gt_id in gts and j.agent_index in ags]


def _all_matched(gt: Sequence[GTVariable], agent: Sequence[AgentVar], pairs: dict[tuple[str, int], int],
                 threshold: int) -> bool | None:
    """BLADE's ``is_cvar_all_matched``: per type, every GT and every agent variable is in a pair >= threshold."""
    if not agent:
        return None
    bucket = {"Moderator": "Control"}
    ok = {pair for pair, s in pairs.items() if s >= threshold}
    for role in ("IV", "DV", "Control"):
        g = [x for x in gt if bucket.get(x.role, x.role) == role]
        a = [x for x in agent if bucket.get(x.role, x.role) == role]
        if any(not any((x.id, y.index) in ok for y in a) for x in g):
            return False
        if any(not any((x.id, y.index) in ok for x in g) for y in a):
            return False
    return True


def _pair_scores(judge: Judge, gt: Sequence[GTVariable], agent: Sequence[AgentVar], ctx: GroundTruthDecisions,
                 cache: dict[tuple[str, int], int], seen: set[tuple[frozenset[str], frozenset[int]]],
                 ) -> list[VariableJudgement]:
    """Judge (gt × agent) per type, once per distinct (GT set, agent set) and never a pair twice."""
    bucket = {"Moderator": "Control"}
    new: list[VariableJudgement] = []
    for role in ("IV", "DV", "Control"):
        g = [x for x in gt if bucket.get(x.role, x.role) == role]
        a = [x for x in agent if bucket.get(x.role, x.role) == role]
        key = (frozenset(x.id for x in g), frozenset(x.index for x in a))
        if not g or not a or key in seen or all((x.id, y.index) in cache for x in g for y in a):
            continue
        seen.add(key)
        for j in judge.match_variables(g, a, context=ctx.context):
            cache[(j.gt_id, j.agent_index)] = max(j.similarity, cache.get((j.gt_id, j.agent_index), 0))
            new.append(j)
        for x in g:
            for y in a:
                cache.setdefault((x.id, y.index), 0)
    return new


def run_record_for_unscored(analysis: SubmittedAnalysis) -> RunRecord:
    """The run record of an analysis that could not be judged at all (failed generation, invalid, unknown
    dataset)."""
    category = {AnalysisStatus.GENERATION_FAILED: FailureCategory.GENERATION_FAILED,
                AnalysisStatus.UNKNOWN_DATASET: FailureCategory.UNKNOWN_DATASET}.get(analysis.status,
                                                                                    FailureCategory.INVALID)
    blade = analysis.blade_status if analysis.blade_status is not None else (
        3 if category == FailureCategory.UNKNOWN_DATASET else BLADE_GENERATION_FAILED)
    return RunRecord(key=analysis.key, failure=category, failure_message=analysis.message, blade_status=blade)


def judge_analysis(gt: GroundTruthDecisions, analysis: SubmittedAnalysis, judge: Judge, *,
                   transform: TransformMatch | None = None, frame_columns: Sequence[str] | None = None,
                   threshold: int = MATCH_THRESHOLD) -> AnalysisJudgement:
    """Judge one analysis; a judge that fails marks the run ``judge_failed`` instead of raising.

    Args:
        gt: the dataset's ground-truth variables and models.
        analysis: the submitted analysis (any status; unscorable ones get an empty record with their failure).
        judge: the judge.
        transform: the transform side (matched units, final-frame column lineage); ``None``: not run.
        frame_columns: columns of the agent's final frame, when known (helps read ``df.col`` and ``drop``).
        threshold: the similarity from which a variable pair counts (BLADE: 8).
    """
    transform = transform or TransformMatch()
    if analysis.analysis is None or analysis.status == AnalysisStatus.UNKNOWN_DATASET:
        return AnalysisJudgement(record=run_record_for_unscored(analysis))
    lineage = transform.column_lineage
    record = RunRecord(key=analysis.key, transform=transform)
    if transform.status in ("failed", "timeout", "empty") or analysis.transform_status not in (None, CodeStatus.OK):
        record.failure = (FailureCategory.TIMEOUT if transform.status == "timeout"
                          else FailureCategory.TRANSFORM_FAILED)
        record.failure_message = transform.message or analysis.transform_message
        record.blade_status = 5  # BLADE scores variables and model of a run whose transform failed to run
    if transform.blade_run_status is not None:
        record.blade_status = transform.blade_run_status
    try:
        return _judge(gt, analysis, judge, record, lineage, frame_columns, threshold)
    except JudgeError as exc:
        record.failure = FailureCategory.JUDGE_FAILED
        record.failure_message = f"analysis {analysis.key}: the {judge.name} judge failed: {exc}"
        record.blade_status = 6  # MATCHING_FAILED
        record.matched_cvars, record.matched_cvars2, record.matched_models = [], [], []
        record.matched_models_cvar, record.matched_models_cvar_blade = [], []
        return AnalysisJudgement(record=record)


def _judge(gt: GroundTruthDecisions, analysis: SubmittedAnalysis, judge: Judge, record: RunRecord,
           lineage: dict[str, list[str]], frame_columns: Sequence[str] | None, threshold: int,
           ) -> AnalysisJudgement:
    agent_model: AgentModel | None = None
    if analysis.model is not None:
        agent_model = judge.describe_model(analysis.model, context=gt.context, frame_columns=frame_columns)
    agent = agent_variables(analysis, lineage, agent_model)
    gt_roles = {v.role for v in gt.variables}
    record.num_cvars2 = len(agent)
    record.num_cvars2_shown = sum(1 for a in agent if a.role in gt_roles)

    # 1. variables, per GT role (BLADE). Controls and moderators go to the judge in one request, because step 3
    # pairs them (BLADE buckets moderators with controls there): asking per role left the cross pairs for step 3,
    # one more request per model row (10 for one analysis with a moderator). Only same-role pairs count here.
    judged: list[VariableJudgement] = []
    pair_cache: dict[tuple[str, int], int] = {}
    roles_of = {v.id: v.role for v in gt.variables}
    for roles in JUDGED_TOGETHER:
        g = [v for v in gt.variables if v.role in roles]
        a = [x for x in agent if x.role in roles]
        if g and a:
            for j in judge.match_variables(g, a, context=gt.context):
                pair_cache[(j.gt_id, j.agent_index)] = max(j.similarity, pair_cache.get((j.gt_id, j.agent_index), 0))
                if roles_of.get(j.gt_id) == agent[j.agent_index].role:
                    judged.append(j)
            for x in g:
                for y in a:
                    pair_cache.setdefault((x.id, y.index), 0)
    variables = _records(judged, gt.variables, agent)
    texts = {v.id: v.text for v in gt.variables}
    record.matched_cvars = sorted({texts[j.gt_id] for j in judged if j.similarity >= threshold})
    record.matched_cvars2 = sorted({agent[j.agent_index].text for j in judged if j.similarity >= threshold})

    # 2. models
    models: list[ModelMatchRecord] = []
    if agent_model is None or not agent_model.family:
        if record.failure == FailureCategory.NONE:
            record.failure = FailureCategory.MODEL_NOT_UNDERSTOOD
            record.failure_message = (f"analysis {analysis.key}: "
                                      + (" ".join(agent_model.notes) if agent_model else analysis.model_message))
        return AnalysisJudgement(variables=variables, agent_model=agent_model, record=record)
    unique: dict[str, list[int]] = {}
    for i, m in enumerate(gt.models):
        unique.setdefault(normalise_spec(m.specification), []).append(i)
    reps = [gt.models[rows[0]] for rows in unique.values()]
    model_judgements = judge.match_models(reps, agent_model, context=gt.context)
    if model_judgements:
        record.matched_models = [reps[model_judgements[0].gt_index].specification]

    # 3. per matched model row: do its variables match the agent model's variables?
    linked_cols = set(_lineage(agent_model.columns, lineage, agent_model)) | set(agent_model.columns)
    agent_linked = [a for a in agent if set(a.columns) & set(agent_model.columns)
                    or set(a.original_columns) & linked_cols]
    by_id = {v.id: v for v in gt.variables}
    seen: set[tuple[frozenset[str], frozenset[int]]] = set()
    # rows share variable sets: a verdict holds until the pair scores change (a pair judged or added)
    verdicts: dict[tuple[int, int, tuple[str, ...]], bool | None] = {}

    def all_matched(vars_: list[GTVariable]) -> bool | None:
        key = (len(judged), len(pair_cache), tuple(v.id for v in vars_))
        if key not in verdicts:
            verdicts[key] = _all_matched(vars_, agent_linked, pair_cache, threshold)
        return verdicts[key]

    for mj in model_judgements:
        rep = reps[mj.gt_index]
        rep_vars = [by_id[i] for i in rep.variable_ids if i in by_id]
        for row_index in unique[normalise_spec(rep.specification)]:
            row = gt.models[row_index]
            row_vars = [by_id[i] for i in row.variable_ids if i in by_id]
            for vars_ in (row_vars, rep_vars):
                judged += _pair_scores(judge, vars_, agent_linked, gt, pair_cache, seen)
            own = all_matched(row_vars)
            representative = all_matched(rep_vars)
            models.append(ModelMatchRecord(
                gt_id=row.id, representative_id=rep.id, specification=row.specification, judge=mj.judge,
                rationale=mj.rationale, cvars_all_matched=own, cvars_all_matched_representative=representative))
    variables = _records(judged, gt.variables, agent)
    label = _model_cvar_label
    # one label per run, as BLADE; the fixed one names the row itself so distinct rows count apart in coverage
    record.matched_models_cvar = sorted({f"{label(gt, m.gt_id)} [{m.gt_id}]" for m in models
                                         if m.cvars_all_matched})[:1]
    record.matched_models_cvar_blade = sorted({label(gt, m.representative_id) for m in models
                                               if m.cvars_all_matched_representative})[:1]
    if models and not agent_linked:
        # BLADE: the agent's model has no linked variables → metrics crash → GETTING_METRICS_FAILED (4.6)
        record.blade_status = 7
    return AnalysisJudgement(variables=variables, models=models, agent_model=agent_model, record=record)


def _model_cvar_label(gt: GroundTruthDecisions, model_id: str) -> str:
    """BLADE's ``"<model spec_name> | <sorted GT cvars>"`` label of a fully matched model."""
    m = next(x for x in gt.models if x.id == model_id)
    texts = sorted(v.text for v in gt.variables if v.id in m.variable_ids)
    return f"{m.specification.strip()} | {', '.join(texts)}"

"""Programmatic tasks (issue 20): import them, propose candidate checks and artifacts (by an LLM or a peer), vote
on them like any decision, run the release gate, and put what passed into releases.

Tasks are curated items (:class:`CuratedItem` rows of this kind, their payload a
:class:`evaluation.tasks.programmatic.TaskPayload`) and candidates are :class:`CuratedCandidate` rows of role
``check`` or ``artifact`` (written through :mod:`curation.services.curated`, which validates their payloads); votes are the usual :class:`Vote` rows (``target_kind``
``prog_check`` / ``prog_artifact``, cast with :func:`curation.services.votes.cast_vote`, in stage 2, by analysts
who submitted stage 1), and their status comes from the dataset's decision rule (:mod:`curation.ground_truth`),
a stage-3 meeting outcome, or an import (a :class:`Consensus` row with the basis "imported").

A check is **released** when its status is justifiable AND the release gate (run on the task's accepted artifacts
and on known wrong outputs) released it for its current code; editing a check makes a new candidate (``seed_id``
says which it edits), which needs its own votes and gate.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlmodel import Session, col, select

from curation.artifacts import ArtifactStore
from curation.errors import (
    BlindingViolation,
    CurationError,
    DecidedElsewhere,
    NotFoundError,
    PermissionDenied,
    ScoringError,
)
from curation.ground_truth import apply_rule, verdicts_by_voter
from curation.models import (
    Consensus,
    CuratedCandidate,
    CuratedItem,
    Dataset,
    MeetingOutcome,
    ReleaseRecord,
    Role,
    User,
    Vote,
    utcnow,
)
from curation.services.accounts import require_role
from curation.services.actor import judges_actor
from curation.services.blinding import withheld_ground_truth
from curation.services.curated import (
    add_candidate,
    add_item,
    candidates_of,
    item_by_key,
    items_of,
)
from curation.services.ground_truth import GroundTruthItem, dataset_rule, latest_outcomes
from curation.services.kind_curation import KindCuration
from curation.services.release_records import release_record, semver_key
from curation.services.releases import published_release
from curation.services.scoring import get_run, release_for_scoring, stored_result, stored_submissions
from curation.services.stages import lock_for_review_write, require_reviewer
from evaluation.programmatic.groundtruth import (
    GateResult,
    gate,
)
from evaluation.programmatic.runner import CheckLimits, check_code_problem, clean_ground_truth
from exports.programmatic_part import (
    PROGRAMMATIC_TASK_TYPES,
    ProgrammaticArtifact,
    ProgrammaticCheck,
    ProgrammaticPart,
    ProgrammaticTaskRelease,
)

__all__ = [
    "agenda_items",
    "CandidateView",
    "ProgrammaticError",
    "Task",
    "TaskView",
    "artifact_payload",
    "check_payload",
    "import_datascibench_tasks",
    "import_programmatic_tasks",
    "list_programmatic_tasks",
    "next_position",
    "programmatic_run_details",
    "propose_artifact",
    "propose_check",
    "release_task",
    "release_programmatic_tasks",
    "released_task",
    "run_release_gate",
    "task_by_id",
    "task_for_scoring",
    "task_inputs",
    "task_row",
]

log = logging.getLogger(__name__)
MAX_ARTIFACT_BYTES = 20 * 1024 * 1024
CURATING = (Role.CURATOR, Role.ADMIN)
KIND = ProgrammaticPart.kind  # the curated items and candidates of this kind are its tasks and their candidates


class ProgrammaticError(CurationError):
    """A programmatic task, check or artifact that cannot be stored or run (what is wrong, what to do)."""


def code_hash(payload: Mapping[str, Any]) -> str:
    """What the gate's evidence is about: the check's code, rule and ground-truth path."""
    body = json.dumps({k: payload.get(k) for k in ("code", "rule", "ground_truth")}, sort_keys=True)
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


@dataclass
class CandidateView:
    """A candidate check or artifact with its status (from votes, a meeting, or an import) and its gate."""

    item: CuratedCandidate
    status: str
    why: str
    votes: list[dict[str, Any]] = field(default_factory=list)

    @property
    def released(self) -> bool:
        if self.item.role == "artifact":
            return self.status == "justifiable"
        g = self.item.gate or {}
        return self.status == "justifiable" and bool(g.get("released")) and \
            g.get("code_hash") == code_hash(self.item.payload)


@dataclass(frozen=True)
class Task:
    """A programmatic task: its curated item's columns and its payload's fields."""

    id: int
    dataset_id: int
    key: str
    prompt: str
    input_files: list[str]
    data_source_type: str
    extra: dict[str, Any]
    created_by_id: int | None = None
    row: CuratedItem | None = field(default=None, repr=False, compare=False)

    @classmethod
    def of(cls, row: CuratedItem) -> Task:
        p = row.payload
        return cls(id=row.id or 0, dataset_id=row.dataset_id, key=row.key, prompt=p["prompt"],
                   input_files=list(p.get("input_files") or []), data_source_type=p.get("data_source_type") or "",
                   extra=dict(p.get("extra") or {}), created_by_id=row.created_by_id, row=row)


@dataclass
class TaskView:
    task: Task
    dataset: str
    checks: list[CandidateView]
    artifacts: list[CandidateView]


def _status(session: Session, items: Sequence[CuratedCandidate], dataset_id: int) -> list[CandidateView]:
    rule = dataset_rule(session=session, dataset_id=dataset_id)
    ids = [i.id for i in items]
    votes: dict[str, list[Vote]] = {}
    consensus: dict[str, Consensus] = {}
    outcomes: dict[str, MeetingOutcome] = {}
    if ids:
        for v in session.exec(select(Vote).where(col(Vote.target_id).in_(ids),
                                                 col(Vote.target_kind).in_(["prog_check", "prog_artifact"]))
                              .order_by(col(Vote.id))).all():
            votes.setdefault(v.target_id, []).append(v)
        for c in session.exec(select(Consensus).where(col(Consensus.target_id).in_(ids))).all():
            consensus[c.target_id] = c
        for o in session.exec(select(MeetingOutcome).where(col(MeetingOutcome.target_id).in_(ids))
                              .order_by(col(MeetingOutcome.recorded_at), col(MeetingOutcome.id))).all():
            outcomes[o.target_id] = o
    out = []
    for item in items:
        vs = votes.get(item.id, [])
        rows = [{"annotator_id": v.annotator_id, "question": v.question, "answer": v.answer,
                 "explanation": v.explanation} for v in vs]
        if item.id in outcomes:
            o = outcomes[item.id]
            out.append(CandidateView(item, o.outcome, f"meeting {o.meeting_id}: {o.outcome} ({o.reason})", rows))
            continue
        record = consensus.get(item.id)
        if not vs and record is not None and record.rule == "imported":
            out.append(CandidateView(item, record.status, record.note or "imported as accepted ground truth", rows))
            continue
        verdicts = verdicts_by_voter(item.role, ((str(v.annotator_id), v.question, v.answer) for v in vs))
        result = apply_rule(rule, list(verdicts.values()))
        out.append(CandidateView(item, result.status, result.why, rows))
    return out


def task_by_id(*, session: Session, task_id: int) -> Task:
    row = session.get(CuratedItem, task_id)
    if row is None or row.kind != KIND:
        raise NotFoundError(f"There is no programmatic task {task_id}.")
    return Task.of(row)


def _items(session: Session, task_id: int) -> list[CuratedCandidate]:
    return candidates_of(session=session, kind=KIND, item_id=task_id)


def _view(session: Session, task: Task) -> TaskView:
    dataset = session.get(Dataset, task.dataset_id)
    views = _status(session, _items(session, task.id), task.dataset_id)
    return TaskView(task, dataset.name if dataset else "?", [v for v in views if v.item.role == "check"],
                    [v for v in views if v.item.role == "artifact"])


def agenda_items(*, session: Session, dataset_id: int) -> list[GroundTruthItem]:
    """The dataset's candidate checks and artifacts as ground-truth items (``target_kind`` ``prog_check`` /
    ``prog_artifact``), with their votes, their status under the dataset's rule, and the latest meeting outcome:
    what a stage-3 meeting puts on its agenda when they are contested or split, and decides. Items imported as
    accepted ground truth that nobody voted on have the basis "imported" (never on an agenda)."""
    rule = dataset_rule(session=session, dataset_id=dataset_id)
    tasks = {t.id: Task.of(t) for t in items_of(session=session, kind=KIND, dataset_id=dataset_id)}
    if not tasks:
        return []
    items = candidates_of(session=session, kind=KIND, dataset_id=dataset_id)
    ids = [i.id for i in items]
    votes: dict[str, list[dict[str, Any]]] = {}
    for v in session.exec(select(Vote).where(col(Vote.target_id).in_(ids),
                                             col(Vote.target_kind).in_(["prog_check", "prog_artifact"]))
                          .order_by(col(Vote.id))).all() if ids else []:
        votes.setdefault(v.target_id, []).append({"annotator_id": v.annotator_id, "question": v.question,
                                                  "answer": v.answer, "explanation": v.explanation})
    imported = {c.target_id for c in session.exec(select(Consensus).where(
        col(Consensus.target_id).in_(ids), Consensus.rule == "imported")).all()} if ids else set()
    outcomes = latest_outcomes(session=session, dataset_id=dataset_id)
    out = []
    for item in items:
        task = tasks.get(item.item_id)
        p = item.payload
        kind = f"prog_{item.role}"
        gt = GroundTruthItem(
            kind, item.id, item.role, item.source, item.proposed_by_id,
            f"{task.key}: {task.prompt}" if task else "", task_id=item.item_id,
            label=f"{p.get('function')} / {p.get('metric')}" if item.role == "check" else str(p.get("path")),
            code=str(p.get("code") or "") if item.role == "check" else "",
            rationale=f"Rule: {p['rule']}" if p.get("rule") else "",
            votes=votes.get(item.id, []),
            detail={"gate": item.gate or {}, "task_type": p.get("task_type"), "ground_truth": p.get("ground_truth")}
            if item.role == "check" else {"path": p.get("path"), "content_b64": p.get("content_b64"),
                                          "support": (item.extra or {}).get("support"),
                                          "ok_samples": (item.extra or {}).get("ok_samples")})
        verdicts = verdicts_by_voter(item.role, ((str(v["annotator_id"]), v["question"], v["answer"])
                                                 for v in gt.votes))
        gt.result = apply_rule(rule, list(verdicts.values()))
        if not gt.votes and item.id in imported:
            gt.basis = "imported"
        gt.meeting = outcomes.get((kind, item.id))
        if gt.meeting is not None:
            gt.basis = "meeting"
        out.append(gt)
    return out


@judges_actor
def list_programmatic_tasks(*, session: Session, actor: User, dataset_id: int | None = None,
                            review: bool = False) -> list[TaskView]:
    """The programmatic tasks (of one dataset, or all) with their candidates and statuses.

    ``review``: the analyst's view of one dataset's candidates, which shows peers' proposals: the same blinding
    as reviewing any decision applies (stage 2 open, own stage 1 submitted)."""
    require_role(actor, Role.ANALYST, Role.CURATOR, Role.ADMIN, Role.EVALUATOR)
    if dataset_id is not None:
        if review or actor.role == Role.ANALYST.value:
            require_reviewer(session=session, actor=actor, dataset_id=dataset_id)
    elif actor.role == Role.ANALYST.value:
        raise PermissionDenied("Analysts see the programmatic tasks of one dataset they review at a time.")
    return [_view(session, Task.of(t)) for t in items_of(session=session, kind=KIND, dataset_id=dataset_id)]


def artifact_payload(path: str, data: bytes) -> dict[str, Any]:
    if len(data) > MAX_ARTIFACT_BYTES:
        raise ProgrammaticError(f"The artifact {path} is {len(data) // 2**20} MB; artifacts are at most "
                                f"{MAX_ARTIFACT_BYTES // 2**20} MB.")
    clean = "/".join(p for p in path.replace("\\", "/").split("/") if p not in ("", "."))
    if not clean or ".." in clean.split("/"):
        raise ProgrammaticError(f"The artifact path {path!r} must be a relative path without '..'.")
    return {"path": clean, "sha256": hashlib.sha256(data).hexdigest(), "size": len(data),
            "content_b64": base64.b64encode(data).decode("ascii")}


def check_payload(fields: Mapping[str, Any]) -> dict[str, Any]:
    task_type = str(fields.get("task_type") or "")
    if task_type not in PROGRAMMATIC_TASK_TYPES:
        raise ProgrammaticError(f"The task type {task_type!r} is none of DataSciBench's six: "
                                f"{'; '.join(PROGRAMMATIC_TASK_TYPES)}.")
    for key in ("function", "metric", "code"):
        if not str(fields.get(key) or "").strip():
            raise ProgrammaticError(f"A check needs its {key}.")
    problem = check_code_problem(str(fields["code"]))
    if problem:
        raise ProgrammaticError(problem)
    rule = str(fields.get("rule") or "").strip() or None
    if rule:
        try:
            compile(rule, "<rule>", "eval")
        except SyntaxError as exc:
            raise ProgrammaticError(f"The rule does not parse ({exc.msg}); write a lambda such as "
                                    "lambda x: x >= 0.8.") from None
    gt = clean_ground_truth(str(fields.get("ground_truth") or ""))  # "gt/x.csv" means x.csv (issue 29, point 4)
    if ".." in gt.split("/"):
        raise ProgrammaticError("The ground-truth path must stay inside gt/ (no '..').")
    return {"task_type": task_type, "function": str(fields["function"]).strip(),
            "metric": str(fields["metric"]).strip(), "code": str(fields["code"]), "rule": rule, "ground_truth": gt}


def next_position(*, session: Session, task_id: int) -> int:
    return len(_items(session, task_id))


@judges_actor
def import_programmatic_tasks(*, session: Session, actor: User | None, dataset_id: int,
                              tasks: Sequence[ProgrammaticTaskRelease], accept: bool = True,
                              run_gate: bool = True, limits: CheckLimits | None = None,
                              inputs: Mapping[str, Mapping[str, bytes]] | None = None) -> list[Task]:
    """Store tasks (read from a DataSciBench tree or a release) on a dataset, with their checks and artifacts.

    ``accept``: their artifacts and checks count as accepted ground truth (basis "imported"), like BLADE's
    imported decisions; checks still need the release gate to be released (run now with ``run_gate``, with the
    task's input files of ``inputs``, by task key, beside the outputs as upstream has them).

    Raises:
        PermissionDenied: not a curator or admin (``actor`` None: the start-up registering the starters).
        ProgrammaticError: a task key that exists, an input file the dataset does not have.
    """
    if actor is not None:
        require_role(actor, *CURATING)
    dataset = session.get(Dataset, dataset_id)
    if dataset is None:
        raise NotFoundError(f"There is no dataset with id {dataset_id}.")
    have = {"data.csv", Path(dataset.data_relpath).name, *(f.get("name", "") for f in dataset.files)}
    stored = []
    for t in tasks:
        if item_by_key(session=session, kind=KIND, key=t.key) is not None:
            raise ProgrammaticError(f"A programmatic task named {t.key!r} exists already; nothing was imported.")
        mapped = t.extra.get("input_map") or {}
        missing = [f for f in t.input_files if mapped.get(f, f) not in have]
        if missing:
            raise ProgrammaticError(f"Task {t.key} reads {', '.join(missing)}, which dataset {dataset.name} does not "
                                    f"have (it has {', '.join(sorted(have))}); nothing was imported.")
        row = add_item(session=session, kind=KIND, dataset_id=dataset_id, key=t.key,
                       payload={"prompt": t.prompt, "input_files": list(t.input_files),
                                "data_source_type": t.data_source_type, "extra": dict(t.extra)},
                       created_by_id=actor.id if actor else None)
        items = []
        for pos, a in enumerate(t.artifacts):
            items.append(add_candidate(session=session, item=row, role="artifact", source="imported",
                                       payload=a.model_dump(), position=pos))
        for pos, c in enumerate(t.checks):
            payload = check_payload(c.model_dump())
            # evidence the gate left with the task (a release, the starter tree): about exactly this code
            kept = {**c.gate, "code_hash": code_hash(payload)} if c.gate and not run_gate else None
            items.append(add_candidate(session=session, item=row, role="check", source="imported", payload=payload,
                                       position=len(t.artifacts) + pos, gate=kept,
                                       extra={"imported_id": c.id, "provenance": c.provenance}))
        session.flush()
        if accept:
            for item in items:
                session.add(Consensus(dataset_id=dataset_id, target_kind=f"prog_{item.role}", target_id=item.id,
                                      status="justifiable", rule="imported",
                                      note="imported with the task as accepted ground truth"))
        if accept and run_gate:
            accepted = {a.path: base64.b64decode(a.content_b64) for a in t.artifacts}
            for item in (i for i in items if i.role == "check"):
                item.gate = {**_gate_record(_gate(t, item, accepted, None, limits, (inputs or {}).get(t.key))),
                             "code_hash": code_hash(item.payload)}
                session.add(item)
        stored.append(Task.of(row))
    session.flush()
    return stored


def _file_digests(dataset: Dataset, store: Path) -> dict[str, str]:
    """{SHA-256: file name} of every file of a dataset (its table as data.csv for a one-table dataset)."""
    out = {str(f["sha256"]): str(f["name"]) for f in dataset.files if f.get("sha256")}
    if not dataset.files:
        out.setdefault(dataset.data_sha256, "data.csv")
    return out


def _task_dataset(session: Session, actor: User, key: str, prompt: str, inputs: Mapping[str, bytes],
                  store: Path, name: str) -> Dataset:
    """A dataset of the task's own input files (and its prompt.json when it has none to read)."""
    import tempfile

    from curation.dataset_files import FolderBundle, FolderFile
    from curation.services.datasets import register_folder_dataset

    if session.exec(select(Dataset).where(Dataset.name == name)).first() is not None:
        raise ProgrammaticError(
            f"Task {key}: a dataset called {name!r} exists already. Name the dataset to use for it "
            f"(--dataset {key}=NAME, whose files must be byte-identical to the task's inputs) or rename it; nothing "
            "was imported.")
    files = dict(inputs) or {"prompt.json": json.dumps({"prompt": prompt}).encode("utf-8")}
    tables = [n for n in files if n.lower().endswith((".csv", ".tsv"))]
    main = tables[0] if tables else sorted(files)[0]
    with tempfile.TemporaryDirectory(prefix="forkpaths-datascibench-") as tmp:
        entries = []
        for rel, data in files.items():
            path = Path(tmp, *rel.split("/"))
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            lower = rel.lower()
            fmt = "csv" if lower.endswith(".csv") else "tsv" if lower.endswith(".tsv") else \
                "excel" if lower.endswith((".xlsx", ".xls")) else "json" if lower.endswith(".json") else "other"
            entries.append(FolderFile(name=rel, path=path, role="data" if inputs else "metadata", format=fmt,
                                      size=len(data)))
        rows = cols = 0
        if main.lower().endswith((".csv", ".tsv")):
            import io

            import pandas as pd

            try:
                frame = pd.read_csv(io.BytesIO(files[main]), sep="\t" if main.lower().endswith(".tsv") else ",")
                rows, cols = frame.shape
            except Exception:  # noqa: BLE001 - a table pandas cannot read is still the task's input, as it is
                rows = cols = 0
        bundle = FolderBundle(name=name, title=key, research_question=f"DataSciBench task {key}: {prompt[:500]}",
                              description=prompt, dictionary=[], files=entries, main_file=main, num_rows=rows,
                              num_columns=cols, source="datascibench", extra={"datascibench": {"task": key}})
        return register_folder_dataset(session=session, actor=actor, bundle=bundle, store=store)


@judges_actor
def import_datascibench_tasks(*, session: Session, actor: User, tasks: Sequence[Any], store: Path,
                              datasets: Mapping[str, str] | None = None, accept: bool = True,
                              run_gate: bool = True, limits: CheckLimits | None = None) -> list[Task]:
    """Store the tasks of a DataSciBench tree (:class:`exports.datascibench.DataSciBenchTask`), each with its own
    input files (curators and admins; one action: all or nothing).

    Each task becomes a dataset of its own (``datascibench_<task>``) holding its input files at their paths,
    unless ``datasets`` names an existing dataset for it (by task key, or ``"*"`` for every task): then each of
    the task's inputs must be byte-identical to a file of that dataset (a name alone never matches), and the task
    reads that file under its own name. A task whose prompt.json names a registered ``dataset`` (forkpaths's
    starter tasks) reads that dataset's files, as it says.

    Raises:
        PermissionDenied: not a curator or admin.
        NotFoundError: a named dataset that does not exist.
        ProgrammaticError: an input that no file of the named dataset has byte for byte; a task key or a dataset
            name that exists already.
    """
    from curation.dataset_files import slugify

    require_role(actor, *CURATING)
    chosen = dict(datasets or {})
    existing = sorted(set(session.exec(select(CuratedItem.key).where(CuratedItem.kind == KIND)).all())
                      & {r.task.key for r in tasks})
    if existing:
        raise ProgrammaticError(f"A programmatic task named {existing[0]!r} exists already"
                                f"{' (and ' + ', '.join(existing[1:]) + ')' if existing[1:] else ''}; nothing was "
                                "imported.")
    stored: list[Task] = []
    for read in tasks:
        t: ProgrammaticTaskRelease = read.task
        inputs: dict[str, bytes] = dict(read.inputs)
        named_by_task = (t.extra.get("prompt_json") or {}).get("dataset")
        wanted = chosen.get(t.key, chosen.get("*"))
        if named_by_task and not wanted:
            wanted = str(named_by_task)
            inputs = {}
        if wanted:
            dataset = session.exec(select(Dataset).where(Dataset.name == wanted)).first()
            if dataset is None:
                raise NotFoundError(f"Task {t.key}: there is no dataset named {wanted!r}; nothing was imported.")
            if inputs:
                digests = _file_digests(dataset, store)
                mapping, unmatched = {}, []
                for rel, data in inputs.items():
                    found = digests.get(hashlib.sha256(data).hexdigest())
                    if found is None:
                        unmatched.append(rel)
                    else:
                        mapping[rel] = found
                if unmatched:
                    raise ProgrammaticError(
                        f"Task {t.key}: dataset {dataset.name} has no file byte-identical to its input"
                        f"{'s' if len(unmatched) > 1 else ''} {', '.join(unmatched)} (files are matched by their "
                        "bytes, never by name alone); import the task without naming a dataset to give it its own. "
                        "Nothing was imported.")
                t = t.model_copy(update={"input_files": sorted(inputs),
                                         "extra": {**t.extra, "input_map": mapping}})
        else:
            name = f"datascibench_{slugify(t.key)}"[:128]
            dataset = _task_dataset(session, actor, t.key, t.prompt, inputs, store, name)
            t = t.model_copy(update={"input_files": sorted(inputs)})
        stored += import_programmatic_tasks(session=session, actor=actor, dataset_id=dataset.id or 0, tasks=[t],
                                            accept=accept, run_gate=run_gate, limits=limits,
                                            inputs={t.key: inputs} if inputs else None)
    return stored


def _as_check(item: CuratedCandidate, status: str = "accepted") -> ProgrammaticCheck:
    p = item.payload
    return ProgrammaticCheck(id=item.id, task_type=p["task_type"], function=p["function"], metric=p["metric"],
                             code=p["code"], rule=p.get("rule"), ground_truth=p.get("ground_truth") or "",
                             status=status, gate=item.gate or {},
                             provenance={"source": item.source, "seed_id": item.seed_id, **(item.extra or {})})


def _gate(task: ProgrammaticTaskRelease, item: CuratedCandidate, accepted: Mapping[str, bytes],
          wrong: Mapping[str, Mapping[str, bytes]] | None, limits: CheckLimits | None,
          inputs: Mapping[str, bytes] | None = None) -> GateResult:
    return gate(task, _as_check(item), accepted, wrong=wrong, limits=limits or CheckLimits(), inputs=inputs)


def _gate_record(result: GateResult) -> dict[str, Any]:
    return {**result.model_dump(mode="json"), "at": utcnow().isoformat()}


def release_task(*, session: Session, task: Task, released_only: bool = True) -> ProgrammaticTaskRelease:
    view = _view(session, task)
    artifacts = [ProgrammaticArtifact.model_validate({k: v.item.payload[k] for k in
                                                      ("path", "sha256", "size", "content_b64")})
                 for v in view.artifacts if v.released]
    checks = [_as_check(v.item) for v in view.checks if v.released or not released_only]
    return ProgrammaticTaskRelease(key=task.key, prompt=task.prompt, input_files=list(task.input_files),
                                   data_source_type=task.data_source_type, artifacts=artifacts, checks=checks,
                                   extra=dict(task.extra))


@judges_actor
def run_release_gate(*, session: Session, actor: User, item_id: str,
                     wrong: Mapping[str, Mapping[str, bytes]] | None = None,
                     limits: CheckLimits | None = None, store: Path | None = None) -> CuratedCandidate:
    """Run the release gate for a candidate check and store its evidence on it (curators and admins).

    ``wrong``: known wrong outputs (label → files) besides the ones made from the accepted artifacts.
    ``store``: the datasets store, to put the task's input files beside the outputs (as upstream has them);
    without it the check sees none.

    Raises:
        ProgrammaticError: the item is not a check, or the task has no accepted artifact and no wrong output.
    """
    require_role(actor, *CURATING)
    item = session.get(CuratedCandidate, item_id)
    if item is None or item.kind != KIND or item.role != "check":
        raise NotFoundError(f"There is no candidate check {item_id}.")
    task = task_by_id(session=session, task_id=item.item_id)
    spec = release_task(session=session, task=task)
    accepted = {a.path: base64.b64decode(a.content_b64) for a in spec.artifacts}
    if not accepted:
        raise ProgrammaticError(f"Task {task.key} has no accepted artifact yet: accept one (by votes, or a meeting) "
                                "before running the gate, which needs an output the check must pass on.")
    seen = dict(item.gate or {})
    inputs = task_inputs(session=session, task=task, store=store) if store is not None else None
    result = _gate(spec, item, accepted, wrong, limits, inputs)
    _unchanged_gate(session, item, seen, task.dataset_id)
    item.gate = {**_gate_record(result), "code_hash": code_hash(item.payload), "by": actor.id}
    session.add(item)
    session.flush()
    return item


def _unchanged_gate(session: Session, item: CuratedCandidate, seen: dict[str, Any], dataset_id: int) -> None:
    """The gate's record is written only over the one this run started from (the row locked, read again):
    of two curators gating one check at once, the later is told, and the first's evidence is kept."""
    lock_for_review_write(session=session, dataset_id=dataset_id)
    session.exec(select(CuratedCandidate).where(CuratedCandidate.id == item.id).with_for_update()
                 .execution_options(populate_existing=True)).one()
    now = dict(item.gate or {})
    if now != seen:
        who = session.get(User, now["by"]) if now.get("by") else None
        name = (who.display_name or who.username) if who else "another curator"
        verdict = "released it" if now.get("released") else "did not release it"
        raise DecidedElsewhere(f"{name} ran the release gate of this check while yours ran ({str(now.get('at', ''))[:19]} "
                               f"UTC) and {verdict}; their evidence is kept and yours was not stored. Reload to read "
                               "it, and run the gate again if needed.")


@judges_actor
def propose_check(*, session: Session, actor: User, task_id: int, fields: Mapping[str, Any],
                  seed_id: str | None = None) -> CuratedCandidate:
    """A peer's check (a new one, or an edit of ``seed_id``), checked for shape (never run here).

    Raises:
        ProgrammaticError: an unknown task type, a missing field, code that does not parse or defines no function.
    """
    task = task_by_id(session=session, task_id=task_id)
    require_reviewer(session=session, actor=actor, dataset_id=task.dataset_id)
    if seed_id is not None:
        seed = session.get(CuratedCandidate, seed_id)
        if seed is None or seed.item_id != task_id or seed.role != "check":
            raise NotFoundError(f"There is no check {seed_id} of task {task.key} to edit.")
    item = add_candidate(session=session, item=task_row(task), role="check", source="peer", proposed_by_id=actor.id,
                         seed_id=seed_id, payload=check_payload(fields), position=next_position(session=session, task_id=task_id))
    session.flush()
    if item.payload.get("code") and seed_id is None:
        log.info("check %s proposed for %s by %s", item.id, task.key, actor.username)
    return item


@judges_actor
def propose_artifact(*, session: Session, actor: User, task_id: int, path: str, data: bytes,
                     seed_id: str | None = None) -> CuratedCandidate:
    """A peer's ground-truth artifact (a file the correct solution writes)."""
    task = task_by_id(session=session, task_id=task_id)
    require_reviewer(session=session, actor=actor, dataset_id=task.dataset_id)
    item = add_candidate(session=session, item=task_row(task), role="artifact", source="peer", proposed_by_id=actor.id,
                         seed_id=seed_id, payload=artifact_payload(path, data),
                         position=next_position(session=session, task_id=task_id))
    session.flush()
    return item


def task_row(task: Task) -> CuratedItem:
    assert task.row is not None  # every Task the services make comes from its row
    return task.row


def task_inputs(*, session: Session, task: Task | CuratedItem, store: Path) -> dict[str, bytes]:
    """The bytes of the task's input files, from the dataset's stored folder (or its staging folder, before the
    transaction that registered it commits)."""
    from curation.services.datasets import stored_file

    if isinstance(task, CuratedItem):
        task = Task.of(task)
    dataset = session.get(Dataset, task.dataset_id)
    if dataset is None:
        raise NotFoundError(f"Task {task.key}'s dataset is gone.")
    main = Path(dataset.data_relpath)
    mapped = task.extra.get("input_map") or {}
    out = {}
    for name in task.input_files:
        rel = next((f.get("relpath") for f in dataset.files if f.get("name") == mapped.get(name, name)), None)
        path = stored_file(session=session, store=store, relpath=rel or (main.parent / name).as_posix())
        if mapped.get(name, name) == "data.csv" and not path.is_file():
            path = stored_file(session=session, store=store, relpath=dataset.data_relpath)
        try:
            out[name] = path.read_bytes()
        except OSError as exc:
            raise ProgrammaticError(f"The input file {name} of task {task.key} cannot be read from {path} "
                                    f"({exc.strerror or exc}).") from exc
    return out


def release_programmatic_tasks(*, session: Session, dataset_id: int) -> list[ProgrammaticTaskRelease]:
    """What a release carries for a dataset: each task with its accepted artifacts and its released checks
    (tasks with no released check are left out: there is nothing to score them with)."""
    out = [release_task(session=session, task=Task.of(t)) for t in items_of(session=session, kind=KIND, dataset_id=dataset_id)]
    return [t for t in out if t.checks]


@judges_actor
def task_for_scoring(*, session: Session, actor: User, key: str) -> ProgrammaticTaskRelease:
    """The current released form of one task (for ``forkpaths checks run`` against the database)."""
    require_role(actor, Role.EVALUATOR, Role.CURATOR, Role.ADMIN)
    row = item_by_key(session=session, kind=KIND, key=key)
    if row is None:
        known = [t.key for t in items_of(session=session, kind=KIND)]
        raise NotFoundError(f"There is no programmatic task {key!r} (known: {', '.join(known) or 'none'}).")
    return release_task(session=session, task=Task.of(row))


@judges_actor
def released_task(*, session: Session, actor: User, key: str, releases_root: Path,
                  version: str | None = None,
                  inputs: dict[str, bytes] | None = None) -> tuple[ProgrammaticTaskRelease, str]:
    """Task ``key`` as release ``version`` carries it (its released checks and accepted artifacts), read from the
    release's files after the checks scoring makes (record, MANIFEST and hashes); default: the newest release
    that holds the task. Returns the task and the version used; fills ``inputs``, when given, with the task's
    input files from the release's folder. Writes nothing.

    Raises:
        PermissionDenied: not an evaluator, curator or admin.
        NotFoundError: no such release; the release does not hold the task (its tasks are named); no release
            holds it.
        ReleaseError: the release's files were modified after it was cut.
        BlindingViolation: the actor is blind to the ground truth of the task's dataset in that release.
    """
    require_role(actor, Role.EVALUATOR, Role.CURATOR, Role.ADMIN)
    if version is not None:
        records = [release_record(session=session, version=version)]
    else:
        records = sorted(session.exec(select(ReleaseRecord)).all(), key=lambda r: semver_key(r.version),
                         reverse=True)
        if not records:
            raise NotFoundError("No release has been cut yet: cut one (forkpaths release cut) or run the task's "
                                "current checks from a DataSciBench tree (--datascibench ROOT).")
    for record in records:
        published = published_release(session=session, record=record, releases_root=releases_root)
        release = published.release
        for ds in release.datasets:
            task = next((t for t in ProgrammaticPart.of(ds).tasks if t.key == key), None)
            if task is None:
                continue
            _, withheld = withheld_ground_truth(session=session, actor=actor, release_version=record.version,
                                                names=[ds.name])
            if withheld:
                raise BlindingViolation(f"{withheld} Its checks show it; nothing was run.")
            if inputs is not None:
                from evaluation.tasks.programmatic import task_inputs as release_inputs

                inputs.update(release_inputs(release, published.folder).get(key, {}))
            return task, record.version
        if version is not None:
            held = sorted(t.key for d in release.datasets for t in ProgrammaticPart.of(d).tasks)
            raise NotFoundError(f"Release {version} holds no programmatic task {key!r} (it holds: "
                                f"{', '.join(held) or 'none'}).")
    raise NotFoundError(f"No release holds a programmatic task {key!r} (newest release: {records[0].version}); "
                        "its checks are released with the next cut once they pass the gate.")


@dataclass
class RunDetails:
    """A programmatic run's result and the output files it scored: {(run label, task): {path: bytes}}."""

    result: Any
    outputs: dict[tuple[str, str], dict[str, bytes]]
    code: dict[str, str] = field(default_factory=dict)  # check id → its code, from the run's release


@judges_actor
def programmatic_run_details(*, session: Session, actor: User, run_id: int, artifacts: ArtifactStore) -> RunDetails:
    """The result file and the submitted output folders of a succeeded programmatic run (evaluators, curators,
    admins; refused to whoever is blind to the release's ground truth, which the result quotes).

    Raises:
        NotFoundError / ScoringError: no such run, not a programmatic run, or its files are gone or altered.
    """
    from evaluation.programmatic.outputs import read_outputs_zip, split_by_task
    from evaluation.tasks import programmatic as kind
    from evaluation.tasks.programmatic import read_result

    run = get_run(session=session, actor=actor, run_id=run_id)
    if run.kind != kind.name or not run.result_sha256:
        raise NotFoundError(f"Run {run_id} is not a scored programmatic run.")
    _, withheld = withheld_ground_truth(session=session, actor=actor, release_version=run.release_version,
                                        names=sorted(run.dataset_hashes))
    if withheld:
        raise BlindingViolation(f"{withheld} The run's details show it.")
    try:
        result = read_result(stored_result(run, artifacts))
    except (OSError, ValueError) as exc:
        raise ScoringError(f"Run {run_id}: its result file {run.result_path} cannot be read ({exc}).") from exc
    keys = {o.task for o in result.outcomes}
    outputs: dict[tuple[str, str], dict[str, bytes]] = {}
    for index, (name, data) in enumerate(stored_submissions(run, artifacts)):
        label = f"run {index + 1} ({name})"
        for task, files in split_by_task(read_outputs_zip(data, label=name), keys, label=name).items():
            outputs[(label, task)] = files
    code: dict[str, str] = {}
    release = release_for_scoring(session=session, version=run.release_version, artifacts=artifacts)
    code = {c.id: c.code for d in release.datasets for t in ProgrammaticPart.of(d).tasks if t.key in keys
            for c in t.checks}
    return RunDetails(result, outputs, code)


def programmatic_release_part(*, session: Session, dataset: Dataset, who: Any = None) -> ProgrammaticPart:
    """The kind's part of ``dataset`` in a release being cut (its ``KindCuration.release_part``)."""
    return ProgrammaticPart(tasks=release_programmatic_tasks(session=session, dataset_id=dataset.id or 0))


CURATION = KindCuration(release_part=programmatic_release_part, agenda_items=agenda_items)

"""The stage-1 blinding rule, in one place, for every service that can show stage-1 work or ground truth.

Whoever has a stage-1 analysis of a dataset to do and has not submitted it is blind to peers' stage-1 work on
that dataset, whatever their role: an admin or curator who annotates a dataset is one more annotator of it,
and seeing a peer's variables or model first would bias their own analysis. "Has an analysis to do" means
being assigned to the dataset or having started an analysis of it (an assignment removed after starting does
not end the blindness). Analysts additionally stay blind to every dataset they have not submitted, assigned
or not (they have no business with other datasets' stage-1 work before their own is in).

The rule hides peers' work, so where there is none nothing is hidden: a dataset that holds no submitted
analysis, alternative, vote, consensus, MCQ or gold hypothesis (a starter dataset nobody has annotated yet) is never
withheld. Imported ground truth counts like any stage-1 work: BLADE's experts' decisions and imported checks come in
as consensus rows, and a DiscoveryBench dataset's imported gold hypotheses (from its metadata or answer key) are
its answers, so an annotator of the dataset who has not submitted sees them nowhere.
What counts is what is shown: the database as it is now for live pages, or a release's own content for what
is read from a release (its files, exports, ground truth built from it, scoring results against it).

Submitting one's analysis ends the blindness for that dataset. A curator or admin who will not annotate a
dataset after all can also be unassigned (by an admin) before starting.

Every service that withholds uses the sentences made here, so a refusal reads the same wherever it happens:
:func:`blind_datasets` gives one sentence per dataset, :func:`refusal_sentences` one sentence per cause.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from sqlmodel import Session, col, select

from curation.errors import BlindingViolation
from curation.models import (
    Alternative,
    Analysis,
    AnalysisStatus,
    Consensus,
    CuratedItem,
    Dataset,
    DatasetAssignment,
    HypothesisTask,
    ReleaseRecord,
    Role,
    User,
    Vote,
)
from curation.services.actor import judges_actor

__all__ = [
    "RELEASE_WORK_COUNTS",
    "blind_datasets",
    "blinding_reason",
    "datasets_holding_work",
    "is_blind",
    "refusal_sentences",
    "refuse_if_blind",
    "release_holding",
    "summary_holding",
    "withheld_ground_truth",
    "work_count",
]

#: The shared counts of a release record's summary that are recorded work; each kind's part adds the counts its
#: :class:`~exports.parts.ReleasePart` declares as ``work`` (e.g. a part's gold: the dataset's answer). A dataset
#: with all of them 0 holds only its question, description, dictionary, data table and imported content, which
#: every annotator sees anyway.
RELEASE_WORK_COUNTS = ("variables", "transforms", "models", "alternatives", "votes")


def work_count(counts: Mapping[str, Any]) -> int:
    """How much recorded work a release record's counts of one dataset hold (any format of the record)."""
    from evaluation.tasks import kinds_with  # the kinds load their engines: not for listing releases
    from exports.upgrade import upgrade_summary  # the 1.x kinds' part models: only when a record is counted

    c = upgrade_summary(dict(counts))
    declared = {k.name: k.release_part.work for k in kinds_with("release_part") if k.release_part is not None}
    total = sum(int(c.get(k, 0) or 0) for k in RELEASE_WORK_COUNTS)
    for kind, part in (c.get("parts") or {}).items():  # a part of a kind not known here: all of it, to be safe
        total += sum(int(n or 0) for label, n in part.items() if kind not in declared or label in declared[kind])
    return total

_STARTED, _ASSIGNED, _ANALYST = "started", "assigned", "analyst"


def _states(session: Session, user_id: int) -> tuple[dict[int, str], set[int]]:
    analyses = session.exec(select(Analysis).where(Analysis.annotator_id == user_id)).all()
    assigned = session.exec(select(DatasetAssignment.dataset_id).where(DatasetAssignment.user_id == user_id)).all()
    return {a.dataset_id: a.status for a in analyses}, set(assigned)


def _cause(actor: User, dataset_id: int, status: dict[int, str], assigned: set[int]) -> str | None:
    """Why ``actor`` has an analysis of the dataset to do (so would be blind to peers' work), or None."""
    if status.get(dataset_id) == AnalysisStatus.SUBMITTED.value:
        return None
    if dataset_id in status:
        return _STARTED
    if dataset_id in assigned:
        return _ASSIGNED
    return _ANALYST if actor.role == Role.ANALYST.value else None


def _work_kinds() -> list[str]:
    """The kinds whose curated items are recorded work in themselves (their release part counts them as work,
    as the MCQs): a programmatic task is not, its candidates' votes are."""
    from evaluation.tasks import KINDS  # the kinds load their engines: only when work is counted

    return sorted(k.name for k in KINDS.values() if k.curated is not None and k.release_part is not None
                  and k.release_part.work)


def datasets_holding_work(*, session: Session, dataset_ids: Iterable[int],
                          besides: int | None = None) -> set[int]:
    """Those of ``dataset_ids`` that hold recorded work in the database now: a submitted analysis (by someone
    other than the user ``besides``), an alternative, a vote, a consensus decision, an MCQ or a gold hypothesis
    (imported or decided). Drafts are private and never shown or released, so they do not count."""
    ids = sorted(set(dataset_ids))
    if not ids:
        return set()
    stmt = select(Analysis.dataset_id).where(col(Analysis.dataset_id).in_(ids),
                                             Analysis.status == AnalysisStatus.SUBMITTED.value)
    if besides is not None:
        stmt = stmt.where(Analysis.annotator_id != besides)
    found: set[int] = set(session.exec(stmt).all())
    for model in (Alternative, Vote, Consensus):
        rest = [i for i in ids if i not in found]
        if not rest:
            break
        found |= set(session.exec(select(model.dataset_id).where(col(model.dataset_id).in_(rest))).all())
    rest = [i for i in ids if i not in found]
    if rest and _work_kinds():
        found |= set(session.exec(select(CuratedItem.dataset_id).where(
            col(CuratedItem.dataset_id).in_(rest), col(CuratedItem.kind).in_(_work_kinds()))).all())
    rest = [i for i in ids if i not in found]
    if rest:
        found |= set(session.exec(select(HypothesisTask.dataset_id).where(
            col(HypothesisTask.dataset_id).in_(rest), col(HypothesisTask.gold_hypothesis).is_not(None),
            col(HypothesisTask.gold_hypothesis) != "")).all())
    return found


def summary_holding(summary: Mapping[str, Mapping[str, int]]) -> set[str]:
    """The datasets of a release record's summary that hold recorded work (see :data:`RELEASE_WORK_COUNTS`)."""
    return {name for name, counts in summary.items() if work_count(counts)}


def release_holding(*, session: Session, version: str) -> set[str] | None:
    """The datasets of release ``version`` that hold recorded work, or None when no such release is recorded."""
    record = session.exec(select(ReleaseRecord).where(ReleaseRecord.version == version)).first()
    return None if record is None else summary_holding(record.summary)


def _names(names: list[str]) -> str:
    quoted = [f"'{n}'" for n in names]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} and {quoted[-1]}"


def _sentence(cause: str, names: list[str]) -> str:
    which, it = _names(names), "it" if len(names) == 1 else "them"
    if cause == _STARTED:
        return (f"You have an unsubmitted stage-1 analysis of {which}, so peers' stage-1 work on {it} stays "
                "hidden from you until you submit yours.")
    if cause == _ASSIGNED:
        return (f"You are assigned to annotate {which} and have not submitted your stage-1 analysis, so peers' "
                f"stage-1 work on {it} stays hidden from you until you submit yours (or an admin removes the "
                "assignment).")
    return f"Peers' stage-1 work on {which} stays hidden from you until you submit your own analysis of {it}."


def blinding_reason(dataset_name: str, *, started: bool, assigned: bool) -> str:
    """The sentence shown in place of peers' stage-1 work on ``dataset_name``."""
    return _sentence(_STARTED if started else _ASSIGNED if assigned else _ANALYST, [dataset_name])


def _blind_causes(session: Session, actor: User, names: Iterable[str],
                  holding: Iterable[str] | None) -> dict[str, str]:
    wanted = sorted(set(names))
    if not wanted:
        return {}
    status, assigned = _states(session, actor.id or 0)
    rows = session.exec(select(Dataset).where(col(Dataset.name).in_(wanted))).all()
    causes = {d.name: (d.id or 0, c) for d in rows if (c := _cause(actor, d.id or 0, status, assigned)) is not None}
    if holding is not None:
        shown = set(holding)
        return {n: c for n, (_, c) in sorted(causes.items()) if n in shown}
    work = datasets_holding_work(session=session, dataset_ids={i for i, _ in causes.values()},
                                 besides=actor.id or 0)
    return {n: c for n, (i, c) in sorted(causes.items()) if i in work}


@judges_actor
def is_blind(*, session: Session, actor: User, dataset_id: int) -> bool:
    """True when ``actor`` must not see peers' stage-1 work on the dataset (see the module docstring)."""
    status, assigned = _states(session, actor.id or 0)
    if _cause(actor, dataset_id, status, assigned) is None:
        return False
    return dataset_id in datasets_holding_work(session=session, dataset_ids={dataset_id},
                                               besides=actor.id or 0)


@judges_actor
def blind_datasets(*, session: Session, actor: User, names: Iterable[str],
                   holding: Iterable[str] | None = None) -> dict[str, str]:
    """Which of the datasets called ``names`` ``actor`` is blind to, each with the sentence saying why.

    ``holding``: the names of the datasets that hold recorded work in what is being shown (a release's
    content); None: what the database holds now. A dataset without peers' work is never blind, and a name that
    no registered dataset has any more is not blind either: nobody can annotate it.
    """
    return {n: _sentence(c, [n]) for n, c in _blind_causes(session, actor, names, holding).items()}


@judges_actor
def refusal_sentences(*, session: Session, actor: User, names: Iterable[str],
                      holding: Iterable[str] | None = None) -> tuple[list[str], list[str]]:
    """The datasets of ``names`` ``actor`` is blind to, and one sentence per cause naming them."""
    causes = _blind_causes(session, actor, names, holding)
    grouped: dict[str, list[str]] = {}
    for name, cause in causes.items():
        grouped.setdefault(cause, []).append(name)
    order = (_STARTED, _ASSIGNED, _ANALYST)
    return list(causes), [_sentence(c, grouped[c]) for c in order if c in grouped]


@judges_actor
def refuse_if_blind(*, session: Session, actor: User, dataset: str, what: str = "",
                    holding: Iterable[str] | None = None) -> None:
    """Raise :class:`BlindingViolation` (why, then ``what`` was refused) when ``actor`` is blind to the stage-1
    work of the dataset called ``dataset``: for services that show that work, directly (the review queue) or
    under another name (MCQs, generated alternatives' seeds, ground truth in scoring, judge decisions)."""
    withheld = blind_datasets(session=session, actor=actor, names=[dataset], holding=holding)
    if withheld:
        raise BlindingViolation(" ".join([*withheld.values(), what]).strip())


@judges_actor
def withheld_ground_truth(*, session: Session, actor: User, release_version: str,
                          names: Iterable[str] | None = None) -> tuple[list[str], str]:
    """The datasets of release ``release_version`` (all of them, or those called ``names``) whose ground truth
    ``actor`` may not see, and the message saying so (one sentence, then one sentence per cause); ``([], "")``
    when nothing is withheld. The ground truth of a release dataset is its peers' stage-1 work (decisions,
    alternatives, votes, MCQs): ``forkpaths gt build`` and scoring show it, so they withhold it as exports do.
    """
    record = session.exec(select(ReleaseRecord).where(ReleaseRecord.version == release_version)).first()
    if record is None:
        return [], ""
    wanted = list(record.summary) if names is None else [n for n in names if n in record.summary]
    blind, why = refusal_sentences(session=session, actor=actor, names=wanted, holding=summary_holding(record.summary))
    if not blind:
        return [], ""
    which = _names(blind)
    return blind, " ".join([f"The ground truth of release {release_version} on {which} is withheld from you.", *why])

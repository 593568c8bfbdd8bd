"""Stage 3: the consensus meeting on a dataset whose stage 2 is closed.

A curator (or admin) starts a meeting; the agenda is every contested or split item (voters on both sides),
most disagreement first: decisions, alternatives, hypotheses, and programmatic tasks' candidate checks and
artifacts (whose release follows the outcome recorded here). The facilitator records attendance and, per item, the outcome (justifiable /
unjustifiable / stays contested), the reason and any dissent. Analysts who submitted may revise their votes
while the meeting is open: the votes as they stood at the start are kept in the meeting (``pre_votes``), the
votes at the close in ``post_votes``, and every change in the vote history with the meeting's note. Each action
is in the meeting's audit trail. Outcomes carry a revision number: a facilitator records against the revision
they saw, so two facilitators recording the same item at once get a clear message instead of a lost update.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from curation.errors import CurationError, NotFoundError, PermissionDenied, StageError, VoteError
from curation.ground_truth import Status
from curation.models import Meeting, MeetingEvent, MeetingOutcome, Role, Stage, User, Vote, utcnow
from curation.services.accounts import require_role
from curation.services.actor import judges_actor
from curation.services.ground_truth import GroundTruthItem, dataset_rule, ground_truth
from curation.services.kind_curation import kind_curations
from curation.services.stages import (
    get_review_settings,
    has_submitted,
    lock_for_review_write,
    require_reviewer,
)
from curation.services.votes import (
    QUESTIONS,
    VERDICT,
    reason_needed,
    resolve_item,
    skipped_reason,
    write_vote,
)

__all__ = [
    "OUTCOMES",
    "AgendaItem",
    "MeetingConflict",
    "agenda_size",
    "close_meeting",
    "meeting_agenda",
    "meeting_summary",
    "open_meeting",
    "record_outcome",
    "revise_vote",
    "set_attendance",
    "show_item",
    "start_meeting",
]

OUTCOMES = (Status.JUSTIFIABLE.value, Status.UNJUSTIFIABLE.value, Status.CONTESTED.value)


class MeetingConflict(CurationError):
    """Someone else recorded the same item first; the message says who, what and when."""


@dataclass
class AgendaItem:
    position: int
    item: GroundTruthItem
    before: dict[str, int]  # tally at the start of the meeting
    outcome: MeetingOutcome | None

    @property
    def revision(self) -> int:
        return self.outcome.revision if self.outcome else 0


def _facilitator(actor: User) -> None:
    if actor.role not in (Role.CURATOR.value, Role.ADMIN.value):
        raise PermissionDenied("Only the facilitator (a curator or an admin) runs the meeting and records outcomes; "
                               "analysts take part by revising their own votes.")


def _event(session: Session, meeting: Meeting, actor: User, action: str, target_kind: str = "",
           target_id: str = "", **detail: Any) -> None:
    session.add(MeetingEvent(meeting_id=meeting.id or 0, actor_id=actor.id, action=action, target_kind=target_kind,
                             target_id=target_id, detail=detail))


def _meeting(session: Session, meeting_id: int, *, lock: bool = False) -> Meeting:
    stmt = select(Meeting).where(Meeting.id == meeting_id)
    meeting = session.exec(stmt.with_for_update() if lock else stmt).first()
    if meeting is None:
        raise NotFoundError(f"There is no meeting {meeting_id}.")
    return meeting


def _open_for_write(session: Session, meeting_id: int, *, closing: bool = False) -> Meeting:
    """The meeting, checked open while holding the lock its close takes; refused when it is closed.

    A write to a meeting's record (an outcome, a revised vote) holds the meeting's row in SHARE mode until its
    transaction ends, and the close holds it exclusively (``closing``): a write either commits before the close
    reads the votes at the close, or waits for the close and sees the meeting closed. Read without that lock,
    an outcome could be recorded after the close had committed. SQLite has no row locks: the dataset's write
    lock is taken first, then the meeting is read again.
    """
    meeting = _meeting(session, meeting_id)
    lock_for_review_write(session=session, dataset_id=meeting.dataset_id)
    stmt = select(Meeting).where(Meeting.id == meeting_id).with_for_update(read=not closing)
    meeting = session.exec(stmt.execution_options(populate_existing=True)).one()
    _require_open(meeting)
    return meeting


def _require_open(meeting: Meeting) -> None:
    if meeting.status != "open":
        raise StageError(f"Meeting {meeting.id} is closed; its record no longer changes.")


def _snapshot(session: Session, meeting: Meeting) -> list[dict[str, Any]]:
    keys = {(a["target_kind"], a["target_id"]) for a in meeting.agenda}
    rows = session.exec(select(Vote).where(Vote.dataset_id == meeting.dataset_id).order_by(col(Vote.id))).all()
    return [{"target_kind": v.target_kind, "target_id": v.target_id, "annotator": f"A{v.annotator_id}",
             "question": v.question, "answer": v.answer, "explanation": v.explanation}
            for v in rows if (v.target_kind, v.target_id) in keys]


def open_meeting(*, session: Session, dataset_id: int) -> Meeting | None:
    return session.exec(select(Meeting).where(Meeting.dataset_id == dataset_id, Meeting.status == "open")).first()


def _contested(items: list[GroundTruthItem]) -> list[GroundTruthItem]:
    """The items a meeting discusses (voted on, and contested or split), most disagreement first."""
    agenda = [i for i in items if i.result is not None and i.basis != "imported" and i.result.voters
              and (i.status == Status.CONTESTED.value or (i.result.justifiable and i.result.unjustifiable))]
    agenda.sort(key=lambda i: (-(i.result.disagreement if i.result else 0), -(i.result.voters if i.result else 0),
                               i.key))
    return agenda


@judges_actor
def agenda_size(*, session: Session, actor: User, dataset_id: int) -> int:
    """How many items a meeting started now would have on its agenda (the page says so before it starts one)."""
    _facilitator(actor)
    return len(_contested(_agenda_candidates(session, dataset_id)))


@judges_actor
def start_meeting(*, session: Session, actor: User, dataset_id: int, attendee_ids: list[int] | None = None) -> Meeting:
    """Start the consensus meeting of a dataset whose stage 2 is closed; builds and freezes the agenda."""
    _facilitator(actor)
    review = get_review_settings(session=session, dataset_id=dataset_id)
    items = _agenda_candidates(session, dataset_id)  # raises NotFoundError for unknown datasets
    if review.stage != Stage.CLOSED.value:
        where = "stage 1" if review.stage == Stage.ANNOTATE.value else "stage 2 (review)"
        raise StageError(f"This dataset is still in {where}; close stage 2 before the consensus meeting, so that "
                         "the agenda is built from final votes.")
    lock_for_review_write(session=session, dataset_id=dataset_id)
    if open_meeting(session=session, dataset_id=dataset_id) is not None:
        raise StageError("A meeting on this dataset is already open; join it or close it first.")
    agenda = _contested(items)
    meeting = Meeting(dataset_id=dataset_id, rule=dataset_rule(session=session, dataset_id=dataset_id).key,
                      started_by_id=actor.id, attendance=sorted(set(attendee_ids or [])),
                      agenda=[{"target_kind": i.target_kind, "target_id": i.target_id, "status": i.status,
                               "tally": _tally(i)} for i in agenda])
    session.add(meeting)
    session.flush()
    meeting.pre_votes = _snapshot(session, meeting)
    _event(session, meeting, actor, "start", items=len(agenda), attendance=meeting.attendance)
    session.flush()
    return meeting


def _agenda_candidates(session: Session, dataset_id: int) -> list[GroundTruthItem]:
    """What a meeting may discuss: the dataset's decisions, alternatives and hypotheses (:func:`ground_truth`),
    and the items the kinds curate in their own tables (their ``KindCuration.agenda_items``)."""
    return [*ground_truth(session=session, dataset_id=dataset_id),
            *(item for curation in kind_curations().values() if curation.agenda_items
              for item in curation.agenda_items(session=session, dataset_id=dataset_id))]


def _tally(item: GroundTruthItem) -> dict[str, int]:
    r = item.result
    return {"justifiable": r.justifiable, "unjustifiable": r.unjustifiable, "unsure": r.unsure} if r else {}


@judges_actor
def set_attendance(*, session: Session, actor: User, meeting_id: int, user_ids: list[int]) -> Meeting:
    _facilitator(actor)
    meeting = _meeting(session, meeting_id, lock=True)
    _require_open(meeting)
    before = list(meeting.attendance)
    meeting.attendance = sorted(set(user_ids))
    session.add(meeting)
    _event(session, meeting, actor, "attendance", before=before, after=meeting.attendance)
    session.flush()
    return meeting


@judges_actor
def show_item(*, session: Session, actor: User, meeting_id: int, position: int) -> Meeting:
    """Move the projector to agenda item ``position``."""
    _facilitator(actor)
    meeting = _meeting(session, meeting_id, lock=True)
    _require_open(meeting)  # a closed meeting's record does not change, not even where its projector stood
    if not 0 <= position < max(len(meeting.agenda), 1):
        raise StageError(f"The agenda has {len(meeting.agenda)} items; there is no item {position + 1}.")
    before = meeting.current
    meeting.current = position
    session.add(meeting)
    _event(session, meeting, actor, "show", before=before, after=position)
    session.flush()
    return meeting


def _on_agenda(meeting: Meeting, target_kind: str, target_id: str) -> None:
    if not any(a["target_kind"] == target_kind and a["target_id"] == target_id for a in meeting.agenda):
        raise StageError(f"{target_kind} {target_id[:8]} is not on the agenda of meeting {meeting.id}.")


@judges_actor
def record_outcome(*, session: Session, actor: User, meeting_id: int, target_kind: str, target_id: str,
                   outcome: str, reason: str, dissent: str = "", expected_revision: int = 0) -> MeetingOutcome:
    """Record (or revise) one item's outcome. ``expected_revision``: the outcome revision the facilitator saw
    (0: none yet). Someone else's newer record makes this a MeetingConflict, nothing stored."""
    _facilitator(actor)
    meeting = _open_for_write(session, meeting_id)
    _on_agenda(meeting, target_kind, target_id)
    if outcome not in OUTCOMES:
        raise StageError(f"'{outcome}' is not an outcome; choose one of {', '.join(OUTCOMES)}.")
    if not reason.strip():
        raise StageError("Write the reason for the outcome: it is what the release keeps of the discussion.")
    stmt = select(MeetingOutcome).where(MeetingOutcome.meeting_id == meeting_id,
                                        MeetingOutcome.target_kind == target_kind,
                                        MeetingOutcome.target_id == target_id)
    row = session.exec(stmt.with_for_update()).first()
    if row is not None and row.revision != expected_revision:
        _conflict(session, row)
    if row is None and expected_revision != 0:
        raise MeetingConflict("The outcome you were revising is gone; reload the item.")
    if row is None:
        row = MeetingOutcome(meeting_id=meeting_id, dataset_id=meeting.dataset_id, target_kind=target_kind,
                             target_id=target_id, outcome=outcome, reason=reason.strip(), dissent=dissent.strip(),
                             recorded_by_id=actor.id)
        try:
            with session.begin_nested():
                session.add(row)
                session.flush()
        except IntegrityError:  # another facilitator inserted the first record at this very moment
            other = session.exec(stmt).first()
            if other is None:  # pragma: no cover
                raise
            _conflict(session, other)
    else:
        before = {"outcome": row.outcome, "reason": row.reason, "dissent": row.dissent}
        row.outcome, row.reason, row.dissent = outcome, reason.strip(), dissent.strip()
        row.recorded_by_id, row.recorded_at, row.revision = actor.id, utcnow(), row.revision + 1
        session.add(row)
        _event(session, meeting, actor, "revise_outcome", target_kind, target_id, before=before)
    _event(session, meeting, actor, "outcome", target_kind, target_id, outcome=outcome, reason=reason.strip(),
           dissent=dissent.strip(), revision=row.revision)
    session.flush()
    return row


def _conflict(session: Session, row: MeetingOutcome) -> None:
    who = session.get(User, row.recorded_by_id) if row.recorded_by_id else None
    name = (who.display_name or who.username) if who else "another facilitator"
    raise MeetingConflict(
        f"{name} recorded this item at {row.recorded_at:%H:%M:%S} UTC ({row.outcome}: {row.reason}) while you were "
        "editing it. Nothing of yours was saved: reload the item, read their record, then record again if needed.")


@judges_actor
def revise_vote(*, session: Session, actor: User, meeting_id: int, target_kind: str, target_id: str,
                question: str, answer: str, explanation: str = "") -> Vote | None:
    """An analyst changes their own vote on an agenda item during the open meeting (history kept)."""
    meeting = _open_for_write(session, meeting_id)
    _on_agenda(meeting, target_kind, target_id)
    require_reviewer(session=session, actor=actor, dataset_id=meeting.dataset_id)
    if not has_submitted(session=session, dataset_id=meeting.dataset_id, user_id=actor.id or 0):
        raise PermissionDenied("Only analysts who submitted a stage-1 analysis of this dataset vote on it.")
    item = resolve_item(session=session, target_kind=target_kind, target_id=target_id)
    if item.proposer_id is not None and item.proposer_id == actor.id:
        raise VoteError("This is your own proposal; peers judge it, you cannot vote on it.")
    questions = {q.key: q for q in QUESTIONS[item.kind]}
    q = questions.get(question)
    answer = (answer or "").strip().lower()
    if q is None:
        raise VoteError(f"'{question}' is not a question about a {item.kind}; the questions are {list(questions)}.")
    if answer not in q.answers:
        raise VoteError(f"'{answer}' is not an answer to '{q.text}'; choose one of {list(q.answers)}.")
    if question == VERDICT and answer == "no" and not explanation.strip():
        raise VoteError(reason_needed(item.kind))
    note = f"meeting {meeting.id}"
    vote = write_vote(session=session, item=item, actor=actor, question=question, answer=answer,
                      explanation=explanation.strip(), note=note)
    for dep in (d for d in questions.values() if d.skipped_unless == question and answer == "no"):
        write_vote(session=session, item=item, actor=actor, question=dep.key, answer=None,
                   skipped=skipped_reason(question), note=note)
    _event(session, meeting, actor, "vote", target_kind, target_id, question=question, answer=answer)
    session.flush()
    return vote


@judges_actor
def close_meeting(*, session: Session, actor: User, meeting_id: int) -> Meeting:
    _facilitator(actor)
    meeting = _open_for_write(session, meeting_id, closing=True)
    meeting.status, meeting.closed_by_id, meeting.closed_at = "closed", actor.id, utcnow()
    meeting.post_votes = _snapshot(session, meeting)
    session.add(meeting)
    _event(session, meeting, actor, "close")
    session.flush()
    return meeting


@judges_actor
def meeting_agenda(*, session: Session, actor: User, meeting_id: int) -> tuple[Meeting, list[AgendaItem]]:
    """The agenda with each item's current votes and status, its pre-meeting tally and its recorded outcome."""
    meeting = _meeting(session, meeting_id)
    require_reviewer(session=session, actor=actor, dataset_id=meeting.dataset_id)
    items = {i.key: i for i in _agenda_candidates(session, meeting.dataset_id)}
    outcomes = {(o.target_kind, o.target_id): o for o in session.exec(
        select(MeetingOutcome).where(MeetingOutcome.meeting_id == meeting_id)).all()}
    agenda = []
    for n, a in enumerate(meeting.agenda):
        item = items.get(f"{a['target_kind']}:{a['target_id']}")
        if item is not None:
            agenda.append(AgendaItem(n, item, a.get("tally", {}), outcomes.get((a["target_kind"], a["target_id"]))))
    return meeting, agenda


def meeting_events(*, session: Session, meeting_id: int) -> list[MeetingEvent]:
    return list(session.exec(select(MeetingEvent).where(MeetingEvent.meeting_id == meeting_id)
                             .order_by(col(MeetingEvent.at), col(MeetingEvent.id))).all())


def meeting_summary(*, session: Session, meeting_id: int, pseudonym: Any = None, named: bool = False) -> dict[str, Any]:
    """The meeting as exported with a release: agenda, outcomes, dissent, attendance, vote changes, audit."""
    meeting = _meeting(session, meeting_id)
    if named:  # for the people in the meeting; releases pass their pseudonyms instead
        def who(uid: int | None) -> str | None:
            user = session.get(User, uid) if uid is not None else None
            return (user.display_name or user.username) if user else None
    else:
        who = pseudonym or (lambda uid: f"A{uid}" if uid is not None else None)
    items = {i.key: i for i in _agenda_candidates(session, meeting.dataset_id)}
    outcomes = {(o.target_kind, o.target_id): o for o in session.exec(
        select(MeetingOutcome).where(MeetingOutcome.meeting_id == meeting_id)).all()}
    rows = []
    for a in meeting.agenda:
        item = items.get(f"{a['target_kind']}:{a['target_id']}")
        o = outcomes.get((a["target_kind"], a["target_id"]))
        rows.append({"target_kind": a["target_kind"], "target_id": a["target_id"],
                     "label": (item.label or item.concept) if item else "", "kind": item.kind if item else "",
                     "status_before": a.get("status"), "tally_before": a.get("tally", {}),
                     "tally_after": _tally(item) if item else {},
                     "outcome": o.outcome if o else None, "reason": o.reason if o else "",
                     "dissent": o.dissent if o else "", "recorded_by": who(o.recorded_by_id) if o else None,
                     "recorded_at": o.recorded_at.isoformat() if o else None, "revision": o.revision if o else 0})
    return {
        "id": meeting.id, "status": meeting.status, "rule": meeting.rule,
        "started_by": who(meeting.started_by_id), "started_at": meeting.started_at.isoformat(),
        "closed_by": who(meeting.closed_by_id),
        "closed_at": meeting.closed_at.isoformat() if meeting.closed_at else None,
        "attendance": [who(u) for u in meeting.attendance], "items": rows,
        "decided": sum(r["outcome"] is not None for r in rows),
        "pre_votes": [{**v, "annotator": who(int(v["annotator"][1:]))} for v in meeting.pre_votes],
        "post_votes": [{**v, "annotator": who(int(v["annotator"][1:]))} for v in meeting.post_votes],
        "events": [{"at": e.at.isoformat(), "by": who(e.actor_id), "action": e.action,
                    "target_kind": e.target_kind, "target_id": e.target_id, "detail": e.detail}
                   for e in meeting_events(session=session, meeting_id=meeting_id)],
    }


@judges_actor
def meetings_of(*, session: Session, actor: User, dataset_id: int) -> list[Meeting]:
    require_role(actor, Role.ANALYST, Role.CURATOR, Role.ADMIN)
    return list(session.exec(select(Meeting).where(Meeting.dataset_id == dataset_id)
                             .order_by(col(Meeting.started_at))).all())


def meeting_participants(*, session: Session, dataset_id: int) -> dict[int, str]:
    """Analysts who submitted stage 1 of the dataset (the people a meeting is for), id → display name."""
    from curation.models import Analysis, AnalysisStatus

    ids = session.exec(select(Analysis.annotator_id).where(
        Analysis.dataset_id == dataset_id, Analysis.status == AnalysisStatus.SUBMITTED.value)).all()
    return display_names(session=session, user_ids=list(ids))


def display_names(*, session: Session, user_ids: list[int]) -> dict[int, str]:
    users = session.exec(select(User).where(col(User.id).in_(user_ids))).all() if user_ids else []
    return {u.id or 0: (u.display_name or u.username) for u in sorted(users, key=lambda u: u.id or 0)
            if not u.is_system}

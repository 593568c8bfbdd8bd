"""The database ⇄ the release schema, for one dataset.

``dataset_release`` reads everything recorded about a dataset into a :class:`exports.schema.DatasetRelease`
(annotators pseudonymised); ``store_dataset_release`` writes such a document's decisions, alternatives, votes
and MCQs into the database. The two are inverses, which is what makes imports lossless.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from sqlmodel import Session, col, select

from curation.models import (
    IMPORTED_USERNAME,
    Alternative,
    Analysis,
    AnalysisStatus,
    ConceptualVariable,
    Consensus,
    CuratedCandidate,
    CuratedItem,
    Dataset,
    GroundTruthSetting,
    HypothesisProposal,
    HypothesisTask,
    Meeting,
    MeetingEvent,
    MeetingOutcome,
    Role,
    StatModel,
    Transform,
    User,
    Vote,
    utcnow,
)
from curation.services.kind_curation import kind_curations
from curation.services.mcq_store import add_mcq
from exports.blade_convert import BLADE_ANNOTATOR
from exports.mcq_part import MCQPart
from exports.schema import (
    Alternative as ReleaseAlternative,
)
from exports.schema import (
    Annotator,
    ConsensusRecord,
    DatasetRelease,
    KindPart,
    LLMProvenance,
    MeetingRecord,
    ReleaseFile,
    ReleaseModel,
    ReleaseTransform,
    ReleaseVariable,
)
from exports.schema import (
    Vote as ReleaseVote,
)

__all__ = [
    "RELEASE_TABLES",
        "Pseudonym",
    "ReleasePartHook",
    "dataset_files_release",
    "dataset_release",
    "imported_annotator",
    "kind_parts",
    "pseudonym",
    "store_dataset_release",
]

#: The tables :func:`dataset_release` reads (with :func:`curation.services.ground_truth.ground_truth` and the
#: meetings' summaries): what must hold still while a release is read (:func:`curation.db.one_snapshot`).
RELEASE_TABLES: tuple[str, ...] = tuple(str(m.__tablename__) for m in (
    Dataset, Analysis, Transform, ConceptualVariable, StatModel, Alternative, Vote, Consensus, GroundTruthSetting,
    Meeting, MeetingOutcome, MeetingEvent, CuratedItem, CuratedCandidate, HypothesisTask, HypothesisProposal))

#: ``who(user_id)``: the annotator pseudonym of an account in this release (``None`` for no account).
Pseudonym = Callable[[int | None], str | None]
#: A kind's part of one dataset in a release being cut (``release_part(*, session, dataset, who)``, as
#: :attr:`curation.services.kind_curation.KindCuration.release_part`).
ReleasePartHook = Callable[..., KindPart]


def imported_annotator(*, session: Session) -> User:
    """The clearly labelled system account that owns imported BLADE work (it cannot sign in)."""
    user = session.exec(select(User).where(User.username == IMPORTED_USERNAME)).first()
    if user is None:
        user = User(username=IMPORTED_USERNAME, display_name=BLADE_ANNOTATOR.label, role=Role.ANALYST.value,
                    is_system=True, is_active=False, password_hash="")
        session.add(user)
        session.flush()
    return user


def pseudonym(user: User) -> Annotator:
    """Stable across releases: imported accounts keep their label, people become A<id>."""
    if user.is_system and user.username == IMPORTED_USERNAME:
        return BLADE_ANNOTATOR
    return Annotator(id=f"A{user.id}", kind="human")


def _rows(session: Session, model: Any, **where: Any) -> list[Any]:
    """Rows of ``model`` matching ``where``, in entry order."""
    stmt = select(model)
    for key, value in where.items():
        stmt = stmt.where(getattr(model, key) == value)
    order = [col(model.position)] if hasattr(model, "position") else []
    return list(session.exec(stmt.order_by(*order, col(model.created_at), col(model.id))).all())


def dataset_files_release(dataset: Dataset) -> tuple[str, list[ReleaseFile]]:
    """Where a dataset's main table goes in a release, and every file of a multi-file dataset (a DiscoveryBench
    folder) under ``data/<dataset>/`` with its checksum and column descriptions; BLADE datasets have one table,
    ``data/<dataset>/data.csv``, and no ``files``."""
    if not dataset.files:
        return f"data/{dataset.name}/data.csv", []
    described: dict[tuple[str, str], str] = {
        (str(e.get("file", "")), str(e.get("column", ""))): str((e.get("properties") or {}).get("description", ""))
        for e in dataset.dictionary}
    files = []
    data_file = f"data/{dataset.name}/data.csv"
    for f in dataset.files:
        name = str(f["name"])
        files.append(ReleaseFile(
            name=name, path=f"data/{dataset.name}/{name}", sha256=str(f["sha256"]), size=int(f["size"]),
            role=str(f.get("role", "data")), format=str(f.get("format", "")),
            columns=[{"name": c, "description": described.get((name, c), "")} for c in f.get("columns") or []]))
        if f.get("relpath") == dataset.data_relpath:
            data_file = f"data/{dataset.name}/{name}"
    return data_file, files


def dataset_release(*, session: Session, dataset: Dataset,
                    release_parts: Mapping[str, ReleasePartHook] | None = None) -> DatasetRelease:
    """Everything recorded about ``dataset``, as a release document (annotators pseudonymised).

    ``release_parts``: builders of kinds' parts to use instead of their curation's (see :func:`kind_parts`).
    """
    users: dict[int, Annotator] = {}

    def who(user_id: int | None) -> str | None:
        if user_id is None:
            return None
        if user_id not in users:
            user = session.get(User, user_id)
            assert user is not None
            users[user_id] = pseudonym(user)
        return users[user_id].id

    data_file, files = dataset_files_release(dataset)
    ds = DatasetRelease(
        name=dataset.name, title=dataset.title, research_question=dataset.research_question,
        description=dataset.description, dictionary=dataset.dictionary, info=dataset.info,
        data_file=data_file, data_sha256=dataset.data_sha256, num_rows=dataset.num_rows,
        num_columns=dataset.num_columns, extra=dataset.extra, files=files,
    )
    for analysis in _rows(session, Analysis, dataset_id=dataset.id):
        if analysis.status != AnalysisStatus.SUBMITTED.value:
            continue  # drafts are private work in progress, never released
        author = who(analysis.annotator_id) or ""
        for t in _rows(session, Transform, analysis_id=analysis.id):
            ds.transforms.append(ReleaseTransform(
                id=t.id, annotator=author, spec_name=t.spec_name, specification=t.specification, verbs=t.verbs,
                code=t.code, rationale=t.rationale, mapping=t.mapping, branches=t.branches, tags=t.tags,
                extra=t.extra))
        for v in _rows(session, ConceptualVariable, analysis_id=analysis.id):
            ds.variables.append(ReleaseVariable(
                id=v.id, annotator=author, variable_type=v.variable_type, interaction=v.interaction,
                moderates=v.moderates, concept=v.concept, rationale=v.rationale, columns=v.columns,
                random_effect=v.random_effect, tags=v.tags, extra=v.extra))
        for m in _rows(session, StatModel, analysis_id=analysis.id):
            ds.models.append(ReleaseModel(
                id=m.id, annotator=author, family=m.family, specification=m.specification, spec_name=m.spec_name,
                code=m.code, rationale=m.rationale, columns=m.columns, variable_ids=m.variable_ids,
                transform_ids=m.transform_ids, tags=m.tags, extra=m.extra))
    for a in _rows(session, Alternative, dataset_id=dataset.id):
        ds.alternatives.append(ReleaseAlternative(
            id=a.id, kind=a.kind, source=a.source, proposed_by=who(a.proposed_by_id),
            llm=LLMProvenance.model_validate(a.llm) if a.llm else None, seed_id=a.seed_id, payload=a.payload,
            extra=a.extra))
    for vote in _rows(session, Vote, dataset_id=dataset.id):
        ds.votes.append(_release_vote(vote, who(vote.annotator_id) or ""))
    for c in session.exec(select(Consensus).where(Consensus.dataset_id == dataset.id).order_by(col(Consensus.id))).all():
        ds.consensus.append(ConsensusRecord(
            target_kind=c.target_kind, target_id=c.target_id, status=c.status, rule=c.rule,  # type: ignore[arg-type]
            decided_by=who(c.decided_by_id), decided_at=c.decided_at, note=c.note,
            votes=[ReleaseVote.model_validate(v) for v in c.votes_snapshot]))
    _stage3(session, dataset, ds, who)
    ds = ds.model_copy(update={"parts": kind_parts(session=session, dataset=dataset, who=who,
                                                    release_parts=release_parts)})
    ds.annotators = sorted(users.values(), key=lambda a: (a.kind != "imported", len(a.id), a.id))
    return ds


def kind_parts(*, session: Session, dataset: Dataset, who: Pseudonym,
               release_parts: Mapping[str, ReleasePartHook] | None = None) -> dict[str, dict[str, Any]]:
    """THE place a cut assembles each kind's part of a dataset (``DatasetRelease.parts``), by kind name: the
    parts of the kinds that imported their items with their gold, as stored (``forkpaths import-<kind>``), and
    the parts of the kinds experts curate, from their tables (an empty part is left out of the release): each
    such kind's :class:`~curation.services.kind_curation.KindCuration` builds its own, unless ``release_parts``
    names another builder for it (a test standing in for stages 1-3)."""
    curated: list[KindPart] = []
    for name, curation in kind_curations().items():
        build = (release_parts or {}).get(name, curation.release_part)
        if build is not None:
            curated.append(build(session=session, dataset=dataset, who=who))
    parts = dict(dataset.parts or {})  # imported kinds' parts, as stored
    parts.update({p.kind: p.model_dump(mode="json") for p in curated if p})
    return dict(sorted(parts.items()))


def _stage3(session: Session, dataset: Dataset, ds: DatasetRelease, who: Any) -> None:
    """Every item's ground-truth status (after any stored consensus rows) and the meetings' records."""
    recorded = {(c.target_kind, c.target_id) for c in ds.consensus}
    # networkx (the decision graph): imported when a release is built, not when one is read to score it
    from curation.services.ground_truth import ground_truth
    from curation.services.meetings import meeting_summary

    for item in ground_truth(session=session, dataset_id=dataset.id or 0):
        if (item.target_kind, item.target_id) in recorded:
            continue
        r = item.result
        ds.consensus.append(ConsensusRecord(
            target_kind=item.target_kind, target_id=item.target_id, status=item.status,  # type: ignore[arg-type]
            rule=r.rule if r and item.basis == "rule" else item.basis, basis=item.basis, note=item.why,
            tally={"justifiable": r.justifiable, "unjustifiable": r.unjustifiable, "unsure": r.unsure} if r else {}))
    for m in session.exec(select(Meeting).where(Meeting.dataset_id == dataset.id).order_by(col(Meeting.id))).all():
        ds.meetings.append(MeetingRecord.model_validate(meeting_summary(session=session, meeting_id=m.id or 0,
                                                                        pseudonym=who)))


def _release_vote(vote: Vote, annotator: str) -> ReleaseVote:
    return ReleaseVote(target_kind=vote.target_kind, target_id=vote.target_id, annotator=annotator,  # type: ignore[arg-type]
                       question=vote.question, answer=vote.answer, skipped_reason=vote.skipped_reason,  # type: ignore[arg-type]
                       explanation=vote.explanation, created_at=vote.created_at)


def store_dataset_release(*, session: Session, dataset: Dataset, ds: DatasetRelease,
                          owners: dict[str, User]) -> None:
    """Write a release document's content for ``dataset`` into the database (decisions as submitted analyses).

    ``owners`` maps the document's annotator pseudonyms to accounts. Nothing is committed here.
    """
    dataset.extra = ds.extra
    session.add(dataset)
    analyses: dict[str, Analysis] = {}

    def analysis_of(pseudo: str) -> Analysis:
        if pseudo not in analyses:
            analysis = Analysis(dataset_id=dataset.id or 0, annotator_id=owners[pseudo].id or 0,
                                status=AnalysisStatus.SUBMITTED.value, submitted_at=utcnow())
            session.add(analysis)
            session.flush()
            analyses[pseudo] = analysis
        return analyses[pseudo]

    for i, t in enumerate(ds.transforms):
        session.add(Transform(id=t.id, analysis_id=analysis_of(t.annotator).id or 0, spec_name=t.spec_name,
                              specification=t.specification, verbs=t.verbs, code=t.code, rationale=t.rationale,
                              mapping=[m.model_dump() for m in t.mapping], branches=[b.model_dump() for b in t.branches],
                              tags=t.tags, extra=t.extra, position=i))
    for i, v in enumerate(ds.variables):
        session.add(ConceptualVariable(
            id=v.id, analysis_id=analysis_of(v.annotator).id or 0, variable_type=v.variable_type,
            interaction=v.interaction, moderates=v.moderates, concept=v.concept, rationale=v.rationale,
            columns=[c.model_dump() for c in v.columns], random_effect=v.random_effect, tags=v.tags, extra=v.extra,
            position=i))
    for i, m in enumerate(ds.models):
        session.add(StatModel(id=m.id, analysis_id=analysis_of(m.annotator).id or 0, family=m.family,
                              specification=m.specification, spec_name=m.spec_name, code=m.code, rationale=m.rationale,
                              columns=[c.model_dump() for c in m.columns], variable_ids=m.variable_ids,
                              transform_ids=m.transform_ids, tags=m.tags, extra=m.extra, position=i))
    for i, a in enumerate(ds.alternatives):
        session.add(Alternative(id=a.id, dataset_id=dataset.id or 0, kind=a.kind, source=a.source,
                                proposed_by_id=owners[a.proposed_by].id if a.proposed_by else None, seed_id=a.seed_id,
                                llm=a.llm.model_dump(mode="json") if a.llm else None, payload=a.payload, extra=a.extra,
                                position=i))
    for i, vote in enumerate(ds.votes):
        row = Vote(dataset_id=dataset.id or 0, target_kind=vote.target_kind, target_id=vote.target_id,
                   annotator_id=owners[vote.annotator].id or 0, question=vote.question, answer=vote.answer,
                   skipped_reason=vote.skipped_reason, explanation=vote.explanation, position=i)
        if vote.created_at:
            row.created_at = vote.created_at
        session.add(row)
    for c in ds.consensus:
        decision = Consensus(dataset_id=dataset.id or 0, target_kind=c.target_kind, target_id=c.target_id,
                             status=c.status, rule=c.rule,
                             decided_by_id=owners[c.decided_by].id if c.decided_by else None, note=c.note,
                             votes_snapshot=[v.model_dump(mode="json") for v in c.votes])
        if c.decided_at:
            decision.decided_at = c.decided_at
        session.add(decision)
    for i, q in enumerate(MCQPart.of(ds).items):
        add_mcq(session=session, dataset_id=dataset.id or 0, mcq_id=q.id,
                question=q.model_dump(mode="json", exclude={"id"}), position=i)
    session.flush()

"""Peer alternatives: proposed while reviewing, sanity-checked in the real sandbox, duplicates flagged, and
their votes exported to BLADE's annotate_* rows and native releases with pseudonymous annotators."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from curation.db import session_scope
from curation.errors import DecisionValidationError, StageError
from curation.models import Role, Stage
from curation.services.alternatives import (
    TransformAlternativeInput,
    VariableAlternativeInput,
    check_alternative_transform,
    prepare_transform_check,
    propose_transform_alternative,
    propose_variable_alternative,
)
from curation.services.analyses.review_queue import review_queue
from curation.services.annotation import submit_analysis
from curation.services.datasets import get_dataset
from curation.services.release_data import dataset_release
from curation.services.stages import set_stage
from curation.services.votes import cast_vote
from evaluation.groundtruth.hashing import blade_value_hash
from evaluation.sandbox import SandboxLimits
from evaluation.specs import ROOT_SPEC_ID, VariableType
from exports.blade_convert import blade_rows_from_release
from tests import factories as f

LIMITS = SandboxLimits(timeout_s=60, memory_mb=2048)


@pytest.fixture
def review(engine, store):
    ana, bob, cid = f.user(engine, "ana"), f.user(engine, "bob"), f.user(engine, "cid")
    ds = f.dataset(engine, store, assign=[ana, bob, cid])
    ids = {}
    for u in (ana, bob, cid):
        ids[u.username] = f.full_analysis(engine, u, ds.id)
        with session_scope(engine) as s:
            submit_analysis(session=s, actor=u, dataset_id=ds.id)
    return {"ana": ana, "bob": bob, "cid": cid, "ds": ds, "ids": ids, "engine": engine, "store": store,
            "cur": f.user(engine, "cur", Role.CURATOR)}


def _open(r):
    with session_scope(r["engine"]) as s:
        set_stage(session=s, actor=r["cur"], dataset_id=r["ds"].id, stage=Stage.REVIEW)


def _variable(r, actor, concept="storm strength", columns=("wind",)):
    with session_scope(r["engine"]) as s:
        return propose_variable_alternative(session=s, actor=actor, dataset_id=r["ds"].id,
                                            seed_id=r["ids"]["bob"]["iv"], data=VariableAlternativeInput(
                                                variable_type=VariableType.CONTROL, concept=concept,
                                                rationale="stronger storms kill more", columns=list(columns)))


def test_peer_variable_alternative_flagged_duplicates_and_queue(review):
    r = review
    with pytest.raises(StageError):
        _variable(r, r["ana"])
    _open(r)
    with pytest.raises(DecisionValidationError, match="not columns of"):
        _variable(r, r["ana"], columns=("nope",))
    first = _variable(r, r["ana"])
    assert first.duplicate_of is None and first.alternative.source == "peer"
    again = _variable(r, r["bob"], concept="Storm  strength!", columns=("wind",))
    assert again.duplicate_of == {"target_kind": "alternative", "target_id": first.alternative.id}
    derived = _variable(r, r["cid"], concept="deaths on a log scale", columns=("log_deaths",))  # a transform's
    assert derived.alternative.payload["columns"] == ["log_deaths"]
    with pytest.raises(DecisionValidationError, match="nor made by any of its transforms"):
        _variable(r, r["cid"], concept="x", columns=("made_by_nobody",))
    same_as_decision = _variable(r, r["cid"], concept="Femininity of name", columns=("masfem",))
    assert same_as_decision.duplicate_of == {"target_kind": "variable", "target_id": r["ids"]["ana"]["iv"]}
    with session_scope(r["engine"]) as s:
        mine = {i.target_id: i for i in review_queue(session=s, actor=r["ana"], dataset_id=r["ds"].id).items}
    assert mine[first.alternative.id].own and mine[first.alternative.id].source is None  # source-blind
    assert mine[again.alternative.id].duplicate_of == first.alternative.id


def test_peer_transform_alternative_runs_in_the_sandbox(review):
    r = review
    _open(r)
    dv = r["ids"]["bob"]["dv"]

    def check(code, output="deaths_sqrt"):
        with session_scope(r["engine"]) as s:
            data_path, chain = prepare_transform_check(session=s, actor=r["ana"], dataset_id=r["ds"].id, seed_id=dv,
                                                       parents=[ROOT_SPEC_ID], store=r["store"])
        return check_alternative_transform(data_path=data_path, chain=chain, code=code, output_col=output,
                                           limits=LIMITS)

    def propose(actor, code, result, output="deaths_sqrt"):
        with session_scope(r["engine"]) as s:
            return propose_transform_alternative(
                session=s, actor=actor, dataset_id=r["ds"].id, seed_id=dv, check=result,
                data=TransformAlternativeInput(code=code, output_col=output, rationale="less skew than log"))

    broken = check("df['deaths_sqrt'] = np.sqrt(df['nope'])")
    assert not broken["ok"] and "nope" in broken["error"]
    with pytest.raises(DecisionValidationError, match="does not run"):
        propose(r["ana"], "df['deaths_sqrt'] = np.sqrt(df['nope'])", broken)
    missing = check("df['other'] = df['deaths']")
    assert not missing["ok"] and "no column 'deaths_sqrt'" in missing["error"]
    code = "df['deaths_sqrt'] = np.sqrt(df['deaths'])"
    good = check(code)
    assert good["ok"] and len(good["value_hash"]) == 64 and good["change"]["created"] == ["deaths_sqrt"]
    with session_scope(r["engine"]) as s:
        data_path, _ = prepare_transform_check(session=s, actor=r["ana"], dataset_id=r["ds"].id, seed_id=dv,
                                               parents=[ROOT_SPEC_ID], store=r["store"])
    table = pd.read_csv(data_path)
    assert good["value_hash"] == blade_value_hash(np.sqrt(table["deaths"]))  # BLADE's own hasher, in the sandbox
    with pytest.raises(DecisionValidationError, match="sanity check on this code first"):
        propose(r["ana"], code + "  # edited", good)
    first = propose(r["ana"], code, good)
    assert first.alternative.payload["concept"] == "deaths" and first.duplicate_of is None
    assert first.alternative.extra["check"]["change"]["rows_after"] == 4
    assert first.alternative.payload["state_col_val_hash"] == good["value_hash"]  # BLADE's field, exported as is
    code2 = "df['deaths_sqrt'] = df['deaths'] ** 0.5"  # other code, same values: the same decision
    second = propose(r["bob"], code2, check(code2))
    assert second.duplicate_of == {"target_kind": "alternative", "target_id": first.alternative.id}
    # the same column as an expert's stage-1 transform (log_deaths), computed by other code: that decision
    code3 = "df['ld'] = np.log1p(df['deaths'].astype(float))"
    third = propose(r["cid"], code3, check(code3, output="ld"), output="ld")
    stage1 = {r["ids"][u]["transform"] for u in ("ana", "bob", "cid")}
    assert third.duplicate_of["target_kind"] == "transform" and third.duplicate_of["target_id"] in stage1


def test_votes_on_alternatives_and_decisions_reach_the_exports(review):
    r = review
    _open(r)
    alt = _variable(r, r["ana"]).alternative
    for voter, answer in ((r["bob"], "yes"), (r["cid"], "no")):
        with session_scope(r["engine"]) as s:
            cast_vote(session=s, actor=voter, target_kind="alternative", target_id=alt.id,
                      question="can_derive_from_data", answer=answer)
            cast_vote(session=s, actor=voter, target_kind="alternative", target_id=alt.id,
                      question="is_rationale_reasonable", answer="yes")
            cast_vote(session=s, actor=voter, target_kind="variable", target_id=r["ids"]["ana"]["dv"],
                      question="justifiable", answer="yes")
    with session_scope(r["engine"]) as s:
        ds = dataset_release(session=s, dataset=get_dataset(session=s, actor=r["cur"], dataset_id=r["ds"].id))
    annotators = {v.annotator for v in ds.votes}
    assert annotators == {f"A{r['bob'].id}", f"A{r['cid'].id}"}  # pseudonyms, never user names
    assert len(ds.votes) == 7  # 2 voters × 3 votes, plus cid's skipped is_reasonable (answered No first)
    assert {v.target_kind for v in ds.votes} == {"alternative", "variable"}
    (a,) = ds.alternatives
    assert a.source == "peer" and a.proposed_by == f"A{r['ana'].id}"
    rows = {sid: (kind, data) for sid, kind, data in blade_rows_from_release(ds)}
    kind, data = rows[alt.id]
    assert kind == "annotate_cvar"
    assert data["concept"] == "storm strength" and data["annotator_is_rationale_reasonable"] == "Yes"
    assert data["can_derive_from_data"] in ("Yes", "No")


def test_curator_merges_a_duplicate_and_votes_follow(review):
    from sqlmodel import select

    from curation.errors import PermissionDenied, VoteError
    from curation.models import Alternative, Vote, VoteChange
    from curation.services.alternatives import merge_alternative
    from curation.services.votes import vote_history

    r = review
    _open(r)
    first = _variable(r, r["ana"]).alternative
    dup = _variable(r, r["bob"], concept="Storm strength").alternative
    # votes on the duplicate: cid (moves), ana (proposer of the kept item: dropped), bob cannot vote on his own
    for voter, answer in ((r["cid"], "yes"), (r["ana"], "no")):
        with session_scope(r["engine"]) as s:
            cast_vote(session=s, actor=voter, target_kind="alternative", target_id=dup.id,
                      question="is_rationale_reasonable", answer=answer)
    with session_scope(r["engine"]) as s:  # cid also voted the verdict on both: the vote on the kept one stays
        cast_vote(session=s, actor=r["cid"], target_kind="alternative", target_id=dup.id, question="justifiable",
                  answer="no", explanation="duplicate reason")
        cast_vote(session=s, actor=r["cid"], target_kind="alternative", target_id=first.id, question="justifiable",
                  answer="yes")
    with session_scope(r["engine"]) as s, pytest.raises(PermissionDenied):
        merge_alternative(session=s, actor=r["ana"], alternative_id=dup.id, into_kind="alternative", into_id=first.id)
    with session_scope(r["engine"]) as s, pytest.raises(DecisionValidationError, match="into itself"):
        merge_alternative(session=s, actor=r["cur"], alternative_id=dup.id, into_kind="alternative", into_id=dup.id)
    with session_scope(r["engine"]) as s:
        merge_alternative(session=s, actor=r["cur"], alternative_id=dup.id, into_kind="alternative", into_id=first.id)
    with session_scope(r["engine"]) as s:
        kept = s.get(Alternative, first.id)
        assert [m["id"] for m in kept.extra["merged_from"]] == [dup.id]
        assert kept.extra["merged_from"][0]["proposed_by_id"] == r["bob"].id  # every proposer kept as provenance
        assert s.get(Alternative, dup.id).extra["merged_into"] == first.id
        votes = {(v.annotator_id, v.question): v for v in s.exec(select(Vote)).all()}
        assert all(v.target_id == first.id for v in votes.values())
        assert votes[(r["cid"].id, "is_rationale_reasonable")].answer == "yes"  # moved
        assert votes[(r["cid"].id, "justifiable")].answer == "yes"  # the vote on the kept item stayed
        assert (r["ana"].id, "is_rationale_reasonable") not in votes  # ana proposed the kept item
        notes = [c.note for c in s.exec(select(VoteChange).where(VoteChange.target_id == dup.id)).all()]
        assert sum("dropped" in n for n in notes) == 2 and sum("moved to" in n for n in notes) == 1
        assert vote_history(session=s, actor=r["cid"], target_kind="alternative", target_id=first.id)[-1].note \
            .startswith("moved from")
        queue = review_queue(session=s, actor=r["cid"], dataset_id=r["ds"].id).items
        assert dup.id not in {i.target_id for i in queue}
    with session_scope(r["engine"]) as s, pytest.raises(VoteError, match="merged into"):
        cast_vote(session=s, actor=r["cid"], target_kind="alternative", target_id=dup.id, question="justifiable",
                  answer="yes")
    with session_scope(r["engine"]) as s, pytest.raises(DecisionValidationError, match="already merged"):
        merge_alternative(session=s, actor=r["cur"], alternative_id=dup.id, into_kind="alternative", into_id=first.id)

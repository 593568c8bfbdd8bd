"""Ground-truth rules on hand-built vote tables, and the per-dataset rule with its preview, on both backends."""

from __future__ import annotations

import pytest

from curation.db import session_scope
from curation.errors import PermissionDenied, StageError
from curation.ground_truth import RULES, Verdict, apply_rule, get_rule, verdicts_by_voter, voter_verdict
from curation.models import Role, Stage
from curation.services.annotation import submit_analysis
from curation.services.datasets import assign_analysts
from curation.services.ground_truth import cvar_str, dataset_rule, ground_truth, preview_rule, set_rule
from curation.services.stages import set_stage
from curation.services.votes import cast_vote
from tests import factories as f

J, U, S = Verdict.JUSTIFIABLE, Verdict.UNJUSTIFIABLE, Verdict.UNSURE

# verdicts → expected status under each rule (blade, unanimous, supermajority, majority)
TABLE = [
    ([J, J, J], ("justifiable", "justifiable", "justifiable", "justifiable")),
    ([J, J, U], ("contested", "contested", "justifiable", "justifiable")),
    ([J, U, U], ("unjustifiable", "contested", "unjustifiable", "unjustifiable")),
    ([U, U, U], ("unjustifiable", "unjustifiable", "unjustifiable", "unjustifiable")),
    ([J, U], ("contested", "contested", "contested", "contested")),  # an even split is never a majority
    ([J, J, S], ("contested", "contested", "justifiable", "justifiable")),
    ([U, S], ("contested", "contested", "contested", "contested")),
    ([U, U, S], ("unjustifiable", "contested", "unjustifiable", "unjustifiable")),
    ([J], ("justifiable", "contested", "justifiable", "justifiable")),  # unanimous needs two voters
    ([U], ("unjustifiable", "contested", "unjustifiable", "unjustifiable")),
    ([S, S], ("contested", "contested", "contested", "contested")),
    ([], ("unjudged", "unjudged", "unjudged", "unjudged")),
    ([J, J, J, U], ("contested", "contested", "justifiable", "justifiable")),
    ([J, J, U, U, U], ("unjustifiable", "contested", "contested", "unjustifiable")),
]


@pytest.mark.parametrize(("verdicts", "expected"), TABLE)
def test_rules_on_hand_built_vote_tables(verdicts, expected):
    keys = ("blade@1", "unanimous@1", "supermajority@1", "majority@1")
    got = tuple(apply_rule(RULES[k], verdicts).status for k in keys)
    assert got == expected
    result = apply_rule(RULES["blade@1"], verdicts)
    assert result.rule == "blade@1" and result.voters == len(verdicts)
    assert (result.justifiable, result.unjustifiable, result.unsure) == (
        verdicts.count(J), verdicts.count(U), verdicts.count(S))


def test_voter_verdicts_read_the_explicit_vote_first_then_blades_questions():
    assert voter_verdict("variable", {"justifiable": "no", "can_derive_from_data": "yes"}) == U
    assert voter_verdict("variable", {"justifiable": "yes", "can_derive_from_data": "no"}) == J
    assert voter_verdict("variable", {"can_derive_from_data": "no", "is_reasonable": None}) == U
    assert voter_verdict("transform", {"is_suited_to_cv": "yes", "is_steps_reasonable": "yes",
                                       "is_rationale_reasonable": "yes"}) == J
    assert voter_verdict("transform", {"is_suited_to_cv": "yes", "is_rationale_reasonable": "unsure"}) == S
    assert voter_verdict("transform", {"is_suited_to_cv": "yes", "is_rationale_reasonable": "no"}) == U
    assert voter_verdict("transform", {"can_derive_from_data": "no"}) is None  # not a transform question
    assert verdicts_by_voter("variable", [("a", "justifiable", "yes"), ("b", "is_reasonable", "unsure"),
                                          ("c", "is_reasonable", None)]) == {"a": J, "b": S}


def test_rule_names_versions_and_disagreement():
    assert get_rule(None).key == "blade@1" and get_rule("majority").key == "majority@1"
    with pytest.raises(KeyError, match="no ground-truth rule 'loose'"):
        get_rule("loose")
    even = apply_rule(RULES["blade@1"], [J, U])
    assert even.disagreement == 0.5 and apply_rule(RULES["blade@1"], [J, J]).disagreement == 0
    assert "1 justifiable, 1 unjustifiable, 0 unsure of 2" in even.why


def test_cvar_strings_follow_blade():
    assert cvar_str("IV", "Age") == "IV: Age"
    assert cvar_str("Control", "Years of teaching experience") == "Control: Years of teaching experience."
    assert cvar_str("Control", "Age", True, "gender") == "Moderator: Age interacting with gender variable"


@pytest.fixture
def voted(engine, store):
    """Three analysts who submitted the same three decisions; stage 2 open; votes on ana's decisions."""
    ana, bob, cid = (f.user(engine, n) for n in ("ana", "bob", "cid"))
    cur = f.user(engine, "cur", Role.CURATOR)
    ds = f.dataset(engine, store, assign=[ana, bob, cid])
    ids = {}
    for u in (ana, bob, cid):
        ids[u.username] = f.full_analysis(engine, u, ds.id)
        with session_scope(engine) as s:
            submit_analysis(session=s, actor=u, dataset_id=ds.id)
    with session_scope(engine) as s:
        set_stage(session=s, actor=cur, dataset_id=ds.id, stage=Stage.REVIEW)
        a = ids["ana"]
        plan = [(a["iv"], "variable", "yes", "yes"), (a["dv"], "variable", "yes", "no"),
                (a["transform"], "transform", "no", "no")]
        for target, kind, bob_says, cid_says in plan:
            for voter, answer in ((bob, bob_says), (cid, cid_says)):
                cast_vote(session=s, actor=voter, target_kind=kind, target_id=target, question="justifiable",
                          answer=answer, explanation="" if answer == "yes" else "not how I would do it")
    return {"engine": engine, "ds": ds, "cur": cur, "ana": ana, "ids": ids}


def test_statuses_follow_the_dataset_rule_and_the_preview_shows_changes(voted):
    eng, ds, a = voted["engine"], voted["ds"], voted["ids"]["ana"]
    with session_scope(eng) as s:
        items = {i.target_id: i for i in ground_truth(session=s, dataset_id=ds.id)}
        assert items[a["iv"]].status == "justifiable"
        assert items[a["dv"]].status == "contested"  # 1 yes, 1 no: kept as contested, not forced
        assert items[a["transform"]].status == "unjustifiable"
        assert items[voted["ids"]["bob"]["iv"]].status == "unjudged"
        assert items[a["transform"]].concept == "deaths" and items[a["transform"]].path_ids == [a["transform"]]
        assert items[a["dv"]].path_ids == [a["transform"]]
        assert dataset_rule(session=s, dataset_id=ds.id).key == "blade@1"
        with pytest.raises(PermissionDenied):
            preview_rule(session=s, actor=voted["ana"], dataset_id=ds.id, rule="unanimous@1")
        changes = {c.target_id: (c.before, c.after) for c in
                   preview_rule(session=s, actor=voted["cur"], dataset_id=ds.id, rule="unanimous@1")}
        assert changes == {}  # two voters agreeing meet the unanimous rule too
        with pytest.raises(StageError, match="no ground-truth rule"):
            preview_rule(session=s, actor=voted["cur"], dataset_id=ds.id, rule="sometimes")
    with session_scope(eng) as s:  # a looser rule: one dissent of two is still a contested split
        assert preview_rule(session=s, actor=voted["cur"], dataset_id=ds.id, rule="majority@1") == []
        set_rule(session=s, actor=voted["cur"], dataset_id=ds.id, rule="unanimous")
    with session_scope(eng) as s:
        assert dataset_rule(session=s, dataset_id=ds.id).key == "unanimous@1"
        row = set_rule(session=s, actor=voted["cur"], dataset_id=ds.id, rule="blade@1")
        assert [h["to"] for h in row.history] == ["unanimous@1", "blade@1"]
        assert row.history[0]["from"] == "blade@1"
        with pytest.raises(PermissionDenied):
            set_rule(session=s, actor=voted["ana"], dataset_id=ds.id, rule="majority@1")


def test_a_third_vote_changes_the_status_and_the_preview_says_so(voted):
    eng, ds, a = voted["engine"], voted["ds"], voted["ids"]["ana"]
    dan = f.user(eng, "dan")
    with session_scope(eng) as s:
        admin = f.user(eng, "root", Role.ADMIN)
        assign_analysts(session=s, actor=admin, dataset_id=ds.id, user_ids=[dan.id])
    f.full_analysis(eng, dan, ds.id)
    with session_scope(eng) as s:
        submit_analysis(session=s, actor=dan, dataset_id=ds.id)
    with session_scope(eng) as s:
        cast_vote(session=s, actor=dan, target_kind="variable", target_id=a["dv"], question="justifiable",
                  answer="yes")
    with session_scope(eng) as s:
        items = {i.target_id: i for i in ground_truth(session=s, dataset_id=ds.id)}
        assert items[a["dv"]].status == "contested"  # 2 of 3: BLADE wants every voter
        changes = {c.target_id: (c.before, c.after) for c in
                   preview_rule(session=s, actor=voted["cur"], dataset_id=ds.id, rule="majority@1")}
        assert changes == {a["dv"]: ("contested", "justifiable")}

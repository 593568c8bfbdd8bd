"""Stage-1 services: decisions, validation, locking, blinding and roles — on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from sqlmodel import select

from curation.db import session_scope
from curation.errors import (
    BlindingViolation,
    DecisionValidationError,
    PermissionDenied,
    SubmittedAnalysisLocked,
)
from curation.models import Analysis, ConceptualVariable, Role, Transform
from curation.services import annotation as ann
from curation.services.progress import progress_overview
from evaluation.specs import ROOT_SPEC_ID, Branch, ColumnMapping, ColumnOrigin, ColumnRef, VariableType
from tests import factories as f


@pytest.fixture
def team(engine, store):
    a = f.user(engine, "alice")
    b = f.user(engine, "bob")
    outsider = f.user(engine, "olga")
    curator = f.user(engine, "cura", Role.CURATOR)
    ds = f.dataset(engine, store, assign=[a, b])
    return {"a": a, "b": b, "outsider": outsider, "curator": curator, "ds": ds, "engine": engine}


def test_record_edit_delete_and_submit(team):
    e, a, ds = team["engine"], team["a"], team["ds"]
    ids = f.full_analysis(e, a, ds.id)
    with session_scope(e) as s:
        mine = ann.get_own_decisions(session=s, actor=a, dataset_id=ds.id)
        assert [v.concept for v in mine.variables] == ["femininity of name", "deaths"]
        dv = next(v for v in mine.variables if v.id == ids["dv"])
        # a column is structured: name, origin, producer — never an emoji-prefixed string
        assert dv.columns == [{"name": "log_deaths", "origin": "derived", "producer_id": ids["transform"],
                               "rationale": "log scale"}]
        t = mine.transforms[0]
        assert t.verbs == ["derive"] and t.branches == [{"dependencies": [ROOT_SPEC_ID], "condition": ""}]
        assert t.mapping == [{"inputs": ["deaths"], "output": "log_deaths"}]
    with session_scope(e) as s:
        ann.save_variable(session=s, actor=a, dataset_id=ds.id, variable_id=ids["iv"], data=ann.VariableInput(
            variable_type=VariableType.MODERATOR, concept="wind moderates", rationale="stronger storms",
            moderates="femininity of name", columns=[ColumnRef(name="wind", rationale="max wind")]))
    with session_scope(e) as s:
        var = s.get(ConceptualVariable, ids["iv"])
        assert (var.variable_type, var.interaction, var.moderates) == ("Control", True, "femininity of name")
    with session_scope(e) as s, pytest.raises(DecisionValidationError, match="no independent variable"):
        ann.submit_analysis(session=s, actor=a, dataset_id=ds.id)
    with session_scope(e) as s:
        ann.save_variable(session=s, actor=a, dataset_id=ds.id, data=ann.VariableInput(
            variable_type=VariableType.IV, concept="name gender", rationale="q",
            columns=[ColumnRef(name="masfem", rationale="index")]))
        ann.submit_analysis(session=s, actor=a, dataset_id=ds.id)
    with session_scope(e) as s:
        with pytest.raises(SubmittedAnalysisLocked, match="locked"):
            ann.delete_model(session=s, actor=a, dataset_id=ds.id, model_id=ids["model"])
        with pytest.raises(SubmittedAnalysisLocked):
            ann.save_variable(session=s, actor=a, dataset_id=ds.id, data=ann.VariableInput(
                variable_type=VariableType.IV, concept="late", rationale="", columns=[]))


def test_validation_messages_name_the_field_and_store_nothing(team):
    e, a, ds = team["engine"], team["a"], team["ds"]
    cases = [
        (ann.VariableInput(variable_type=VariableType.IV, concept="  ", columns=[]), "concept is empty"),
        (ann.VariableInput(variable_type=VariableType.CONTROL, concept="year", columns=[ColumnRef(name="year",
                           rationale="r")]), "needs a rationale"),
        (ann.VariableInput(variable_type=VariableType.IV, concept="x", columns=[ColumnRef(name="nope",
                           rationale="r")]), "'nope' is not a column"),
        (ann.VariableInput(variable_type=VariableType.IV, concept="x", columns=[ColumnRef(name="wind")]),
         "'wind' needs a rationale"),
        (ann.VariableInput(variable_type=VariableType.IV, concept="x", columns=[ColumnRef(
            name="ghost", origin=ColumnOrigin.DERIVED, producer_id="abc", rationale="r")]), "not produced"),
    ]
    for data, message in cases:
        with session_scope(e) as s, pytest.raises(DecisionValidationError, match=message):
            ann.save_variable(session=s, actor=a, dataset_id=ds.id, data=data)
    bad_transforms = [
        (ann.TransformInput(spec_name="t", verb="derive", code="  "), "code is empty"),
        (ann.TransformInput(spec_name="t", verb="explode", code="df"), "not one of BLADE's verbs"),
        (ann.TransformInput(spec_name="t", verb="derive", code="df['z']=1"), "must name the output column"),
        (ann.TransformInput(spec_name="t", verb="derive", code="df['z']=df['q']",
                            mapping=[ColumnMapping(inputs=["q"], output="z")]), r"\['q'\] are neither"),
        (ann.TransformInput(spec_name="t", verb="filter", code="df=df", branches=[Branch(dependencies=["zzz"])]),
         "unknown transform"),
    ]
    for data, message in bad_transforms:
        with session_scope(e) as s, pytest.raises(DecisionValidationError, match=message):
            ann.save_transform(session=s, actor=a, dataset_id=ds.id, data=data)
    with session_scope(e) as s:
        assert s.exec(select(Transform)).all() == []
        assert s.exec(select(ConceptualVariable)).all() == []


def test_branches_cycles_and_dependent_deletes(team):
    e, a, ds = team["engine"], team["a"], team["ds"]
    with session_scope(e) as s:
        t1 = ann.save_transform(session=s, actor=a, dataset_id=ds.id, data=ann.TransformInput(
            spec_name="drop_zero", verb="filter", code="df = df[df['deaths'] > 0]",
            mapping=[ColumnMapping(inputs=["deaths"], output="")]))
        t2 = ann.save_transform(session=s, actor=a, dataset_id=ds.id, data=ann.TransformInput(
            spec_name="log_deaths", verb="derive", code="df['ld'] = np.log(df['deaths'])",
            mapping=[ColumnMapping(inputs=["deaths"], output="ld")],
            branches=[Branch(dependencies=[t1.id]), Branch(dependencies=[ROOT_SPEC_ID])]))
    with session_scope(e) as s, pytest.raises(DecisionValidationError, match="cycle"):
        ann.save_transform(session=s, actor=a, dataset_id=ds.id, transform_id=t1.id, data=ann.TransformInput(
            spec_name="drop_zero", verb="filter", code="df = df[df['deaths'] > 0]",
            branches=[Branch(dependencies=[t2.id])]))
    with session_scope(e) as s, pytest.raises(DecisionValidationError, match=r"used by transforms \['log_deaths'\]"):
        ann.delete_transform(session=s, actor=a, dataset_id=ds.id, transform_id=t1.id)
    with session_scope(e) as s:
        mine = ann.get_own_decisions(session=s, actor=a, dataset_id=ds.id)
        chain = ann.ancestor_chain(mine.transforms_by_id, [t2.id])
        assert [t.spec_name for t in chain] == ["drop_zero", "log_deaths"]
        assert len(mine.transforms_by_id[t2.id].branches) == 2


def test_blinding_before_and_after_submission(team):
    e, a, b, ds, cur = team["engine"], team["a"], team["b"], team["ds"], team["curator"]
    f.full_analysis(e, a, ds.id)
    f.full_analysis(e, b, ds.id)
    with session_scope(e) as s:
        a_analysis = s.exec(select(Analysis).where(Analysis.annotator_id == a.id)).one()
        # B has not submitted: every route to A's work is refused
        with pytest.raises(BlindingViolation):
            ann.get_analysis_decisions(session=s, actor=b, analysis_id=a_analysis.id)
        with pytest.raises(BlindingViolation):
            ann.list_peer_analyses(session=s, actor=b, dataset_id=ds.id)
        # own decisions never include a peer's
        own = ann.get_own_decisions(session=s, actor=b, dataset_id=ds.id)
        assert {t.analysis_id for t in own.transforms} == {own.analysis.id}
        # the progress page shows B only B's own rows and anonymous team counts
        prog = progress_overview(session=s, actor=b)
        assert [r.annotator for r in prog.rows] == ["bob"]
        assert prog.team[0].analyses_started == 2 and not prog.sees_everyone
        # curators see everything
        assert ann.get_analysis_decisions(session=s, actor=cur, analysis_id=a_analysis.id).annotator.username == "alice"
        assert {r.annotator for r in progress_overview(session=s, actor=cur).rows} == {"alice", "bob"}
        # A submitting does not unblind B
        ann.submit_analysis(session=s, actor=a, dataset_id=ds.id)
    with session_scope(e) as s:
        with pytest.raises(BlindingViolation):
            ann.list_peer_analyses(session=s, actor=b, dataset_id=ds.id)
        ann.submit_analysis(session=s, actor=b, dataset_id=ds.id)
    with session_scope(e) as s:
        peers = ann.list_peer_analyses(session=s, actor=b, dataset_id=ds.id)
        assert [p.annotator.username for p in peers] == ["alice"]
        assert ann.get_analysis_decisions(session=s, actor=b, analysis_id=a_analysis.id).variables


def test_roles_and_assignment_are_checked_by_the_services(team):
    e, outsider, ds, a = team["engine"], team["outsider"], team["ds"], team["a"]
    f.full_analysis(e, a, ds.id)
    with session_scope(e) as s:
        a_analysis = s.exec(select(Analysis).where(Analysis.annotator_id == a.id)).one()
        with pytest.raises(PermissionDenied, match="not assigned"):
            ann.save_variable(session=s, actor=outsider, dataset_id=ds.id, data=ann.VariableInput(
                variable_type=VariableType.IV, concept="x", columns=[]))
        with pytest.raises(PermissionDenied, match="not assigned"):
            ann.get_own_decisions(session=s, actor=outsider, dataset_id=ds.id)
        with pytest.raises(BlindingViolation):
            ann.get_analysis_decisions(session=s, actor=outsider, analysis_id=a_analysis.id)
        # another analyst cannot touch alice's rows even with their ids
        b = team["b"]
        ids = [t.id for t in ann.get_own_decisions(session=s, actor=a, dataset_id=ds.id).transforms]
        with pytest.raises(Exception, match="no such decision"):
            ann.delete_transform(session=s, actor=b, dataset_id=ds.id, transform_id=ids[0])


def test_every_blade_field_is_stored_tags_random_effect_branch_conditions(team):
    e, a, ds = team["engine"], team["a"], team["ds"]
    with session_scope(e) as s:
        t1 = ann.save_transform(session=s, actor=a, dataset_id=ds.id, data=ann.TransformInput(
            spec_name="drop_zero", verb="filter", code="df = df[df['deaths'] > 0]", tags=[" t10 ", "t10", "OLS"],
            mapping=[ColumnMapping(inputs=["deaths"], output="")]))
        t2 = ann.save_transform(session=s, actor=a, dataset_id=ds.id, data=ann.TransformInput(
            spec_name="log_deaths", verb="derive", code="df['ld'] = np.log1p(df['deaths'])",
            mapping=[ColumnMapping(inputs=["deaths"], output="ld")],
            branches=[Branch(dependencies=[t1.id], condition="drop_zero.index == 0 and not 'x' in drop_zero"),
                      Branch(dependencies=[ROOT_SPEC_ID])]))
        v = ann.save_variable(session=s, actor=a, dataset_id=ds.id, data=ann.VariableInput(
            variable_type=VariableType.CONTROL, concept="year", rationale="trend", random_effect=True,
            tags=["time"], columns=[ColumnRef(name="year", rationale="calendar year")]))
    with session_scope(e) as s:
        assert s.get(Transform, t1.id).tags == ["t10", "OLS"]
        assert s.get(Transform, t2.id).branches[0]["condition"].startswith("drop_zero.index == 0")
        var = s.get(ConceptualVariable, v.id)
        assert var.random_effect is True and var.tags == ["time"]
    bad = {
        "drop_zero ==": "not valid syntax",
        "nothere == 'a'": "'nothere' is not one of your transforms",
        "drop_zero > 1": "only ==, !=, in and not in",
        "__import__('os')": "is not a comparison",
    }
    for condition, message in bad.items():
        with session_scope(e) as s, pytest.raises(DecisionValidationError, match=message):
            ann.save_transform(session=s, actor=a, dataset_id=ds.id, data=ann.TransformInput(
                spec_name="other", verb="derive", code="df['o'] = 1", mapping=[ColumnMapping(output="o")],
                branches=[Branch(dependencies=[t1.id], condition=condition)]))


def test_a_stored_sanity_check_vouches_only_for_the_code_it_ran(team):
    e, a, ds = team["engine"], team["a"], team["ds"]
    code = "df['ld'] = np.log1p(df['deaths'])"
    data = ann.TransformInput(spec_name="ld", verb="derive", code=code,
                              mapping=[ColumnMapping(inputs=["deaths"], output="ld")])
    with session_scope(e) as s:
        stale = ann.save_transform(session=s, actor=a, dataset_id=ds.id, data=data,
                                   check={"ok": True, "code": "df['ld'] = 0"})
        assert stale.last_check is None  # a check of other code is not kept
        t = ann.save_transform(session=s, actor=a, dataset_id=ds.id, transform_id=stale.id, data=data,
                               check={"ok": True, "code": code})
        assert t.last_check == {"ok": True, "code": code}
    with session_scope(e) as s:  # editing only the rationale keeps the check of the unchanged code
        kept = ann.save_transform(session=s, actor=a, dataset_id=ds.id, transform_id=t.id,
                                  data=data.model_copy(update={"rationale": "skewed"}))
        assert kept.last_check == {"ok": True, "code": code}
    with session_scope(e) as s:  # changing the code without checking again drops its verdict: only a note
        changed = ann.save_transform(session=s, actor=a, dataset_id=ds.id, transform_id=t.id,   # that older
                                     data=data.model_copy(update={"code": "df['ld'] = df['deaths'] * 2"}))  # code
        assert changed.last_check == {"code": code, "stale": True}  # was checked ("checked on older code")
        assert ann.current_check(changed) is None and changed.passed_check_sha256 is None

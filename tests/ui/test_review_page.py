"""The review page in AppTest, per role: blinding, curator stage controls, voting, errors, agreement."""

from __future__ import annotations

import pytest
from sqlmodel import select

from curation.db import session_scope
from curation.models import Role, Stage, Vote
from curation.services.annotation import submit_analysis
from curation.services.datasets import assign_analysts
from curation.services.stages import set_stage
from tests import factories as f
from tests.ui.conftest import texts


@pytest.fixture
def stage2(ui):
    """ana and bob submitted stage 1 of the dataset; cid is assigned but has not submitted."""
    bob, cid = f.user(ui.engine, "bob"), f.user(ui.engine, "cid")
    with session_scope(ui.engine) as s:
        assign_analysts(session=s, actor=ui.admin, dataset_id=ui.dataset_id,
                        user_ids=[ui.analyst.id, ui.admin.id, bob.id, cid.id])
    ids = {}
    for u in (ui.analyst, bob):
        ids[u.username] = f.full_analysis(ui.engine, u, ui.dataset_id)
        with session_scope(ui.engine) as s:
            submit_analysis(session=s, actor=u, dataset_id=ui.dataset_id)
    return {"bob": bob, "cid": cid, "ids": ids}


def _progress(at):
    return at.get("progress")[0].proto.text


def _review(ui, user):
    at = ui.app(user).run()
    at.switch_page("app_pages/review.py").run()
    assert not at.exception, at.exception
    return at


def _reviewing(ui, user):
    """Stage 2 opened by the curator, then the review page as ``user`` sees it."""
    with session_scope(ui.engine) as s:
        set_stage(session=s, actor=ui.curator, dataset_id=ui.dataset_id, stage=Stage.REVIEW)
    return _review(ui, user)


def _alternatives(ui):
    from curation.models import Alternative

    with session_scope(ui.engine) as s:
        return s.exec(select(Alternative)).all()


def test_before_stage_two_the_page_says_so_and_the_curator_opens_it(ui, stage2):
    at = _review(ui, ui.analyst)
    assert "No dataset is in stage 2 yet" in texts(at)
    at = _review(ui, ui.curator)
    at.button(key=f"stage.{ui.dataset_id}").click().run()
    assert not at.exception
    assert "open stage 2 (review) done" in texts(at)
    assert at.selectbox(key="review.dataset").value == ui.dataset_id
    # the curator looks but does not vote (no stage-1 analysis of their own)
    assert "You look at this review as a curator" in texts(at)
    assert not [w for w in at.button_group if str(w.key).startswith("review.variable:")]
    home = ui.app(ui.curator).run()
    assert "Stage 2 · review" in str(home.dataframe[-1].value.to_dict())


def test_analyst_who_has_not_submitted_is_refused(ui, stage2):
    with session_scope(ui.engine) as s:
        set_stage(session=s, actor=ui.curator, dataset_id=ui.dataset_id, stage=Stage.REVIEW)
    at = _review(ui, stage2["cid"])
    assert "Submit your own stage-1 analysis" in texts(at)


def test_analyst_votes_are_saved_at_once_with_reasons_required(ui, stage2):
    at = _reviewing(ui, ui.analyst)
    shown = texts(at)
    assert "Your own proposal" in shown and "You have judged 0 of 3 items" in _progress(at)
    dv = stage2["ids"]["bob"]["dv"]
    at.button_group(key=f"review.variable:{dv}.can_derive_from_data").set_value("no").run()
    assert not at.exception
    with session_scope(ui.engine) as s:
        votes = {v.question: v for v in s.exec(select(Vote).where(Vote.target_id == dv)).all()}
    assert votes["can_derive_from_data"].answer == "no"
    assert votes["is_reasonable"].answer is None  # skipped, with its reason shown
    assert "Skipped (not asked: can_derive_from_data was No)" in texts(at)

    at.button_group(key=f"review.variable:{dv}.justifiable").set_value("no").run()
    assert "Say why this decision is unjustifiable" in texts(at)
    with session_scope(ui.engine) as s:
        assert s.exec(select(Vote).where(Vote.target_id == dv, Vote.question == "justifiable")).first() is None
    at.text_input(key=f"review.variable:{dv}.reason").input("no column measures it").run()
    assert not at.exception and "Say why" not in texts(at)
    with session_scope(ui.engine) as s:
        verdict = s.exec(select(Vote).where(Vote.target_id == dv, Vote.question == "justifiable")).one()
    assert (verdict.answer, verdict.explanation) == ("no", "no column measures it")

    at.toggle(key="review.unvoted").set_value(True).run()
    assert "3 match the filters" in _progress(at)  # the DV still has an unanswered question (the rationale)
    at.button_group(key="review.kind").set_value("transform").run()
    assert "1 match the filters" in _progress(at)


def test_agreement_tab_and_source_settings(ui, stage2):
    with session_scope(ui.engine) as s:
        set_stage(session=s, actor=ui.curator, dataset_id=ui.dataset_id, stage=Stage.REVIEW)
    at = _review(ui, ui.curator)
    assert "Source-blind review" in texts(at)
    at.toggle(key=f"stage.{ui.dataset_id}.source").set_value(True).run()
    assert "review settings saved" in texts(at)
    assert at.button_group(key="review.source") is not None
    assert not at.get("plotly_chart")  # the agreement tab is computed only when open
    at.session_state["review.tab"] = "Agreement"
    at.run()
    assert not at.exception, at.exception
    assert len(at.get("plotly_chart")) == 1  # the agreement chart (no votes yet: its empty state)
    assert "0 analyst(s) have voted" in texts(at)
    at = _review(ui, ui.admin)  # assigned to annotate it and not submitted: blind like every annotator
    assert "You are assigned to annotate" in texts(at) and "Reviewing shows peers' decisions" in texts(at)
    assert "Your own proposal" not in texts(at) and not at.code  # no peer's code or decisions on the page
    with session_scope(ui.engine) as s:  # unassigned before starting: an admin who only looks
        assign_analysts(session=s, actor=ui.admin, dataset_id=ui.dataset_id,
                        user_ids=[ui.analyst.id, stage2["bob"].id, stage2["cid"].id])
    at = _review(ui, ui.admin)
    assert "You look at this review as a curator" in texts(at)


def test_closed_stage_is_read_only(ui, stage2):
    with session_scope(ui.engine) as s:
        set_stage(session=s, actor=ui.curator, dataset_id=ui.dataset_id, stage=Stage.REVIEW)
        set_stage(session=s, actor=ui.curator, dataset_id=ui.dataset_id, stage=Stage.CLOSED)
    at = _review(ui, ui.analyst)
    assert "Stage 2 of this dataset is closed" in texts(at)
    assert not [w for w in at.button_group if str(w.key).startswith("review.variable:")]


def test_role_matrix_every_role_renders(ui, stage2):
    for user in (ui.analyst, ui.curator, ui.admin, stage2["bob"]):
        at = _review(ui, user)
        assert at.title[0].value.startswith("⚖️ Review")
    assert Role.CURATOR.value == ui.curator.role


def test_propose_an_alternative_variable_from_the_queue(ui, stage2):
    at = _reviewing(ui, ui.analyst)
    iv = stage2["ids"]["bob"]["iv"]
    prefix = f"alt.variable:{iv}.var"
    at.text_input(key=f"{prefix}.concept").input("storm strength")
    at.button(key=f"{prefix}.submit").click().run()
    assert "give the rationale" in texts(at)  # refused, nothing stored
    assert _alternatives(ui) == []
    at.text_area(key=f"{prefix}.rationale").input("wind kills")
    assert "log_deaths" in at.multiselect(key=f"{prefix}.columns").options  # made by a stage-1 transform
    at.multiselect(key=f"{prefix}.columns").select("wind")
    at.button(key=f"{prefix}.submit").click().run()
    assert not at.exception, at.exception
    assert "Alternative variable saved" in texts(at)
    (alt,) = _alternatives(ui)
    assert alt.payload["concept"] == "storm strength" and alt.proposed_by_id == ui.analyst.id
    bob_view = _review(ui, stage2["bob"])
    assert "storm strength" in texts(bob_view)


def test_propose_an_alternative_transform_runs_the_sanity_check(ui, stage2):
    at = _reviewing(ui, ui.analyst)
    dv = stage2["ids"]["bob"]["dv"]
    at.radio(key=f"alt.variable:{dv}.kind").set_value("transform").run()
    k = f"alt.variable:{dv}.tf"
    at.text_area(key=f"{k}.code").input("df['d2'] = df['nope'] ** 0.5")
    at.text_input(key=f"{k}.output").input("d2")
    at.text_area(key=f"{k}.rationale").input("milder than log")
    at.button(key=f"{k}.submit").click().run()
    errors = " ".join(e.value for e in at.error)
    assert "Sanity check failed" in errors and "the code does not run" in errors  # refused, and why
    assert "KeyError: 'nope'" in " ".join(c.value for c in at.code)
    assert _alternatives(ui) == []
    at.text_area(key=f"{k}.code").input("df['d2'] = df['deaths'] ** 0.5")
    at.text_input(key=f"{k}.name").input("sqrt_deaths")
    at.button(key=f"{k}.submit").click().run()
    assert not at.exception, at.exception
    assert "Alternative transform saved" in texts(at)
    (alt,) = _alternatives(ui)
    assert (alt.kind, alt.payload["spec_name"], alt.payload["output_col"]) == ("transform", "sqrt_deaths", "d2")
    assert alt.extra["check"]["ok"] and len(alt.extra["value_hash"]) == 64


def test_reviewers_see_proposed_text_literally(ui, stage2):
    """Shortcodes, dollars and emphasis in what a peer typed reach the reviewer as typed (issue 8.1)."""
    at = _reviewing(ui, ui.analyst)
    prefix = f"alt.variable:{stage2['ids']['bob']['iv']}.var"
    at.text_input(key=f"{prefix}.concept").input("storm :x: costs $5 and $6")
    at.text_area(key=f"{prefix}.rationale").input("wind *kills* :man:")
    at.multiselect(key=f"{prefix}.columns").select("wind")
    at.button(key=f"{prefix}.submit").click().run()
    assert not at.exception, at.exception
    shown = [m.value for m in _review(ui, stage2["bob"]).markdown]
    assert any(r"storm \:x\: costs \$5 and \$6" in m for m in shown), shown
    assert any(r"wind \*kills\* \:man\:" in m for m in shown), shown
    assert not any("storm :x:" in m for m in shown)  # never raw Markdown: it would become an emoji and LaTeX


def _generation(ui):
    from curation.models import BackgroundJob

    with session_scope(ui.engine) as s:
        return s.exec(select(BackgroundJob).order_by(BackgroundJob.id.desc())).first()  # type: ignore[union-attr]


def _wait_for_generation(ui, until=lambda job: job.status not in ("queued", "running"), limit_s=300):
    """Wait for the background generation to reach a state (a bound on the wait, not a speed assertion)."""
    import time

    deadline = time.monotonic() + limit_s
    while (job := _generation(ui)) is None or not until(job):
        assert time.monotonic() < deadline, job
        time.sleep(0.2)
    return job


def test_llm_panel_shows_live_progress_a_second_click_and_cancel(ui, stage2, monkeypatch):
    import json
    import threading

    from tests.llm_server import ScriptedLLM

    with session_scope(ui.engine) as s:
        set_stage(session=s, actor=ui.curator, dataset_id=ui.dataset_id, stage=Stage.REVIEW)
    answer = {"variables": [{"variable_type": "Control", "concept": "storm strength", "columns": ["wind"],
                             "rationale": "wind kills"}],
              "transforms": [{"code": "df['d2'] = df['deaths'] * 2", "output_col": "d2", "rationale": "scale"}]}
    gate = threading.Event()

    def held(req):  # every answer after the first waits until the test lets it go
        gate.wait(timeout=120)
        return json.dumps(answer)

    with ScriptedLLM(held) as server:
        server.script = [{"content": json.dumps(answer)}]
        monkeypatch.setenv("FORKPATHS_LLM_BASE_URL", server.url)
        monkeypatch.setenv("FORKPATHS_LLM_MODEL", "scripted")
        at = _review(ui, ui.curator)
        at.button(key="llm.generate").click().run(timeout=60)
        assert not at.exception, at.exception
        _wait_for_generation(ui, until=lambda job: job.progress_done >= 1)
        at = _review(ui, ui.curator)  # a reload (a new browser session) shows the running generation
        bars = [p for p in at.get("progress")]
        assert any("Generation running: 1/" in (b.proto.text or "") for b in bars), [b.proto.text for b in bars]
        at.button(key="llm.generate").click().run(timeout=60)  # a second click
        assert "already running" in " ".join(e.value for e in at.error)
        at.button(key="llm.cancel").click().run(timeout=60)
        assert any("cancelling after this seed" in (b.proto.text or "") for b in at.get("progress"))
        gate.set()
        job = _wait_for_generation(ui)
        at.run()
        assert job.status == "cancelled"
        kept = len(_alts := list(_all_alternatives(ui)))
        assert kept == job.result["created"] and 0 < kept < 6, _alts
        assert f"Cancelled after {job.result['seeds_done']} of 6 seeds; the {kept} alternatives stored" in texts(at)
        at.button(key="llm.dismiss").click().run()
        assert "Cancelled after" not in texts(at)
        at = _review(ui, ui.curator)  # dismissed for good: a reload does not bring it back
        assert "Cancelled after" not in texts(at)
    assert {a.source for a in _all_alternatives(ui)} == {"llm"}


def _all_alternatives(ui):
    from curation.models import Alternative

    with session_scope(ui.engine) as s:
        return list(s.exec(select(Alternative)).all())


def test_llm_panel_explains_configuration_then_generates_with_progress(ui, stage2, monkeypatch):
    import json

    from curation.models import Alternative
    from tests.llm_server import ScriptedLLM

    with session_scope(ui.engine) as s:
        set_stage(session=s, actor=ui.curator, dataset_id=ui.dataset_id, stage=Stage.REVIEW)
    at = _review(ui, ui.curator)
    assert "No LLM endpoint is configured" in texts(at)
    answer = {"variables": [{"variable_type": "Control", "concept": "storm strength", "columns": ["wind"],
                             "rationale": "wind kills"}],
              "transforms": [{"code": "df['d2'] = df['deaths'] * 2", "output_col": "d2", "rationale": "scale"}]}
    with ScriptedLLM(lambda req: json.dumps(answer)) as server:
        monkeypatch.setenv("FORKPATHS_LLM_BASE_URL", server.url)
        monkeypatch.setenv("FORKPATHS_LLM_MODEL", "scripted")
        at.run()
        assert "Model `scripted`" in texts(at)
        at.button(key="llm.generate").click().run(timeout=300)
        assert not at.exception, at.exception
        _wait_for_generation(ui)  # it runs in the background (a thread of the app on SQLite)
        at.run()
        assert "alternatives stored" in texts(at)
        # 2 analyses × (1 variable prompt + 2 transform prompts), but the two analyses are identical, so their
        # prompts are too: the second analysis's 3 calls are answered by the cache
        assert len(server.requests) == 3
        assert "3 of 6 answers came from the cache" in texts(at)
        # the report stays on the page (not a toast that fades), through other reruns, until dismissed
        assert any("alternatives stored" in el.value for el in [*at.success, *at.warning])
        assert not any("alternatives stored" in el.value for el in at.toast)
        at.run()
        assert "alternatives stored" in texts(at)
        at.button(key="llm.dismiss").click().run()
        assert "alternatives stored" not in texts(at)
    with session_scope(ui.engine) as s:
        alts = s.exec(select(Alternative)).all()
    assert {a.source for a in alts} == {"llm"} and any(a.kind == "transform" for a in alts)


def test_curator_merges_a_flagged_duplicate(ui, stage2):
    from curation.models import Alternative
    from curation.services.alternatives import VariableAlternativeInput, propose_variable_alternative
    from evaluation.specs import VariableType

    with session_scope(ui.engine) as s:
        set_stage(session=s, actor=ui.curator, dataset_id=ui.dataset_id, stage=Stage.REVIEW)
    ids = []
    for who in (ui.analyst, stage2["bob"]):
        with session_scope(ui.engine) as s:
            ids.append(propose_variable_alternative(
                session=s, actor=who, dataset_id=ui.dataset_id, seed_id=None,
                data=VariableAlternativeInput(variable_type=VariableType.CONTROL, concept="storm strength",
                                              rationale="wind", columns=["wind"])).alternative.id)
    at = _review(ui, ui.curator)
    assert "same decision as #" in texts(at)
    at.button(key=f"merge.alternative:{ids[1]}").click().run()
    assert not at.exception and "Merged #" in texts(at)
    with session_scope(ui.engine) as s:
        assert s.get(Alternative, ids[1]).extra["merged_into"] == ids[0]
    assert not [b for b in at.button if str(b.key).startswith("merge.")]

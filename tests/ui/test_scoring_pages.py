"""Scoring pages in AppTest, per role: runs, leaderboard, run details with overrides (the upload itself is
driven in Chromium, tests/browser/test_scoring_flow.py, since AppTest cannot upload files)."""

from __future__ import annotations

import pytest
from sqlmodel import select

from curation.db import session_scope
from curation.models import Role, ScoreOverride, ScoringRun
from curation.services import releases as rel
from curation.services.blade_import import import_blade
from curation.services.scoring import execute_run, register_run
from tests import factories as f
from tests.ui.conftest import texts

SCORING_PAGES = ["leaderboard.py", "runs.py", "run_details.py"]


@pytest.fixture
def scored(ui, shared_blade):
    s_ = ui.settings
    with session_scope(ui.engine) as s:
        import_blade(session=s, actor=None, path=shared_blade / "datasets" / "hurricane", store=s_.datasets_store,
                     max_bytes=200 * 2**20)
    with session_scope(ui.engine) as s:
        rel.cut_release(session=s, actor=ui.curator, version="1.0.0", notes="", artifacts=s_.artifact_store(),
                        store=s_.datasets_store)
    evaluator = f.user(ui.engine, "evie", Role.EVALUATOR)
    data = (shared_blade / "examples" / "multirun_analyses.json").read_bytes()
    with session_scope(ui.engine) as s:
        run = register_run(session=s, actor=evaluator, release_version="1.0.0", files=[("multi.json", data)],
                           agent="react", model_name="gpt-x", artifacts=s_.artifact_store(), max_bytes=s_.max_submission_bytes)
    run = execute_run(ui.engine, run.id, artifacts=s_.artifact_store())
    assert run.status == "succeeded", run.message
    return evaluator, run


def _run_picker(at):
    return next(sb for sb in at.selectbox if sb.label == "Run")


def _open(ui, user, page):
    at = ui.app(user).run()
    assert not at.exception, at.exception
    at.switch_page(f"app_pages/{page}").run()
    assert not at.exception, (page, at.exception)
    return at


def test_roles_see_the_scoring_pages_they_may_use(ui):
    evaluator = f.user(ui.engine, "evie", Role.EVALUATOR)
    at = ui.app(evaluator).run()
    assert not at.exception and "Leaderboard" in at.title[0].value  # an evaluator lands on the leaderboard
    assert "There is no release yet" in texts(at)
    for page in ("home.py", "annotate.py", "releases.py"):
        with pytest.raises(ValueError):
            at.switch_page(f"app_pages/{page}")
    for user in (evaluator, ui.curator, ui.admin):
        for page in SCORING_PAGES:
            assert "This page is for" not in texts(_open(ui, user, page))
    at = ui.app(ui.analyst).run()
    for page in SCORING_PAGES:
        with pytest.raises(ValueError):
            at.switch_page(f"app_pages/{page}")


def test_leaderboard_runs_and_details_show_a_scored_run(ui, scored):
    evaluator, run = scored
    at = _open(ui, evaluator, "runs.py")
    assert list(at.dataframe[0].value["status"]) == ["succeeded"]
    # the uploader states (and lets through) the submission limit, not Streamlit's default 200 MB
    assert at.file_uploader(key="runs.files").proto.max_upload_size_mb == ui.settings.max_submission_mb == 50
    assert f"Run {run.id} succeeded (10 analyses scored)" in texts(at)
    assert not [b for b in at.button if b.label == "Mark as official"]  # curators only

    at = _open(ui, evaluator, "leaderboard.py")
    board = at.dataframe[0].value
    assert list(board["run"]) == [f"#{run.id} react · gpt-x"] and board["weighted"][0].count("[") == 1
    # no MCQ run was scored, so no MCQ column of blanks (the every-kind test shows it where an agent has one)
    assert "F1 variables" in board.columns and "MCQ accuracy" not in board.columns
    at.selectbox(key="leaderboard.dataset").select("hurricane").run()
    assert not at.exception and len(at.dataframe[0].value) == 1

    at = _open(ui, ui.curator, "runs.py")
    next(b for b in at.button if b.label == "Mark as official").click().run()
    assert not at.exception
    with session_scope(ui.engine) as s:
        assert s.get(ScoringRun, run.id).official


def test_an_override_changes_the_score_and_a_second_one_is_refused(ui, scored):
    evaluator, run = scored
    at = _open(ui, evaluator, "run_details.py")
    assert len(at.dataframe[0].value) == 10  # the analyses of hurricane
    # transform credit ran against the release's ground truth: its units are listed, not a "not run" note
    assert "Transform credit was not run" not in texts(at)
    missed = next(e.label for e in at.expander if e.label.startswith("Ground-truth units missed"))
    assert int(missed.rsplit(" of ", 1)[1]) > 0, missed
    matched = [i for i, o in enumerate(at.selectbox[-1].options) if o.startswith("✔")]
    assert matched, at.selectbox[-1].options
    units = [o for o in at.selectbox[-1].options if " transform unit " in o]  # ground-truth units can be flipped
    assert any(o.endswith(" by value") for o in units) and any(o.endswith(" by graph") for o in units)
    assert at.dataframe[1].value["verb"].tolist() == ["filter"]  # this analysis's code drops rows only
    at.selectbox[-1].set_value(matched[0])
    at.text_input[-1].input("not the same concept")
    next(b for b in at.button if b.label == "Flip this match").click().run()
    assert not at.exception
    assert "Override saved" in texts(at) and "now counts as no match" in texts(at)
    with session_scope(ui.engine) as s:
        o = s.exec(select(ScoreOverride)).one()
        updated = s.get(ScoringRun, run.id)
    assert o.author_id == evaluator.id and o.original and not o.value
    assert updated.scores_effective != updated.scores

    other = f.user(ui.engine, "evan", Role.EVALUATOR)
    at = _open(ui, other, "run_details.py")
    at.selectbox(key="details.analysis").select(o.analysis_key).run()
    target = next(i for i, opt in enumerate(at.selectbox[-1].options) if opt.startswith("✘"))
    at.selectbox[-1].set_value(target)
    at.text_input[-1].input("I disagree")
    next(b for b in at.button if b.label == "Flip this match").click().run()
    assert "evie already overrode" in texts(at)
    at = _open(ui, evaluator, "leaderboard.py")
    assert "✎ 1" in list(at.dataframe[0].value["overrides"])


def test_compare_and_judge_validation_pages(ui, scored):
    evaluator, run = scored
    at = _open(ui, evaluator, "compare.py")
    assert "Score at least two runs" in texts(at)
    s_ = ui.settings
    data = s_.artifact_store().get_bytes(run.submission_files[0]["sha256"], what="the submission")
    with session_scope(ui.engine) as s:
        other = register_run(session=s, actor=evaluator, release_version="1.0.0", files=[("m.json", data)],
                             agent="other", mode="blade", artifacts=s_.artifact_store(),
                             max_bytes=s_.max_submission_bytes)
    execute_run(ui.engine, other.id, artifacts=s_.artifact_store())
    at = _open(ui, evaluator, "compare.py")
    assert "Something went wrong" not in texts(at), texts(at)
    table = at.dataframe[0].value
    assert list(table["decision type"])[0] == "variables" and len(table) == 5

    at = _open(ui, evaluator, "judge_check.py")
    assert "The queue is empty" in texts(at)
    at.button(key="judge.sample").click().run()
    assert "20 decision(s) added" in texts(at)
    at.button(key="judge.label.True").click().run()
    assert not at.exception and "1 labelled, 19 waiting" in texts(at)
    assert "agreement, κ" in texts(at)
    at = _open(ui, evaluator, "leaderboard.py")
    assert "agreement, κ" in texts(at) and "BLADE reports" in texts(at)


def test_runs_page_marks_a_run_whose_scorer_died_and_offers_rescore_for_interrupted_and_failed(ui, scored):
    from tests.curation.dead_scorer import claim_in_a_process_that_dies

    evaluator, done = scored
    s_ = ui.settings
    data = s_.artifact_store().get_bytes(done.submission_files[0]["sha256"], what="the submission")

    def register() -> int:
        with session_scope(ui.engine) as s:
            return register_run(session=s, actor=evaluator, release_version="1.0.0", files=[("multi.json", data)],
                                agent="react", model_name="gpt-x", artifacts=s_.artifact_store(),
                                max_bytes=s_.max_submission_bytes).id

    killed = register()
    claim_in_a_process_that_dies(ui.engine, killed)  # the app scoring it was killed mid-run
    at = _open(ui, evaluator, "runs.py")
    table = at.dataframe[0].value
    assert dict(zip(table["run"], table["status"], strict=True))[killed] == "interrupted"
    assert f"Run {killed} interrupted: Interrupted: the process scoring it" in texts(at)
    assert not [b for b in at.button if b.label == "Cancel this run"]
    assert _run_picker(at).value == killed
    next(b for b in at.button if b.label == "Re-score").click().run()
    assert not at.exception, at.exception
    with session_scope(ui.engine) as s:
        again = s.exec(select(ScoringRun).where(ScoringRun.rescore_of_id == killed)).one()
    assert again.release_version == "1.0.0" and again.status in ("queued", "running", "succeeded")

    failed = register()
    with session_scope(ui.engine) as s:  # a failed run (its stored submission was changed on disk)
        run = s.get(ScoringRun, failed)
        run.status, run.message = "failed", "Scoring failed after 0 of 10 analyses: boom"
        s.add(run)
    at = _open(ui, evaluator, "runs.py")
    _run_picker(at).select(failed).run()
    assert [b.label for b in at.button if b.label.startswith("Re-score")] == ["Re-score"]
    _run_picker(at).select(done.id).run()  # a succeeded run on the newest release: nothing to re-score
    assert not [b for b in at.button if b.label.startswith("Re-score")]


def test_the_score_form_asks_only_what_the_chosen_kind_uses(ui, scored):
    """Judge, mode and k are asked only of a kind that declares a choice of them (its judges, modes, uses_k), and
    the model a kind asks only of a kind that asks one: an MCQ answers file has no judge, mode or k."""
    evaluator, _ = scored
    at = _open(ui, evaluator, "runs.py")

    def asked():
        at.run()
        assert not at.exception, at.exception
        return ({r.label: list(r.options) for r in at.radio if r.label != "What to score"},
                [n.label for n in at.number_input], [t.label for t in at.text_input])

    radios, numbers, inputs = asked()  # the first ranked kind: BLADE analyses
    assert at.radio(key="runs.kind").value == "analyses"
    assert radios == {"Judge": ["offline", "llm"], "Mode": ["default", "blade"]} and numbers == ["k (coverage@k)"]
    at.radio(key="runs.kind").set_value("mcq")
    radios, numbers, inputs = asked()
    assert radios == {} and numbers == [] and "Inspector model" not in inputs
    at.radio(key="runs.kind").set_value("hypotheses")
    radios, numbers, _ = asked()
    assert radios == {"Mode": ["default", "discoverybench"]} and numbers == []
    assert "Judged by hms" in texts(at)  # its only judge, named rather than offered
    at.radio(key="runs.kind").set_value("reproducibility")
    radios, numbers, inputs = asked()
    assert radios == {} and numbers == [] and "Inspector model" in inputs

"""Issue 17 in one flow, in a real browser, as a team uses it: a small hand-made DiscoveryBench folder is
imported; two analysts write their hypotheses for one query blind (stage 1), judge each other's (stage 2), the
curator makes the justifiable one the gold hypothesis (stage 3) and cuts a release on the Releases page; an
evaluator scores an agent's hypotheses against it on the Scoring runs page (the hms judge is the scripted
OpenAI-compatible server on 127.0.0.1), opens Run details, overrides one judgement and sees HMS recompute.
Screenshots of every step are in tests/browser/artifacts/<test name>/."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from curation.db import make_engine, session_scope
from curation.models import HypothesisTask, Role, ScoringRun
from tests import factories as f
from tests.browser.helpers import (
    click,
    fill_text,
    idle,
    llm_env,
    metric,
    score_hypotheses,
    serving,
    shot,
    tab,
)
from tests.browser.test_hypothesis_flow import _sign_in, _vote, _write, pick
from tests.curation.hypothesis_world import import_folder
from tests.evaluation.hms_script import HMSScript, sub
from tests.llm_server import ScriptedLLM

pytestmark = pytest.mark.browser

GOLD = "In US adults, BMI rises with age."
PREDICTED = "BMI goes up with age among adults."
Q0, Q2 = "real/test/bmi_survey/metadata_0/q0", "real/test/bmi_survey/metadata_0/q2"


def _script() -> HMSScript:
    # both golds (q0 decided in stage 3, q2 imported) read the same; the agent's answer matches their context and
    # variables, and its relationship is judged B (0.5): HMS 0.5 per query, 0.5 for the run
    return HMSScript(decompositions={GOLD: [sub("g", "US adults", ["age", "BMI"], "rises with")],
                                     PREDICTED: [sub("p", "adults", ["age", "BMI"], "goes up with")]},
                     pair_contexts={"P0|G0": True}, variables={"P0|G0": [[1, 1], [2, 2]]},
                     relationships={"P0|G0": "B"})


def test_discoverybench_query_curated_released_scored_and_judged(browser, tmp_path, shots: Path):
    with ScriptedLLM(_script()) as server, serving(tmp_path, llm_env(server.url)) as app:
        url, cfg = app.url, app.settings
        pages = []
        try:
            engine = make_engine(cfg.resolved_database_url)
            ana, bob = f.user(engine, "ana"), f.user(engine, "bob")
            f.user(engine, "cleo", Role.CURATOR), f.user(engine, "evie", Role.EVALUATOR)
            root = f.user(engine, "root", Role.ADMIN)
            _ds, tasks = import_folder(engine, cfg.datasets_store, tmp_path / "src", root, [ana, bob])

            # stage 1: two analysts, blind (test_hypothesis_flow runs supporting code in the sandbox and has a
            # hypothesis refused first; neither is asserted here)
            a = _sign_in(browser, url, "ana", "Annotate")
            pages.append(a)
            _write(a, shots, "01-ana", GOLD, "bmi", None)
            b = _sign_in(browser, url, "bob", "Annotate")
            pages.append(b)
            _write(b, shots, "02-bob", "BMI falls with age.", "bmi", None)

            # stage 2: the curator opens it, each analyst judges the other's hypothesis
            c = _sign_in(browser, url, "cleo", "Review")
            pages.append(c)
            click(c, "Open stage 2 (review)")
            c.get_by_text(GOLD).first.wait_for()
            shot(c, shots / "03-cleo-stage2-open.png")
            for page, who, peer, verdict, reason in [
                    (a, "04-ana", "BMI falls with age.", "Unjustifiable", "the OLS slope is positive"),
                    (b, "05-bob", GOLD, "Justifiable", "the slope is clear")]:
                page.get_by_role("link", name="Review").click()
                idle(page)
                _vote(page, shots, who, peer, verdict, reason)

            # stage 3: the curator closes stage 2 and decides the gold
            c.reload()
            idle(c)
            c.get_by_text("Stages and review settings (curators)").click()
            idle(c)
            click(c, "Close stage 2")
            c.get_by_text("votes are final and shown read-only").wait_for()
            c.get_by_role("link", name="Consensus").click()
            c.get_by_text("Consensus (stage 3)").wait_for()
            idle(c)
            tab(c, "Gold hypotheses")
            c.get_by_text(re.compile(re.escape(GOLD) + r" \(an analyst's; ")).click()  # nothing is pre-selected
            idle(c)
            fill_text(c, "Note (optional)", "agreed by the rule")
            click(c, "Make it the gold hypothesis")
            c.get_by_text("is now the gold hypothesis").wait_for()
            shot(c, shots / "06-cleo-gold-decided.png")

            # the release, cut on the page
            c.get_by_role("link", name="Releases").click()
            idle(c)
            tab(c, "Cut a release")
            idle(c)
            shot(c, shots / "07-cleo-cut-release.png")
            click(c, "Cut release")
            c.get_by_text(re.compile(r"Release 1\.0\.0 cut")).first.wait_for(timeout=60_000)
            idle(c)
            tab(c, "Releases")
            c.get_by_text(re.compile(r"^Hypothesis tasks: 1 dataset")).wait_for(timeout=60_000)
            shot(c, shots / "08-cleo-released.png")

            # scoring an agent's hypotheses against it
            answers = tmp_path / "agent-hypotheses.json"
            answers.write_text(json.dumps({"format": "forkpaths-hypotheses", "format_version": "1.0", "answers": [
                {"task": Q0, "hypothesis": PREDICTED, "workflow": "OLS of BMI on age"},
                {"task": Q2, "hypothesis": PREDICTED, "workflow": "OLS of BMI on age"}]}))
            e = _sign_in(browser, url, "evie", "Scoring runs")
            pages.append(e)
            score_hypotheses(e, answers, shots, "09-evie-upload.png", "10-evie-run-succeeded.png")

            # Run details: HMS, one query's judgement overridden, HMS recomputed
            e.get_by_role("link", name="Run details").click()
            idle(e)
            expect(e.locator('[data-testid="stMetric"]').filter(has_text="HMS").first).to_be_visible(timeout=60_000)
            assert metric(e, "HMS") == "0.500"
            pick(e, "Query", Q0)
            e.get_by_text("Context matching").wait_for()
            shot(e, shots / "11-evie-query.png")
            pick(e, "Facet", "relationship")
            e.get_by_text("A · very similar (1)").click()
            e.get_by_label("Reason (kept with the run)").fill("'rises with' and 'goes up with' are the same claim")
            click(e, "Record my judgement")
            e.get_by_text(re.compile("Judgement saved")).wait_for(timeout=30_000)
            # q0: 1 x (1 x 1) = 1; q2 stays 0.5: HMS (1 + 0.5) / 2
            expect(e.locator('[data-testid="stMetric"]').filter(has_text="HMS").first).to_contain_text("0.750")
            shot(e, shots / "12-evie-after-override.png", e.get_by_text("Expert judgements: relationship of P0|G0"))
            shot(e, shots / "13-evie-hms-recomputed.png",
                 e.locator('[data-testid="stMetric"]').filter(has_text="HMS").first)
            for page in pages:
                assert page.locator("[data-testid='stException']").count() == 0
        except Exception:
            for n, page in enumerate(pages):
                page.screenshot(path=shots / f"failure-{n}.png", full_page=True)
            raise
    with session_scope(engine) as s:
        task = s.get(HypothesisTask, tasks["q0"].id)
        assert (task.gold_source, task.gold_hypothesis) == ("consensus", GOLD)
        run = s.get(ScoringRun, 1)
        assert run is not None and run.kind == "hypotheses" and run.judge["model"] == "judge-model"
    engine.dispose()

"""The Runs page's 'Check reproducibility' in AppTest: without an inspector model configured it says what to set
and registers nothing (the side-by-side view itself is driven
in Chromium, tests/browser/test_reproducibility_view.py)."""

from __future__ import annotations

from sqlmodel import select

from curation.db import session_scope
from curation.models import ScoringRun
from tests.ui.test_scoring_pages import _open, scored  # noqa: F401 - the fixture


def test_check_reproducibility_without_an_inspector_says_what_to_set(ui, scored):  # noqa: F811
    evaluator, run = scored
    at = _open(ui, evaluator, "runs.py")
    button = next(b for b in at.button if b.label == "Check reproducibility")
    button.click().run()
    assert not at.exception, at.exception
    shown = " ".join(e.value for e in at.error).replace("\\", "")  # the page escapes Markdown
    assert "asks an LLM (its inspector)" in shown and "FORKPATHS_LLM_BASE_URL" in shown
    with session_scope(ui.engine) as s:
        assert [r.kind for r in s.exec(select(ScoringRun)).all()] == ["analyses"]  # nothing registered

"""The drill-down of an imported AIRepr sample lists every step and marks the one AIRepr judged (AppTest)."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest


def _script() -> None:
    from annotate_app.components.kinds.reproducibility import _airepr_steps

    _airepr_steps({"steps": [{"workflow": "1. Look.", "code": "print('first')\n", "observation": "first\n"},
                             {"workflow": "2. Regress.", "code": "print('last')\n", "observation": "last\n"},
                             {"workflow": "", "code": "", "observation": ""}],
                   "selection": {"code_step": 1, "workflow_step": 1, "rule": "REACT: the last step with code"}})
    _airepr_steps({})  # not an AIRepr sample: nothing drawn


def test_every_step_is_shown_and_the_judged_one_marked():
    at = AppTest.from_function(_script, default_timeout=30).run()
    assert not at.exception, at.exception
    assert len(at.expander) == 1
    assert at.expander[0].label == "All 3 steps of the sample (the original analysis above is step 2, the one AIRepr judged)"
    assert [c.value.strip() for c in at.code] == ["1. Look.", "print('first')", "first", "2. Regress.",
                                                  "print('last')", "last"]
    assert "**Step 2** · judged" in [m.value for m in at.markdown]

"""The reproducibility kind's page component: a run's figures (the rate with its CI, the other outcomes counted
beside it), its items, and one item side by side (both codes, both outputs, both conclusions, the inspector's
reasoning), with an evaluator's override and the expert labels that validate the inspector."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st
from sqlmodel import select

from annotate_app import context, state
from annotate_app.components.judge_card import judge_card
from annotate_app.text import md, plural
from curation.models import ScoringRun, User
from curation.services.judge_validation import label_decision
from curation.services.reproducibility import (
    inspector_agreement,
    next_verdict_to_label,
    override_outcome,
    run_items,
    sample_inspector_verdicts,
)
from evaluation.reproducibility.models import OUTCOME_LABELS, CodeRun, ItemResult, Outcome

__all__ = ["drilldown", "items_table"]

# plain symbols every font has (colour emoji are missing on many Linux desktops and in headless browsers)
_ICON = {Outcome.REPRODUCIBLE: "✔", Outcome.NOT_REPRODUCIBLE: "✘", Outcome.ORIGINAL_FAILED: "⊘",
         Outcome.INSPECTOR_FAILED: "⚠"}
_BANNER = {Outcome.REPRODUCIBLE: st.success, Outcome.NOT_REPRODUCIBLE: st.error,
           Outcome.ORIGINAL_FAILED: st.warning, Outcome.INSPECTOR_FAILED: st.info}


def _label(o: Outcome) -> str:
    return f"{_ICON[o]} {OUTCOME_LABELS[o]}"


def _acc(i: ItemResult) -> str:
    if i.accuracy is None:
        return ""
    return "not judged" if i.accuracy.correct is None else ("correct" if i.accuracy.correct else "wrong")


def items_table(items: list[ItemResult], engine: dict[str, Outcome]) -> pd.DataFrame:
    """One row per item: its outcome (✎ when overridden), why, and its accuracy where a gold answer exists."""
    return pd.DataFrame([{"item": i.key, "outcome": _label(i.outcome) + (" ✎" if engine.get(i.key) != i.outcome
                                                                           else ""),
                          "why": i.sentence, "accuracy": _acc(i)} for i in items],
                        columns=["item", "outcome", "why", "accuracy"])


def _figures(run: ScoringRun) -> None:
    now = (run.scores_effective or {}).get("reproducibility", {})
    was = (run.scores or {}).get("reproducibility", {})
    rate, counts = now.get("rate", {}), now.get("counts", {})
    point = rate.get("point")
    shown = "undefined" if point is None else f"{point:.2f}"
    if point is not None and rate.get("ci_low") is not None:
        shown += f" [{rate['ci_low']:.2f}, {rate['ci_high']:.2f}]"
    before = was.get("rate", {}).get("point")
    row = st.container(horizontal=True, gap="medium")
    row.metric("Reproducibility rate", shown, width="content",
               help="reproducible / (reproducible + not reproducible), with its 95 % bootstrap interval",
               delta=f"{point - before:+.2f} by overrides" if point is not None and before is not None
               and point != before else None)
    for o in Outcome:
        row.metric(_label(o), counts.get(o.value, 0), width="content")
    acc = now.get("accuracy", {})
    if acc.get("graded") or acc.get("not_judged"):
        row.metric("Accuracy (gold)", "undefined" if acc.get("point") is None else f"{acc['point']:.2f}",
                   width="content", help=f"{acc.get('correct', 0)} of {acc.get('graded', 0)} graded answers correct; "
                                         f"{acc.get('not_judged', 0)} not judged (the judge failed), never counted "
                                         "correct")
    own = was.get("kind_accuracy")  # an imported AIRepr run of a benchmark a kind declares: its own rules' figure
    if own:
        row.metric(f"Accuracy ({own['kind']} rules)", f"{own['point']:.2f} [{own['ci_low']:.2f}, {own['ci_high']:.2f}]",
                   width="content", help=f"the final answers against the release's gold, scored by the {own['kind']} "
                                         f"kind over {own['questions']} questions; "
                                         f"{len(own.get('not_in_release', []))} samples are not in the release")


def _run_block(title: str, code: str, run: CodeRun | None, answer_label: str, answer: str) -> None:
    st.markdown(f"**{title}**")
    st.code(code or "(no code)", language="python", wrap_lines=True)
    if run is None:
        st.caption("Not run.")
    else:
        where = "" if run.ran else " (published by AIRepr, not run here)"
        st.caption(f"Output{where}" + (f" · {run.seconds:.2f} s" if run.ran else ""))
        st.code(run.stdout or "(printed nothing)", language=None)  # tables keep their columns: scroll, no wrap
        if not run.ok and run.error:
            st.error(md(run.error))
    st.markdown(f"**{answer_label}:** {md(answer or '(none)')}")


def _airepr_steps(published: dict[str, Any]) -> None:
    """Every step of an AIRepr sample; the original analysis shown above is the step AIRepr judged."""
    steps = published.get("steps")
    if not isinstance(steps, list) or not steps:
        return
    chosen = published.get("selection") or {}
    code_step = chosen.get("code_step")
    judged = f" (the original analysis above is step {code_step + 1}, the one AIRepr judged)" \
        if isinstance(code_step, int) else ""
    with st.expander(f"All {plural(len(steps), 'step')} of the sample{judged}"):
        if chosen.get("rule"):
            st.caption(md(f"AIRepr's rule: {chosen['rule']}."))
        for n, step in enumerate(steps, start=1):
            step = step if isinstance(step, dict) else {}
            st.markdown(f"**Step {n}**" + (" · judged" if code_step == n - 1 else ""))
            if step.get("workflow"):
                st.code(str(step["workflow"]), language=None, wrap_lines=True)
            if step.get("code"):
                st.code(str(step["code"]), language="python", wrap_lines=True)
            if step.get("observation"):
                st.code(str(step["observation"]), language=None)


def _side_by_side(i: ItemResult, engine: Outcome) -> None:
    _BANNER[i.outcome](md(f"{_label(i.outcome)}: {i.sentence}"))
    if engine != i.outcome:
        st.caption(md(f"Overridden; the inspector's outcome was '{OUTCOME_LABELS[engine]}'."))
    if i.question:
        st.markdown(f"**Question:** {md(i.question)}")
    st.markdown("**Workflow** (all the inspector saw of the analysis)")
    st.code(i.workflow or "(empty)", language=None, wrap_lines=True)
    left, right = st.columns(2)
    with left:
        _run_block("Original analysis", i.original_code, i.original_run, "Final answer", i.original_answer)
    with right:
        _run_block("Inspector, from the workflow alone", i.inspector_code, i.inspector_run, "Inspector's conclusion",
                   i.inspector_conclusion)
    _airepr_steps(i.published)
    with st.container(border=True):
        st.markdown("**The inspector's comparison**")
        if i.same_statistics is not None:
            st.markdown(f"Same statistics: {'✔ yes' if i.same_statistics else '✘ no'} · same conclusion: "
                        f"{'✔ yes' if i.same_conclusion else '✘ no'}")
        st.markdown(md(i.reasoning) if i.reasoning else "_No comparison was made (see the outcome above)._")
        st.caption(f"{plural(i.calls, 'LLM call')} sent for this item, {i.cached} answered from the cache.")
    if i.accuracy is not None:
        with st.container(border=True):
            st.markdown(f"**Accuracy against the gold answer:** {_acc(i)}")
            st.markdown(f"Gold: {md(i.gold or '')}  \n{md(i.accuracy.reason)}")
            rule = i.accuracy.tolerance.get("rule") or i.accuracy.tolerance.get("source", "")
            st.caption(md(f"Tolerance: {rule}"))


def _override_form(user: User, run_id: int, i: ItemResult, cfg: Any, authors: dict[int, str],
                   overrides: list[Any]) -> None:
    mine = next((o for o in overrides if o.item == i.key), None)
    if mine is not None:
        st.caption(md(f"Override by {authors.get(mine.author_id, '?')} at {mine.created_at:%Y-%m-%d %H:%M} UTC: "
                      f"{OUTCOME_LABELS[Outcome(mine.original)]} → {OUTCOME_LABELS[Outcome(mine.value)]} "
                      f"({mine.reason})"))
        return
    with st.form(f"repro.override.{state.form_version('repro.override')}"):
        st.markdown("**Override this outcome**")
        choices = [o for o in Outcome if o != i.outcome]
        pick = st.selectbox("New outcome", choices, format_func=_label, key="repro.override.outcome")
        reason = st.text_input("Reason (kept with the run)", key="repro.override.reason")
        go = st.form_submit_button("Save the override", type="primary")
    if go and context.succeeded(lambda s: override_outcome(session=s, actor=user, run_id=run_id, item=i.key,
                                                           outcome=pick.value, reason=reason,
                                                           artifacts=cfg.artifact_store())):
        state.bump_form("repro.override")
        state.flash(f"Override saved: {i.key} is now '{OUTCOME_LABELS[pick]}'; the run's rates were recomputed.")
        st.rerun()


def _validation(user: User, run_id: int, cfg: Any) -> None:
    with st.container(border=True):
        st.markdown("**Validate the inspector against experts**")
        st.caption("Sample the inspector's verdicts, label them without seeing its verdict or reasoning, and "
                   "compare: agreement, Cohen's κ and the confusion matrix per inspector model.")
        c1, c2 = st.columns([1, 3])
        n = c1.number_input("Verdicts", min_value=1, max_value=500, value=20, key="repro.sample.n")
        if c2.button("Add this run's verdicts to the queue", key="repro.sample"):
            added = context.attempt(lambda s: sample_inspector_verdicts(session=s, actor=user, run_id=run_id,
                                                                        n=int(n), artifacts=cfg.artifact_store()))
            if added is not None:
                st.success(f"{added} verdict(s) added." if added else "Every verdict of this run is already queued.")
        label = context.attempt(lambda s: next_verdict_to_label(session=s, actor=user))
        if label is not None:
            with st.container(border=True):
                st.markdown(f"Do the two analyses reach the same statistics and conclusion? (run {label.run_id}, "
                            f"item {md(label.item)})")
                st.markdown(f"- **Original's answer:** {md(label.ground_truth or '(none)')}\n"
                            f"- **Inspector's conclusion:** {md(label.agent or '(none)')}")
                st.caption("Open the item above to read both codes and outputs before you answer.")
                b1, b2, _ = st.columns([1, 1, 2])
                for column, value, text in [(b1, True, "✔ Same"), (b2, False, "✘ Different")]:
                    if column.button(text, key=f"repro.label.{value}") and context.succeeded(
                            lambda s, v=value: label_decision(session=s, actor=user, label_id=label.id or 0, value=v)):
                        st.rerun()
        reports, waiting = context.attempt(lambda s: inspector_agreement(session=s, actor=user)) or ([], 0)
        st.caption(f"{plural(waiting, 'verdict')} waiting for a label.")
        judge_card(reports, key="repro.card")


def drilldown(run: ScoringRun, user: User, cfg: Any) -> None:
    """A reproducibility run: figures, items, one item side by side, override, validation."""
    run_id = run.id or 0

    def _load(s: Any) -> tuple[Any, dict[int, str]]:
        got = run_items(session=s, actor=user, run_id=run_id, artifacts=cfg.artifact_store())
        return got, {u.id: u.display_name or u.username for u in s.exec(select(User)).all()}

    loaded = context.attempt(_load)
    if loaded is None:
        return
    got, authors = loaded
    inspector = got.result.inspector
    origin = ("imported from AIRepr's published files" if got.result.origin == "airepr" else
              f"inspector {inspector.get('model', '?')} at {inspector.get('base_url', '?')}")
    st.caption(md(f"Reproducibility run {run_id}: {origin}; run {run.agent} · {run.model_name or '-'} on release "
                  f"{run.release_version}."))
    for name, why in got.withheld.items():
        st.info(md(f"Dataset {name} is left out of these details: {why}"), icon="🙈")
    _figures(run)
    if got.result.skipped:
        with st.expander(f"{plural(len(got.result.skipped), 'item')} without a workflow (not judged)"):
            st.code("\n".join(got.result.skipped), language=None)
    if not got.items:
        st.info("No item to show.")
        return
    counts = {o: sum(1 for i in got.items if i.outcome == o) for o in Outcome}
    # the four outcomes always (a stable widget: an override that empties one keeps the evaluator's choice)
    shown = st.multiselect("Outcomes", list(Outcome), default=list(Outcome), key="repro.outcomes",
                           format_func=lambda o: f"{_label(o)} ({counts[o]})")
    items = [i for i in got.items if i.outcome in shown]
    st.dataframe(items_table(items, got.engine), hide_index=True, width="stretch", key="repro.items")
    if not items:
        return
    keys = [i.key for i in items]
    chosen = state.chosen_repro_item()
    # no widget key: the options are the items shown; the item opened last stays open across reruns
    key = st.selectbox("Item", keys, index=keys.index(chosen) if chosen in keys else 0)
    state.choose_repro_item(key)
    item = next(i for i in items if i.key == key)
    _side_by_side(item, got.engine[item.key])
    _override_form(user, run_id, item, cfg, authors, got.overrides)
    _validation(user, run_id, cfg)

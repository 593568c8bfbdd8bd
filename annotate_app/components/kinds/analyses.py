"""The BLADE-analysis kind's page component: its drill-down (run → dataset → analysis, with the agent's code, every
match and its reason, and overrides) and what it adds to the leaderboard (notes and charts)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import streamlit as st
from sqlmodel import select

from annotate_app import context, state
from annotate_app.components.kinds.analyses_drilldown import (
    SCORE_COLUMNS,
    analyses_table,
    converter_table,
    lineage_table,
    missed_units,
    models_table,
    unit_choices,
    units_table,
    variables_table,
)
from annotate_app.components.score_charts import f1_figure, weighted_figure
from annotate_app.text import md
from curation.models import ScoringRun, User
from curation.services.leaderboard import add_override, list_overrides, submitted_analyses, viewable_result

__all__ = ["drilldown", "leaderboard_charts", "leaderboard_notes"]


def leaderboard_notes(rows: Sequence[dict[str, Any]]) -> None:
    unscored = [r for r in rows if not r["transforms_scored"]]
    if unscored:
        st.info(f"Transforms were not scored for {len(unscored)} of these runs, on every dataset or on some (their "
                "value and graph F1 are 0 there): the ground-truth build was not available when they were scored. "
                "Run details say which datasets and why.")


def leaderboard_charts(rows: Sequence[dict[str, Any]], container: Any) -> None:
    container.plotly_chart(f1_figure(rows), key="leaderboard.f1")
    container.plotly_chart(weighted_figure(rows), key="leaderboard.weighted")


def drilldown(run: ScoringRun, user: User, cfg: Any) -> None:
    """Run → dataset → analysis for one succeeded analyses run, with overrides."""
    run_id = run.id

    def _load(s):
        result, withheld = viewable_result(session=s, actor=user, run_id=run_id, artifacts=cfg.artifact_store())
        overrides = list_overrides(session=s, actor=user, run_id=run_id)
        authors = {u.id: u.display_name or u.username for u in s.exec(select(User)).all()}
        return result, withheld, overrides, authors, submitted_analyses(session=s, actor=user, run_id=run_id,
                                                                        artifacts=cfg.artifact_store())


    loaded = context.attempt(_load)
    if loaded is None:
        return
    result, withheld, overrides, authors, submitted = loaded
    overrides = [o for o in overrides if o.dataset not in withheld]  # their labels quote the withheld ground truth
    for name, why in withheld.items():
        st.info(md(f"Dataset {name} is left out of these details: {why}"), icon="🙈")
    if not result.datasets:
        return
    engine_scores, scores = (run.scores or {}).get("overall", {}), (run.scores_effective or {}).get("overall", {})
    figures = [("Weighted score", "weighted", None), *[(f"F1 {label}", "f1", t) for t, label in SCORE_COLUMNS.items()]]
    # each figure as wide as its label, wrapping onto a second row when the window is narrow (six equal columns
    # cut "F1 transforms (graph)" to "F1 transfor…" at 1024 px)
    figure_row = st.container(horizontal=True, gap="medium")
    for label, name, t in figures:
        now = scores.get(name, {}).get("point") if t is None else scores.get(name, {}).get(t)
        was = engine_scores.get(name, {}).get("point") if t is None else engine_scores.get(name, {}).get(t)
        figure_row.metric(label, "undefined" if now is None else f"{now:.3f}", width="content",
                          delta=f"{now - was:+.3f} by overrides" if now is not None and was is not None
                          and now != was else None)
    c1, c2, c3 = st.columns(3)
    dataset = c1.selectbox("Dataset", [d.dataset for d in result.datasets], key="details.dataset")
    ds = next(d for d in result.datasets if d.dataset == dataset)
    matcher = ds.transform_matcher or result.provenance.transform_matcher  # format 1.0 kept it per run only
    if matcher.get("status") == "not_run":
        st.info(md(matcher.get("reason", "Transform credit was not run.")), icon="ℹ️")
    table = analyses_table(ds, overrides)
    sort_by = c2.selectbox("Sort analyses by", ["mean score", *SCORE_COLUMNS.values(), "analysis"], key="details.sort")
    statuses = c3.multiselect("Status", sorted(set(table["status"])), default=sorted(set(table["status"])),
                              key="details.status")
    table = table[table["status"].isin(statuses)].sort_values(sort_by, ascending=sort_by == "analysis")
    st.dataframe(table, hide_index=True, width="stretch", key="details.analyses",
                 column_config={c: st.column_config.ProgressColumn(min_value=0, max_value=1, format="%.2f")
                                for c in [*SCORE_COLUMNS.values(), "mean score"]})
    if table.empty:
        return
    key = st.selectbox("Analysis", list(table["analysis"]), key="details.analysis")
    a = next(x for x in ds.analyses if x.key == key)
    sub = submitted.get((dataset, key))

    (st.success if a.status == "ok" else st.error)(md(
        f"Analysis {key}: {a.status}" + (f": {a.message}" if a.message else "")
        + (f" · failure: {a.record.failure.value} — {a.record.failure_message}" if a.record.failure.value else "")))
    left, right = st.columns(2)
    with left:
        st.subheader("The agent's code")
        st.code(sub.analysis.transform_code if sub and sub.analysis else "(no transform code)", language="python")
        st.code(sub.analysis.m_code if sub and sub.analysis else "(no model code)", language="python")
    with right:
        st.subheader("What the converter made of it")
        t = a.record.transform
        st.markdown(f"**Transform:** {md(t.status)}. {md(t.message)}  \n**Agent units:** {t.num_agent_units}")
        st.dataframe(converter_table(a), hide_index=True, width="stretch", key="details.converted")
        if t.column_lineage:
            with st.expander("Column lineage: each column of the final frame → the data columns it comes from"):
                st.dataframe(lineage_table(a), hide_index=True, width="stretch", key="details.lineage")
        st.caption("Ground-truth units it matched")
        st.dataframe(units_table(a), hide_index=True, width="stretch", key="details.units")
        missed = missed_units([(u.id, u.name) for u in ds.counts.units], a)
        with st.expander(f"Ground-truth units missed: {len(missed)} of {len(ds.counts.units)}"):
            st.dataframe(missed, hide_index=True, width="stretch", key="details.missed")
        if a.agent_model:
            st.markdown(f"**Model read from the code:** {md(a.agent_model.specification or '(none)')}  \n"
                        + md(" ".join(a.agent_model.notes)))

    st.subheader("Variables")
    variables = variables_table(dataset, a, overrides, authors)
    st.dataframe(variables, hide_index=True, width="stretch", key="details.variables")
    st.subheader("Models")
    models = models_table(dataset, a, overrides, authors)
    st.dataframe(models, hide_index=True, width="stretch", key="details.models")

    st.subheader("Override a match")
    choices = [("variable", r["item"], f"{'✔' if r['match'] else '✘'} {r['ground truth']} ↔ {r['agent']}")
               for r in variables.to_dict("records")]
    choices += [("model", r["item"], f"{'✔' if r['match'] else '✘'} model: {r['ground-truth model']}")
                for r in models.to_dict("records")]
    choices += [("transform", item, f"{'✔' if hit else '✘'} transform unit {name} by {method}")
                for item, name, method, hit in unit_choices(ds, a)]
    if not choices:
        st.caption("The judge compared nothing in this analysis, so there is no match to override.")
        return
    with st.form(f"override.{state.form_version('override')}"):
        pick = st.selectbox("Item", range(len(choices)), format_func=lambda i: choices[i][2])
        reason = st.text_input("Reason (kept with the run)")
        go = st.form_submit_button("Flip this match", type="primary")
    if go:
        kind, item, label = choices[pick]
        current = label.startswith("✔")
        if context.succeeded(lambda s: add_override(
                session=s, actor=user, run_id=run_id, dataset=dataset, analysis_key=key, kind=kind, item=item,
                value=not current, reason=reason, artifacts=cfg.artifact_store())):
            state.bump_form("override")
            state.flash(f"Override saved: {label[2:]} now counts as {'no match' if current else 'a match'}; the run's "
                        "scores were recomputed.")
            st.rerun()
    if overrides:
        st.caption("Overrides of this run: " + "; ".join(
            f"{o.dataset}/{o.analysis_key} {o.label}: {o.original} → {o.value} by {authors.get(o.author_id, '?')} "
            f"at {o.created_at:%Y-%m-%d %H:%M} UTC ({o.reason})" for o in overrides))

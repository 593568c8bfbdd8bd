"""The hypotheses kind's page component: HMS with its CI and breakdowns, the queries of a run, and per query the
gold and predicted decompositions side by side with the judge's explanations; evaluators judge any facet.

The tables are built by pure functions (``*_table``) so tests can read them; the Streamlit parts are thin."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import streamlit as st

from annotate_app import context, state
from annotate_app.text import md
from curation.models import ScoringRun, User
from curation.services.facet_judgements import judge_facet, viewable_facets
from evaluation.hms import ItemResult
from evaluation.hms.records import LEVEL_SCORES, Decomposition

__all__ = ["breakdown_table", "contexts_table", "decomposition_table", "drilldown", "facets_table",
           "leaderboard_charts", "leaderboard_notes", "queries_table"]

LEVELS = {"A": "A · very similar (1)", "B": "B · similar but more general (0.5)", "C": "C · different (0)"}
_SOURCES = {"given": "Decomposition given (curated gold, or the answer's own fields)",
            "judge": "Decomposed by the judge", "fallback": "The judge's decomposition was unusable: whole text, "
            "context None (as upstream)", "expert": "Not decomposed: judged as a whole by an expert",
            "none": "Not decomposed (judge error)"}


def _value(facet: str, value: Mapping[str, Any]) -> str:
    if facet == "context":
        return "match" if value.get("match") else "no match"
    if facet == "variables":
        return f"{value.get('intersection')} of {value.get('size_gold')} gold, {value.get('size_pred')} predicted"
    return LEVELS.get(str(value.get("level")), str(value.get("level")))


def _f(x: Any) -> str:
    return "—" if x is None else f"{x:.3f}"


def breakdown_table(groups: Mapping[str, Mapping[str, Any]], what: str) -> pd.DataFrame:
    """One row per domain (or question type): HMS with its clustered CI, facet means and counts."""
    return pd.DataFrame([{
        what: name, "HMS": _f(g["hms"].get("point")),
        "95 % CI": "— (one folder)" if g["hms"].get("ci_low") is None
        else f"[{g['hms']['ci_low']:.2f}, {g['hms']['ci_high']:.2f}]",
        "context recall": g.get("context"), "variables F1": g.get("variables_f1"),
        "relationship": g.get("relationship"), "queries": g.get("queries"), "judge errors": g.get("judge_errors"),
        "unanswered": g.get("unanswered")} for name, g in groups.items()])


def queries_table(items: Sequence[ItemResult]) -> pd.DataFrame:
    return pd.DataFrame([{
        "query": i.task, "dataset": i.dataset, "domain": i.domain, "type": i.question_type, "status": i.status,
        "HMS": i.hms, "context recall": i.recall_context, "mean accuracy": i.mean_accuracy,
        "expert judgements": len(i.overrides), "calls": i.calls} for i in items])


def decomposition_table(d: Decomposition | None) -> pd.DataFrame:
    if d is None:
        return pd.DataFrame(columns=["#", "sub-hypothesis", "context", "variables", "relationship"])
    return pd.DataFrame([{"#": n, "sub-hypothesis": s.text, "context": s.context,
                          "variables": ", ".join(s.variables) or "None", "relationship": s.relations}
                         for n, s in enumerate(d.sub_hypo)])


def contexts_table(item: ItemResult) -> pd.DataFrame:
    gold = item.gold.sub_hypo if item.gold else []
    pred = item.predicted.sub_hypo if item.predicted else []

    def ctx(subs: Sequence[Any], n: int) -> str:
        return subs[n].context if n < len(subs) else ""

    return pd.DataFrame([{
        "pair": f"P{c.pred}|G{c.gold}", "predicted context": ctx(pred, c.pred), "gold context": ctx(gold, c.gold),
        "match": {True: "✔ match", False: "✘ no match", None: "not judged"}[c.match], "decided by": c.how,
        "explanation": c.explanation,
        "judge said": "" if c.how != "expert" or c.original is None else ("match" if c.original else "no match")}
        for c in item.contexts])


def facets_table(item: ItemResult) -> pd.DataFrame:
    """The matched pairs' facets (what scores), with the judge's or expert's explanation and the accuracy."""
    rows = []
    for m in item.matched:
        v, r = m.variables, m.relationship
        rows.append({
            "pair": m.key,
            "variables": "not judged" if v is None else (
                f"{v.intersection} of {v.size_gold} gold, {v.size_pred} predicted" if v.intersection is not None
                else "sentinel"),
            "precision": v.precision if v else None, "recall": v.recall if v else None, "F1": v.f1 if v else None,
            "variables by": v.source if v else "", "variables explanation": v.explanation if v else "",
            "relationship": "not judged" if r is None else (LEVELS.get(r.level or "", f"sentinel ({r.score:g})")),
            "relationship by": r.source if r else "", "relationship explanation": r.explanation if r else "",
            "judge said": "; ".join(x for x in (
                f"F1 {v.original_f1:.2f}" if v is not None and v.source == "expert" and v.original_f1 is not None
                else "", f"relationship {r.original_score:g}" if r is not None and r.source == "expert"
                and r.original_score is not None else "") if x),
            "accuracy": m.accuracy})
    return pd.DataFrame(rows)


def _formula(item: ItemResult) -> str:
    if item.status == "unanswered":
        return "Not answered: counts as HMS 0."
    if item.hms is None:
        return f"Judge error: {md(item.message)}"
    n_pred = len(item.predicted.sub_hypo) if item.predicted else 0
    n_gold = len(item.gold.sub_hypo) if item.gold else 0
    accs = " + ".join(_f(m.accuracy) for m in item.matched) or "0"
    return (f"HMS = context recall {len(item.matched)}/{n_gold} × mean accuracy (({accs}) / {n_pred} predicted) "
            f"= {_f(item.recall_context)} × {_f(item.mean_accuracy)} = **{_f(item.hms)}**")


# ------------------------------------------------------------------------------------ leaderboard hooks


def leaderboard_notes(rows: Sequence[dict[str, Any]]) -> None:
    errors = sum(r.get("judge_errors") or 0 for r in rows)
    if errors:
        st.info(f"{errors} queries across these runs are judge errors: the judge's answer could not be read or the "
                "endpoint failed. They are left out of HMS (never scored 0 or negative); an evaluator can judge "
                "them on Run details.")
    st.caption("HMS intervals are 95 % bootstrap intervals resampling whole dataset folders (queries of one folder "
               "are not independent).")


def leaderboard_charts(rows: Sequence[dict[str, Any]], container: Any) -> None:
    import plotly.graph_objects as go

    from annotate_app.components.score_charts import run_label

    labels = [run_label(r) for r in rows]
    points = [r.get("hms") for r in rows]
    hi = [None if r.get("hms.high") is None else r["hms.high"] - r["hms"] for r in rows]
    lo = [None if r.get("hms.low") is None else r["hms"] - r["hms.low"] for r in rows]
    fig = go.Figure(go.Bar(x=labels, y=points, error_y={"type": "data", "array": hi, "arrayminus": lo}))
    fig.update_layout(title="HMS per run (95 % CI, clustered by dataset folder)", yaxis_range=[0, 1], height=320)
    container.plotly_chart(fig, key="leaderboard.hms")


# ------------------------------------------------------------------------------------ drill-down


def drilldown(run: ScoringRun, user: User, cfg: Any) -> None:
    """Run → query for one succeeded hypotheses run, with expert facet judgements."""
    run_id = run.id
    loaded = context.attempt(lambda s: viewable_facets(session=s, actor=user, run_id=run_id,
                                                       artifacts=cfg.artifact_store()))
    if loaded is None:
        return
    result, withheld = loaded
    for name, why in withheld.items():
        st.info(md(f"Dataset {name} is left out of these details: {why}"), icon="🙈")
    scores, engine = result.scores["overall"], (run.scores or {}).get("overall", {})
    now, was = scores["hms"].get("point"), (engine.get("hms") or {}).get("point")
    row = st.container(horizontal=True, gap="medium")
    row.metric("HMS", _f(now), width="content",
               delta=f"{now - was:+.3f} by experts" if now is not None and was is not None and now != was else None)
    ci = scores["hms"]
    row.metric("95 % CI (by folder)", "—" if ci.get("ci_low") is None else f"[{ci['ci_low']:.2f}, "
               f"{ci['ci_high']:.2f}]", width="content")
    for label, key in (("context recall", "context"), ("variables F1", "variables_f1"),
                       ("relationship", "relationship")):
        row.metric(label, _f(scores.get(key)), width="content")
    row.metric("judge errors", scores.get("judge_errors", 0), width="content")
    row.metric("unanswered", scores.get("unanswered", 0), width="content")
    st.caption(f"Judge {result.judge.get('name')} · {result.judge.get('model')} · mode {result.mode} · "
               f"{result.scores.get('calls', 0)} judge calls" + "".join(f" · {n}" for n in result.notes))
    by_domain, by_type = st.tabs(["By domain", "By question type"])
    numbers = {c: st.column_config.NumberColumn(format="%.2f")
               for c in ("context recall", "variables F1", "relationship")}
    by_domain.dataframe(breakdown_table(result.scores["domains"], "domain"), hide_index=True, width="stretch",
                        key="hms.domains", column_config=numbers)
    by_type.dataframe(breakdown_table(result.scores["question_types"], "question type"), hide_index=True,
                      width="stretch", key="hms.types", column_config=numbers)
    if not result.items:
        return
    table = queries_table(result.items)
    statuses = st.multiselect("Status", sorted(set(table["status"])), default=sorted(set(table["status"])),
                              key="hms.status")
    table = table[table["status"].isin(statuses)]
    st.dataframe(table, hide_index=True, width="stretch", key="hms.queries",
                 column_config={c: st.column_config.ProgressColumn(min_value=0, max_value=1, format="%.2f")
                                for c in ("HMS", "context recall", "mean accuracy")})
    if table.empty:
        return
    key = st.selectbox("Query", list(table["query"]), key="hms.query")
    item = next(i for i in result.items if i.task == key)
    _query(item, run_id, user, cfg)


def _query(item: ItemResult, run_id: int | None, user: User, cfg: Any) -> None:
    st.markdown(f"**Question:** {md(item.question)}  \n{_formula(item)}")
    if item.status == "judge_error":
        st.error(md(item.message), icon="⚠️")
    gold_col, pred_col = st.columns(2)
    with gold_col:
        st.subheader("Gold")
        st.markdown(md(item.gold_hypothesis))
        if item.gold_workflow:
            with st.expander("Gold workflow"):
                st.markdown(md(item.gold_workflow))
        st.caption(_SOURCES[item.gold.source if item.gold else "none"])
        st.dataframe(decomposition_table(item.gold), hide_index=True, width="stretch", key="hms.gold")
    with pred_col:
        st.subheader("Predicted")
        st.markdown(md(item.predicted_hypothesis or "(not answered)"))
        if item.predicted_workflow:
            with st.expander("Predicted workflow"):
                st.markdown(md(item.predicted_workflow))
        st.caption(_SOURCES[item.predicted.source if item.predicted else "none"]
                   + (f" · {item.predicted.note}" if item.predicted and item.predicted.note else ""))
        st.dataframe(decomposition_table(item.predicted), hide_index=True, width="stretch", key="hms.pred")
    st.subheader("Context matching")
    st.dataframe(contexts_table(item), hide_index=True, width="stretch", key="hms.contexts")
    st.subheader("Matched pairs: variables and relationship")
    facets = facets_table(item)
    if facets.empty:
        st.caption("No pair matched on context, so nothing else was judged.")
    else:
        st.dataframe(facets, hide_index=True, width="stretch", key="hms.facets",
                     column_config={c: st.column_config.NumberColumn(format="%.2f")
                                    for c in ("precision", "recall", "F1", "accuracy")})
    if item.expression is not None:
        e = item.expression
        (st.success if e.status == "passed" else st.warning)(md(
            f"Generating expression check ({e.status}): {e.message}"), icon="🧮")
    if item.llm:
        with st.expander(f"Judge calls ({item.calls} sent, {item.cache_hits} from the cache)"):
            st.dataframe(pd.DataFrame(item.llm)[["step", "template", "model", "cached", "attempts", "cache_key"]],
                         hide_index=True, width="stretch", key="hms.llm")
    if item.overrides:
        st.caption(md("Expert judgements: " + "; ".join(
            f"{o['facet']} of {o['pair']}: {_value(o['facet'], o['value'])} by {o.get('author') or '?'} "
            f"({o.get('reason', '')})" for o in item.overrides)))
    if item.status != "unanswered":
        _judge_form(item, run_id, user, cfg)


def _judge_form(item: ItemResult, run_id: int | None, user: User, cfg: Any) -> None:
    st.subheader("Judge a facet")
    n_pred = len(item.predicted.sub_hypo) if item.predicted else 1
    n_gold = len(item.gold.sub_hypo) if item.gold else 1
    pairs = [f"P{i}|G{j}" for i in range(n_pred) for j in range(n_gold)]
    c1, c2 = st.columns(2)
    pair = c1.selectbox("Pair (predicted | gold sub-hypothesis)", pairs, key="hms.judge.pair")
    facet = c2.selectbox("Facet", ["context", "variables", "relationship"], key="hms.judge.facet")
    with st.form(f"hms.judge.{state.form_version('hms.judge')}"):
        value: dict[str, Any]
        if facet == "context":
            value = {"match": st.radio("Do the contexts match?", ["match", "no match"], horizontal=True) == "match"}
        elif facet == "variables":
            a, b, n = st.columns(3)
            value = {"size_gold": a.number_input("gold variables", 0, 100, 1),
                     "size_pred": b.number_input("predicted variables", 0, 100, 1),
                     "intersection": n.number_input("of which match", 0, 100, 1)}
        else:
            value = {"level": st.radio("Relationship", list(LEVEL_SCORES), horizontal=True,
                                       format_func=lambda x: LEVELS[x])}
        reason = st.text_input("Reason (kept with the run)")
        go = st.form_submit_button("Record my judgement", type="primary")
    if go:
        out = context.attempt(lambda s: judge_facet(session=s, actor=user, run_id=run_id or 0, task_key=item.task,
                                                    pair=pair, facet=facet, value=value, reason=reason,
                                                    artifacts=cfg.artifact_store()))
        if out is not None:
            state.bump_form("hms.judge")
            state.flash(f"Judgement saved ({out.description}); "
                        + ("the run's scores were recomputed." if out.override else "it agrees with the judge."))
            st.rerun()

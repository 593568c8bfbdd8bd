"""Paired comparison of two runs on the same release: F1 differences with paired bootstrap intervals, and the
items one run matched that the other did not."""

import pandas as pd
import streamlit as st

from annotate_app import context
from annotate_app.components.score_charts import DECISION_LABELS, difference_figure, difference_table
from curation.models import Role, RunStatus
from curation.services.leaderboard import compare_run_results
from curation.services.scoring import kind_of, list_runs

user = context.require_user(Role.EVALUATOR, Role.CURATOR, Role.ADMIN)
cfg = context.settings()
st.title("🆚 Compare two runs")
runs = [r for r in context.attempt(lambda s: list_runs(session=s, actor=user)) or []
        if r.status == RunStatus.SUCCEEDED.value and kind_of(r.kind).accepts_overrides]
if len(runs) < 2:
    st.info("Score at least two runs on the same release to compare them.")
    st.stop()


def _label(i):
    return next(f"#{r.id} {r.agent} · {r.model_name or '-'} · release {r.release_version} · {r.mode}"
                for r in runs if r.id == i)


ids = [r.id for r in runs]
c1, c2 = st.columns(2)
a = c1.selectbox("Run A", ids, index=0, format_func=_label, key="compare.a")
b = c2.selectbox("Run B", ids, index=1, format_func=_label, key="compare.b")
if a == b:
    st.info("Choose two different runs.")
    st.stop()
cmp = context.attempt(lambda s: compare_run_results(session=s, actor=user, run_a=a, run_b=b,
                                                    artifacts=cfg.artifact_store()))
if cmp is None:
    st.stop()
for note in cmp.notes:
    st.warning(note)
scope = st.selectbox("Dataset", ["all", *cmp.datasets], key="compare.dataset",
                     format_func=lambda d: "mean over the datasets" if d == "all" else d)
rows = [d.model_dump() for d in cmp.differences if d.dataset == scope]
st.plotly_chart(difference_figure(rows), key="compare.chart")
st.dataframe(difference_table(rows), hide_index=True, width="stretch", key="compare.table")
st.caption("— : undefined (no ground-truth item of that type to match, or too few analyses to resample).")
st.subheader("Matched by one run only")
items = [i for i in cmp.items if scope in ("all", i.dataset) and (i.only_a or i.only_b)]
if not items:
    st.caption("Both runs matched the same ground-truth items.")
st.dataframe(pd.DataFrame([{"dataset": i.dataset, "decision type": DECISION_LABELS[i.decision_type],
                            "only A": "; ".join(i.only_a), "only B": "; ".join(i.only_b)} for i in items],
                          columns=["dataset", "decision type", "only A", "only B"]), hide_index=True,
             width="stretch", key="compare.items")

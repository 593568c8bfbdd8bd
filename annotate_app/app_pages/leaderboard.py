"""Leaderboard per release: agents × decision types with bootstrap intervals, filters, charts and export."""

import json

import pandas as pd
import streamlit as st

from annotate_app import context, state
from annotate_app.components.judge_card import judge_card
from annotate_app.components.score_charts import (
    DECISION_LABELS,
    DECISION_TYPES,
    f1_figure,
    run_label,
    weighted_figure,
)
from curation.models import Role
from curation.services.judge_validation import agreement_card
from curation.services.leaderboard import leaderboard, leaderboard_csv
from curation.services.scoring import scorable_releases

user = context.require_user(Role.EVALUATOR, Role.CURATOR, Role.ADMIN)
cfg = context.settings()
st.title("🏆 Leaderboard")

records = context.attempt(lambda s: scorable_releases(session=s, actor=user)) or []
if not records:
    st.info("There is no release yet, so nothing has been scored.")
    st.stop()
c1, c2 = st.columns(2)
c3 = c4 = st.container(horizontal=True, gap="medium")  # the toggles' labels in full, on their own row at 1024 px
version = c1.selectbox("Release", [r.version for r in records], key="leaderboard.release")
record = next(r for r in records if r.version == version)
dataset = c2.selectbox("Dataset", ["all datasets", *sorted(record.summary)], key="leaderboard.dataset")
official_only = c3.toggle("Official runs only", key="leaderboard.official")
include_older = c4.toggle("Include runs on older releases", key="leaderboard.older",
                          help="Their numbers stay as scored, labelled with their release; stale where the ground "
                               "truth changed since")
rows = context.attempt(lambda s: leaderboard(
    session=s, actor=user, release_version=version, releases_root=cfg.releases_store,
    dataset=None if dataset == "all datasets" else dataset, official_only=official_only,
    include_older=include_older))
if rows is None:
    st.stop()
if not rows:
    st.info(f"No succeeded run on release {version}{'' if dataset == 'all datasets' else f' for {dataset}'} yet. "
            "Score one on the Scoring runs page.")
    st.stop()


def _ci(v, lo, hi) -> str:
    if v is None:
        return "undefined"
    return f"{v:.2f} [{lo:.2f}, {hi:.2f}]" if lo is not None and hi is not None else f"{v:.2f}"


table = pd.DataFrame([{
    "run": run_label(r), "release": r["release"], "official": r["official"],
    "overrides": f"✎ {r['overrides']}" if r["overrides"] else "", "weighted": _ci(r["weighted"], r["weighted.low"],
                                                                                 r["weighted.high"]),
    **{f"F1 {DECISION_LABELS[t]}": _ci(r[f"f1.{t}"], r[f"f1.{t}.low"], r[f"f1.{t}.high"]) for t in DECISION_TYPES},
    **{f"precision {DECISION_LABELS[t]}": r[f"precision.{t}"] for t in DECISION_TYPES},
    **{f"coverage@k {DECISION_LABELS[t]}": r[f"coverage.{t}"] for t in DECISION_TYPES},
    "MCQ accuracy": r["mcq_accuracy"], "failures": r["failures"], "judge": r["judge"], "mode": r["mode"],
    "analyses": r["analyses"], "stale": r["stale"]} for r in rows])
st.dataframe(table, hide_index=True, width="stretch", key="leaderboard.table",
             column_config={c: st.column_config.NumberColumn(format="%.2f") for c in table.columns
                            if c.startswith(("precision", "coverage", "MCQ"))})
stale = [r for r in rows if r["stale"]]
for r in stale:
    st.warning(f"{run_label(r)}: {r['stale']}", icon="⏳")
unscored = [r for r in rows if not r["transforms_scored"]]
if unscored:
    st.info(f"Transforms were not scored for {len(unscored)} of these runs, on every dataset or on some (their "
            "value and graph F1 are 0 there): the ground-truth build was not available when they were scored. Run "
            "details say which datasets and why.")
if any(r["overrides"] for r in rows):
    st.caption("✎ n: the run's scores include n human overrides (see Run details for who, why and the original).")

left, right = st.columns([3, 1])
left.plotly_chart(f1_figure(rows), key="leaderboard.f1")
left.plotly_chart(weighted_figure(rows), key="leaderboard.weighted")
with right:
    judge_card(context.attempt(lambda s: agreement_card(session=s, actor=user)) or [], key="leaderboard.card",
               charts=False)

c1, c2, c3 = st.columns(3)
name = f"leaderboard-{version}{'' if dataset == 'all datasets' else '-' + dataset}"
c1.download_button("⬇ CSV", leaderboard_csv(rows), file_name=f"{name}.csv", mime="text/csv", key="leaderboard.csv")
c2.download_button("⬇ JSON", json.dumps(rows, indent=2), file_name=f"{name}.json", mime="application/json",
                   key="leaderboard.json")
pick = c3.selectbox("Drill into run", [r["run"] for r in rows], key="leaderboard.pick",
                    format_func=lambda i: next(run_label(r) for r in rows if r["run"] == i))
if c3.button("Open run details", key="leaderboard.open"):
    state.choose_run(pick)
    st.switch_page("app_pages/run_details.py")

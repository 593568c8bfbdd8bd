"""Leaderboard per release: agents × decision types with bootstrap intervals, filters, charts and export."""

import json

import streamlit as st

from annotate_app import context, state
from annotate_app.components.judge_card import kind_judge_card
from annotate_app.components.kinds import column_config, leaderboard_frame, view_module
from annotate_app.components.release_choice import scorable_releases_or_stop
from annotate_app.components.score_charts import run_label
from curation.models import Role
from curation.services.leaderboard import leaderboard, leaderboard_columns, leaderboard_csv
from curation.services.scoring import ranked_kinds

user = context.require_user(Role.EVALUATOR, Role.CURATOR, Role.ADMIN)
cfg = context.settings()
st.title("🏆 Leaderboard")

records = scorable_releases_or_stop(user, "There is no release yet, so nothing has been scored.")
c1, c2 = st.columns(2)
c3 = c4 = st.container(horizontal=True, gap="medium")  # the toggles' labels in full, on their own row at 1024 px
version = c1.selectbox("Release", [r.version for r in records], key="leaderboard.release")
record = next(r for r in records if r.version == version)
dataset = c2.selectbox("Dataset", ["all datasets", *sorted(record.summary)], key="leaderboard.dataset")
official_only = c3.toggle("Official runs only", key="leaderboard.official")
include_older = c4.toggle("Include runs on older releases", key="leaderboard.older",
                          help="Their numbers stay as scored, labelled with their release; stale where the ground "
                               "truth changed since")
ranked = {k.name: k for k in ranked_kinds()}
kind = ranked[next(iter(ranked)) if len(ranked) == 1 else st.selectbox(
    "Kind of task", list(ranked), key="leaderboard.kind", format_func=lambda n: ranked[n].label.split(" (")[0])]
view = view_module(kind.view) if kind.view else None  # its notes and charts
rows = context.attempt(lambda s: leaderboard(
    session=s, actor=user, release_version=version, artifacts=cfg.artifact_store(),
    dataset=None if dataset == "all datasets" else dataset, official_only=official_only,
    include_older=include_older, kind=kind.name))
if rows is None:
    st.stop()
if not rows:
    other = " Pick another kind of task above, or score" if len(ranked) > 1 else " Score"
    st.info(f"No succeeded run on release {version}{'' if dataset == 'all datasets' else f' for {dataset}'} yet"
            + (f" of this kind ({kind.label.split(' (')[0]})." if len(ranked) > 1 else ".")
            + f"{other} one on the Scoring runs page.")
    st.stop()

columns = leaderboard_columns(rows, kind=kind.name)
table = leaderboard_frame(rows, columns)
st.dataframe(table, hide_index=True, width="stretch", key="leaderboard.table", column_config=column_config(columns))
stale = [r for r in rows if r["stale"]]
for r in stale:
    st.warning(f"{run_label(r)}: {r['stale']}", icon="⏳")
if view is not None:
    view.leaderboard_notes(rows)
if any(r["overrides"] for r in rows):
    st.caption("✎ n: the run's scores include n human overrides (see Run details for who, why and the original).")

left, right = st.columns([3, 1])
if view is not None:
    view.leaderboard_charts(rows, left)
if kind.uses_judge:  # a kind scored without a judge has no judge to validate
    with right:
        # a kind whose judge's verdict has facets shows that judge's validation card, per facet
        kind_judge_card(kind, user, key="leaderboard.card", charts=False)

c1, c2, c3 = st.columns(3)
name = f"leaderboard-{version}{'' if dataset == 'all datasets' else '-' + dataset}"
c1.download_button("⬇ CSV", leaderboard_csv(rows), file_name=f"{name}.csv", mime="text/csv", key="leaderboard.csv",
                   on_click="ignore")
c2.download_button("⬇ JSON", json.dumps(rows, indent=2), file_name=f"{name}.json", mime="application/json",
                   key="leaderboard.json", on_click="ignore")
pick = c3.selectbox("Drill into run", [r["run"] for r in rows], key="leaderboard.pick",
                    format_func=lambda i: next(run_label(r) for r in rows if r["run"] == i))
if c3.button("Open run details", key="leaderboard.open"):
    state.choose_run(pick)
    st.switch_page("app_pages/run_details.py")

"""Progress of stage 1: curators and admins see everyone; analysts see their own work and team counts."""

import pandas as pd
import streamlit as st

from annotate_app import context
from annotate_app.components.charts import progress_figure, progress_table, team_figure, team_table
from curation.services.progress import progress_overview
from curation.services.stages import STAGE_LABELS, review_overview

user = context.require_user()
st.title("📊 Stage-1 progress")

progress = context.attempt(lambda s: progress_overview(session=s, actor=user))
if progress is None:
    st.stop()

rows = pd.DataFrame([r.model_dump() for r in progress.rows],
                    columns=["dataset", "annotator", "status", "variables", "transforms", "models", "submitted_at"])
team = pd.DataFrame([t.model_dump() for t in progress.team])

if not progress.sees_everyone:
    st.subheader("Your work")
    if rows.empty:
        st.info("You are not assigned to any dataset yet; an admin assigns analysts to datasets.")
else:
    st.subheader("Every analyst")
if not rows.empty:
    st.plotly_chart(progress_figure(rows), width="stretch", key="progress_chart")
    st.dataframe(progress_table(rows), hide_index=True, width="stretch")

st.subheader("Team")
if team.empty:
    st.caption("No datasets with assigned analysts yet.")
else:
    st.plotly_chart(team_figure(team), width="stretch", key="team_chart")
    st.dataframe(team_table(team), hide_index=True, width="stretch")

st.subheader("Stages")
stages = context.attempt(lambda s: review_overview(session=s, actor=user)) or []
if stages:
    st.dataframe(pd.DataFrame([{"dataset": d.name, "stage": STAGE_LABELS[r.stage]} for d, r in stages]),
                 hide_index=True, width="stretch")
else:
    st.caption("No datasets yet.")

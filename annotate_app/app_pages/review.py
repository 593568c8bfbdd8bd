"""Stage 2: work through everything to judge on a dataset, vote with reasons, and watch agreement. The kind that
curates the dataset draws its queue and agreement."""

import streamlit as st

from annotate_app import context, state
from annotate_app.components.kinds import stage_component
from annotate_app.components.stage_controls import render_stage_controls
from curation.models import Role, Stage
from curation.services.stages import STAGE_LABELS, review_overview

user = context.require_user()
st.title("⚖️ Review (stage 2)")

overview = context.attempt(lambda s: review_overview(session=s, actor=user)) or []
if user.role in (Role.CURATOR.value, Role.ADMIN.value) and overview:
    render_stage_controls(user, overview)
open_ = {d.id: d for d, r in overview if r.stage != Stage.ANNOTATE.value}
stages = {d.id: r.stage for d, r in overview}
if not open_:
    st.info("No dataset is in stage 2 yet: the curator opens it once analysts have submitted stage 1.")
    st.stop()
previous = state.get(state.REVIEW_DATASET_ID)
dataset_id = st.selectbox("Dataset", list(open_), key="review.dataset",
                          format_func=lambda i: f"{open_[i].name} · {STAGE_LABELS[stages[i]]}",
                          index=list(open_).index(previous) if previous in open_ else 0)
if dataset_id != previous:
    state.put(state.REVIEW_DATASET_ID, dataset_id)
    state.put(state.REVIEW_PAGE, 1)

component = context.attempt(lambda s: stage_component(s, open_[dataset_id]))
if component is None:
    st.stop()
if isinstance(component, str):
    st.info(component)
    st.stop()
component.review(user, open_[dataset_id], stages[dataset_id])

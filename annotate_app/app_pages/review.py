"""Stage 2: work through everything to judge on a dataset, vote with reasons, and watch agreement."""

import streamlit as st

from annotate_app import context, state
from annotate_app.components.hypothesis_review import render_hypothesis_queue
from annotate_app.components.llm_panel import HYPOTHESIS_JOB, render_llm_panel
from annotate_app.components.review_tabs import render_agreement, render_queue
from annotate_app.components.stage_controls import render_stage_controls
from curation.models import Role, Stage
from curation.services.hypotheses import hypothesis_review, is_hypothesis_dataset
from curation.services.review_queue import review_queue
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

if context.attempt(lambda s: is_hypothesis_dataset(s, open_[dataset_id])):  # DiscoveryBench: hypotheses per query
    hyp = context.attempt(lambda s: hypothesis_review(session=s, actor=user, dataset_id=dataset_id))
    if hyp is None:
        st.stop()
    if user.role in (Role.CURATOR.value, Role.ADMIN.value) and hyp.stage == Stage.REVIEW.value:
        render_llm_panel(user, dataset_id, open_[dataset_id].name, HYPOTHESIS_JOB)
    tabs = st.tabs(["Queue", "Agreement"], key="review.tab", on_change="rerun")
    with tabs[0]:
        if tabs[0].open is not False:
            render_hypothesis_queue(user, hyp)
    with tabs[1]:
        if tabs[1].open:
            render_agreement(user, dataset_id, {i.target_id: i.label for i in hyp.items},
                             live=hyp.stage == Stage.REVIEW.value)
    st.stop()

queue = context.attempt(lambda s: review_queue(session=s, actor=user, dataset_id=dataset_id))
if queue is None:  # refused (a curator still annotating it is blind to it, too), with the reason shown
    st.stop()
if user.role in (Role.CURATOR.value, Role.ADMIN.value) and stages[dataset_id] == Stage.REVIEW.value:
    render_llm_panel(user, dataset_id, open_[dataset_id].name)

tabs = st.tabs(["Queue", "Agreement"], key="review.tab", on_change="rerun")
# Only the open tab is computed: every vote reruns the page, and agreement need not be recomputed for it.
with tabs[0]:
    if tabs[0].open is not False:
        render_queue(user, queue)
with tabs[1]:
    if tabs[1].open:
        render_agreement(user, dataset_id, {i.target_id: i.label for i in queue.items},
                         live=queue.stage == Stage.REVIEW.value)

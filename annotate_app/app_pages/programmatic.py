"""Programmatic checks: ground truth for DataSciBench-style tasks with experts in the loop. Curators have an LLM
propose candidate artifacts (by self-consistency) and checks; analysts verify, edit and vote in stage 2; the
release gate shows each check passing on the accepted artifacts and failing on a known wrong output."""

import streamlit as st

from annotate_app import context
from annotate_app.components.programmatic_generation import render_generate
from annotate_app.components.programmatic_review import render_artifact, render_check, render_propose_check
from curation.models import Role, Stage
from curation.services.programmatic import list_programmatic_tasks
from curation.services.stages import STAGE_LABELS, review_overview

user = context.require_user(Role.ANALYST, Role.CURATOR, Role.ADMIN)
cfg = context.settings()
st.title("🧮 Programmatic checks")
st.caption("A check is released once it is voted justifiable and the release gate has shown it passing on the "
           "accepted artifacts and failing on a known wrong output.")
overview = context.attempt(lambda s: review_overview(session=s, actor=user)) or []
datasets = {d.id: (d, r.stage) for d, r in overview}
if not datasets:
    st.info("You have no dataset assigned yet.")
    st.stop()
dataset_id = st.selectbox("Dataset", list(datasets), key="prog.dataset",
                          format_func=lambda i: f"{datasets[i][0].name} · {STAGE_LABELS[datasets[i][1]]}")
staff = user.role in (Role.CURATOR.value, Role.ADMIN.value)
views = context.attempt(lambda s: list_programmatic_tasks(session=s, actor=user, dataset_id=dataset_id,
                                                           review=not staff))
if views is None:
    st.stop()
if not views:
    st.info(f"{datasets[dataset_id][0].name} has no programmatic task. Import one with "
            "`forkpaths checks import-datascibench ROOT --dataset NAME`.")
    st.stop()
keys = [v.task.key for v in views]
key = st.selectbox("Task", keys, key="prog.task")
view = next(v for v in views if v.task.key == key)
voting = datasets[dataset_id][1] == Stage.REVIEW.value and not staff  # analysts vote; curators run the gate
st.markdown(f"**Prompt.** {view.task.prompt}")
st.caption(f"Input files: {', '.join(view.task.input_files) or 'none'} · "
           f"{sum(c.released for c in view.checks)} of {len(view.checks)} checks released · "
           f"{sum(a.status == 'justifiable' for a in view.artifacts)} of {len(view.artifacts)} artifacts accepted")
if staff:
    render_generate(user, view, cfg)
st.subheader("Ground-truth artifacts")
if not view.artifacts:
    st.caption("None yet: the LLM generation proposes the outputs its samples agree on"
               + ("." if staff else " (a curator starts it)."))
for a in view.artifacts:
    render_artifact(user, a, voting)
st.subheader("Checks")
if not view.checks:
    st.caption("None yet: propose one below" + (", or have the LLM propose some above." if staff else "."))
for c in view.checks:
    render_check(user, view, c, voting, staff)
render_propose_check(user, view)

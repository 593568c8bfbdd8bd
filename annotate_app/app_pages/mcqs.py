"""MCQs (curators and admins): generate them from the ground truth, audit them, review them as a taker sees them."""

import streamlit as st

from annotate_app import context, state
from annotate_app.components.mcq_view import render_mcq
from annotate_app.text import md
from curation.models import Role, Stage
from curation.services.blinding import blind_datasets
from curation.services.datasets import list_datasets
from curation.services.mcq_audit import MCQS_BLIND, audit_mcqs
from curation.services.mcq_generate import MCQSettings, generate_mcqs
from curation.services.mcq_review import mcq_views
from curation.services.stages import get_review_settings

user = context.require_user(Role.CURATOR, Role.ADMIN)
st.title("❓ MCQs")
st.caption("Multiple-choice questions built from the ground-truth statuses (BLADE's kinds). Contested items are "
           "never used; every option records where it came from and why it is the key or a distractor.")
datasets = {d.id: d for d in (context.attempt(lambda s: list_datasets(session=s, actor=user)) or [])}
if not datasets:
    st.info("No datasets yet.")
    st.stop()
previous = state.get(state.MCQ_DATASET_ID)
dataset_id = st.selectbox("Dataset", list(datasets), format_func=lambda i: datasets[i].name, key="mcq.dataset",
                          index=list(datasets).index(previous) if previous in datasets else 0)
state.put(state.MCQ_DATASET_ID, dataset_id)
dataset = datasets[dataset_id]
stage = context.attempt(lambda s: get_review_settings(session=s, dataset_id=dataset_id).stage)
if stage == Stage.REVIEW.value:
    st.info(md(f"Stage 2 of {dataset.name} is still open: votes, and so the statuses MCQs are built from, may "
               "still change. Generate again once it is closed (reviewed MCQs are kept)."), icon="🗳️")
# MCQs are built from peers' stage-1 decisions: a viewer blind to them is told so once, and shown nothing else
blind = context.attempt(lambda s: blind_datasets(session=s, actor=user, names=[dataset.name])) or {}
if dataset.name in blind:
    st.warning(md(f"{blind[dataset.name]} {MCQS_BLIND} The MCQs of {dataset.name} are hidden from you until then."),
               icon="🙈")
    st.stop()

with st.form("mcq.generate"):
    c1, c2 = st.columns([1, 3])
    seed = c1.number_input("Seed", min_value=0, value=0, step=1)
    c2.markdown("Generating again replaces only the generated MCQs no curator has reviewed yet. Reviewed ones and "
                "imported ones (such as BLADE's, reviewed or not) are always kept: new MCQs are added beside "
                "imported ones, even on the same concept; reject the ones you do not want.")
    go = st.form_submit_button("Generate MCQs", type="primary")
if go:
    report = context.attempt(lambda s: generate_mcqs(session=s, actor=user, dataset_id=dataset_id,
                                                     settings=MCQSettings(seed=int(seed))))
    if report is not None:
        counts = ", ".join(f"{n} {k}" for k, n in report.counts().items())
        state.flash(f"{len(report.mcqs)} MCQs generated with seed {report.seed} ({counts}).")
        st.rerun()

audit = context.attempt(lambda s: audit_mcqs(session=s, actor=user, dataset_id=dataset_id))
if audit is not None and audit.total:
    st.markdown(f"**Audit** (rule `{audit.rule}`): {audit.total} MCQs, {audit.checked} checked against the votes, "
                f"{audit.unlinked_keys} with a key matching no judged item, **{audit.flagged} flagged**"
                + (" — " + ", ".join(f"{k}: {v}" for k, v in audit.flag_counts().items()) if audit.flagged else ""))
show = st.segmented_control("Show", ["all", "flagged", "pending", "accepted", "edited", "rejected"], default="all",
                            key="mcq.filter")
views = everything = context.attempt(lambda s: mcq_views(session=s, actor=user, dataset_id=dataset_id)) or []
if show == "flagged":
    views = [v for v in views if v.findings]
elif show not in (None, "all"):
    views = [v for v in views if v.review == show]
if not views:
    st.info(f"No MCQ matches the filter '{show}' ({len(everything)} in all)." if everything else
            "No MCQs yet: generate them above (they need justifiable and unjustifiable items).")
    st.stop()
per_page = 10
pages = (len(views) + per_page - 1) // per_page
page = st.number_input(f"Page (of {pages})", min_value=1, max_value=pages, value=1, key="mcq.page") if pages > 1 else 1
for n, view in enumerate(views[(page - 1) * per_page: page * per_page], start=(page - 1) * per_page + 1):
    render_mcq(user, view, dataset, n)

"""Judge validation: sample the judge's decisions, label them blind as an expert, see the agreement."""

import streamlit as st

from annotate_app import context
from annotate_app.components.judge_card import judge_card, kind_judge_card
from annotate_app.text import md
from curation.models import Role, RunStatus
from curation.services.judge_validation import (
    agreement_card,
    label_decision,
    next_to_label,
    queue_counts,
    sample_judge_decisions,
)
from curation.services.scoring import kind_of, list_runs
from evaluation.tasks import kinds_with

user = context.require_user(Role.EVALUATOR, Role.CURATOR, Role.ADMIN)
cfg = context.settings()
st.title("⚖️ Judge validation")
st.caption("Do the automatic judges agree with experts? Sample decisions from a run, label them without seeing "
           "the judge's answer, and compare: percent agreement, Cohen's κ and the confusion matrix per judge.")

runs = [r for r in context.attempt(lambda s: list_runs(session=s, actor=user)) or []
        if r.status == RunStatus.SUCCEEDED.value and kind_of(r.kind).uses_judge]
if runs:
    c1, c2, c3 = st.columns([4, 2, 3], vertical_alignment="bottom")  # [3, 1, 1] cut "Add to queue" at 1024 px
    run_id = c1.selectbox("Sample from run", [r.id for r in runs], key="judge.run",
                          format_func=lambda i: next(f"#{r.id} {r.agent} · {r.judge.get('name')} judge"
                                                     for r in runs if r.id == i))
    n = c2.number_input("Decisions", min_value=1, max_value=500, value=20, key="judge.n")
    if c3.button("Add to queue", key="judge.sample"):
        added = context.attempt(lambda s: sample_judge_decisions(session=s, actor=user, run_id=run_id, n=int(n),
                                                                 artifacts=cfg.artifact_store()))
        if added is not None:
            st.success(f"{added} decision(s) added to the queue." if added else
                       "Every decision of this run is already in the queue.")

counts = context.attempt(lambda s: queue_counts(session=s, actor=user)) or (0, 0)
item = context.attempt(lambda s: next_to_label(session=s, actor=user))
st.subheader(f"Label ({counts[0]} labelled, {counts[1]} waiting)")
if item is None:
    st.info("The queue is empty." if runs else "Score a run first; its judge decisions can then be sampled.")
else:
    with st.container(border=True):
        st.markdown(f"Does the agent's {item.kind} match the ground truth's? (dataset {md(item.dataset)}, analysis "
                    f"{md(item.analysis_key)})")
        st.markdown(f"- **Ground truth:** {md(item.ground_truth)}\n- **Agent:** {md(item.agent or '(not read)')}")
        c1, c2, _ = st.columns([1, 1, 3])
        for column, value, label in [(c1, True, "✔ They match"), (c2, False, "✘ They do not match")]:
            if column.button(label, key=f"judge.label.{value}") and context.succeeded(
                    lambda s, v=value: label_decision(session=s, actor=user, label_id=item.id or 0, value=v)):
                st.rerun()

reports = context.attempt(lambda s: agreement_card(session=s, actor=user)) or []
judge_card(reports, key="judge.card", title="Judge validation: sampled decisions",
           empty="No sampled decision is labelled yet: " + (
               "sample decisions from a run at the top of this page and label them." if runs else
               "no run scored with a judge has succeeded yet, so there is none to sample."))
# a kind whose judge's verdict has facets (experts judge them on Run details) has its labels here too, the same
# card the leaderboard shows for it
for kind in kinds_with("facet_judging"):
    kind_judge_card(kind, user, key=f"judge.card.{kind.name}", title=f"Judge validation: {kind.label}", shared=False)

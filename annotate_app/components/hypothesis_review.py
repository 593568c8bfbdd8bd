"""Stage 2 of a DiscoveryBench dataset on the Review page: per query, every hypothesis to judge (peers' and
the LLM's, source-blind unless the curator shows it) with its decomposition, workflow and code output, and the
reviewer's vote (justifiable / unjustifiable, with the reason), saved in one transaction per click."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from annotate_app import context, state
from annotate_app.text import md
from curation.models import Stage, User
from curation.services.hypotheses import HypothesisItem, HypothesisReview
from curation.services.votes import VERDICT, cast_vote

VERDICTS = {"yes": "justifiable", "no": "unjustifiable"}


def query_label(task: Any) -> str:
    """A query's short name, unique in its dataset: a DiscoveryBench folder numbers its queries per metadata file
    (``metadata_3.json``'s q0 is "3/q0"), so "q0" alone names one query per metadata file."""
    return f"{task.metadata_k}/q{task.qid}"


def render_hypothesis_body(item: HypothesisItem) -> None:
    """What a hypothesis says: shared by review and consensus."""
    st.markdown(f"**Hypothesis:** {md(item.hypothesis)}  \n**Context:** {md(item.context or '—')}  \n"
                f"**Relationship:** {md(item.relationship or '—')}")
    if item.variables:
        st.dataframe(pd.DataFrame(item.variables, columns=["name", "column", "derived"]), hide_index=True,
                     width="stretch")
    if item.workflow:
        st.markdown(f"**Workflow:** {md(item.workflow)}")
    if item.code:
        st.code(item.code, language="python")
        check = item.check or {}
        if check.get("ok"):
            others = [f for f in check.get("files") or [] if f != check.get("data_file")]
            also = f" (with {', '.join(f'`{f}`' for f in others)} in its folder)" if others else ""
            st.caption(f"🧪 The code ran on `{check.get('data_file', 'the data')}` as df{also}; what it printed:")
            st.code(str(check.get("stdout") or "(nothing printed)")[:3000], language=None)
        elif check:
            st.error(f"The code failed: {check.get('error')}", icon="🧪")


def _vote(user: User, item: HypothesisItem) -> None:
    answer = st.session_state.get(f"hr.{item.target_id}.answer")
    why = st.session_state.get(f"hr.{item.target_id}.why", "") or ""
    if context.succeeded(lambda s: cast_vote(session=s, actor=user, target_kind=item.target_kind,
                                             target_id=item.target_id, question=VERDICT, answer=answer or "",
                                             explanation=why)):
        state.flash(f"Vote on {item.label} saved.", where=f"hr.{item.target_id}")
        st.rerun()


def _item(user: User, item: HypothesisItem, can_vote: bool) -> None:
    with st.container(border=True):
        badges = [b for b in (("LLM" if item.source == "llm" else "peer") if item.source else None,
                              f"by {item.proposer}" if item.proposer else None,
                              f"{item.voters} voter(s)") if b]
        st.markdown(f"**{item.label}** · " + " · ".join(md(b) for b in badges))
        if item.duplicate_of:
            st.caption("⚠️ flagged: it states the same as another hypothesis of this query")
        render_hypothesis_body(item)
        if item.own:
            st.caption("This is your own hypothesis: peers judge it, you cannot vote on it.")
            return
        if item.my_vote:
            reason = f" ({item.my_vote['explanation']})" if item.my_vote.get("explanation") else ""
            st.caption(f"Your vote: {VERDICTS.get(item.my_vote['answer'] or '', 'none')}{md(reason)}")
        if not can_vote:
            return
        # [2, 4, 1] cut "Save vote" to "Sav…" at 1024 px: the button sizes to its label at the row's end
        c1, c2 = st.columns([2, 5], vertical_alignment="bottom")
        row = c2.container(horizontal=True, vertical_alignment="bottom")
        current = (item.my_vote or {}).get("answer")
        c1.radio("Verdict", list(VERDICTS), format_func=lambda a: VERDICTS[a].capitalize(), horizontal=True,
                 index=list(VERDICTS).index(current) if current in VERDICTS else None,
                 key=f"hr.{item.target_id}.answer")
        row.text_input("Reason (required when unjustifiable)", value=(item.my_vote or {}).get("explanation", ""),
                       key=f"hr.{item.target_id}.why", width="stretch")
        if row.button("Save vote", key=f"hr.{item.target_id}.vote", width="content"):
            _vote(user, item)
        context.show_flash(f"hr.{item.target_id}")


def render_hypothesis_queue(user: User, review: HypothesisReview) -> None:
    can_vote = review.can_vote and review.stage == Stage.REVIEW.value
    if review.stage == Stage.CLOSED.value:
        st.warning("Stage 2 of this dataset is closed: votes are final and shown read-only.")
    elif not review.can_vote:
        st.info("You look at this review as a curator; the analysts who submitted stage 1 vote.")
    if not review.source_visible:
        st.caption("Source-blind review: whether a peer or the LLM wrote a hypothesis is hidden.")
    judgeable = [i for i in review.items if not i.own]
    done = sum(i.my_vote is not None for i in judgeable)
    if can_vote:
        st.progress(done / len(judgeable) if judgeable else 1.0, text=f"You have judged {done} of {len(judgeable)}")
    if not review.tasks:
        st.info("No hypothesis to judge yet.")
    for tr in review.tasks:
        st.markdown(f"#### Query {query_label(tr.task)}: {md(tr.task.question)}")
        with st.expander("Data dictionary"):
            st.dataframe(pd.DataFrame([{"column": c, "description": d} for c, d in tr.columns.items()]),
                         hide_index=True, width="stretch")
        for item in tr.items:
            _item(user, item, can_vote)

"""Stage 3 of a DiscoveryBench dataset on the Consensus page (curators and admins): per query, the candidate
hypotheses with the status the decision rule or the meeting gave them, and the gold decided from the justifiable
ones, with its provenance."""

from __future__ import annotations

import streamlit as st

from annotate_app import context, state
from annotate_app.components.hypothesis_review import query_label
from annotate_app.components.meeting_view import BADGE
from annotate_app.text import md
from curation.models import Stage, User
from curation.services.hypotheses import GoldBoard, TaskGold, decide_gold


def _tally(t: dict[str, int]) -> str:
    return f"{t.get('justifiable', 0)} ✓ · {t.get('unjustifiable', 0)} ✗ · {t.get('unsure', 0)} ?"


def _decided(tg: TaskGold, names: dict[int, str]) -> None:
    task, prov = tg.task, tg.task.gold_provenance or {}
    st.success(f"**Gold hypothesis:** {md(task.gold_hypothesis or '')}  \n**Context:** {md(task.gold_context or '')}"
               f"  \n**Variables:** {md(', '.join(task.gold_variables or []))}  \n"
               f"**Relationship:** {md(task.gold_relationship or '')}", icon="🏅")
    meeting = prov.get("meeting")
    how = f"meeting {meeting['meeting_id']} ({md(meeting['reason'])})" if meeting else f"rule {prov.get('rule')}"
    st.caption(f"Decided {prov.get('decided_at', '')[:16].replace('T', ' ')} UTC by {md(names.get(prov.get('decided_by_id') or 0, 'an unknown user'))} "
               f"· basis: {how} · tally {_tally(prov.get('tally') or {})}"
               + (f" · note: {md(prov['note'])}" if prov.get("note") else ""))


def _candidates(tg: TaskGold) -> None:
    for c in tg.candidates:
        p = tg.payloads.get(c.key, {})
        st.markdown(f"{BADGE.get(c.status, c.status)} · **{md(p.get('hypothesis', c.label))}**  \n"
                    f"_{md(c.why)}_")


def _decide(user: User, tg: TaskGold, board: GoldBoard) -> None:
    tid = tg.task.id or 0
    if board.stage != Stage.CLOSED.value:
        st.caption("The gold is decided once stage 2 is closed.")
        return
    if board.meeting_open:
        st.caption("A meeting is open: close it first, so that its outcomes are final.")
        return
    options = {c.key: c for c in tg.justifiable}
    if not options:
        st.warning("No hypothesis of this query is justifiable under the rule: take the contested ones to the "
                   "meeting, or leave the query without a gold hypothesis.")
        return
    keys = list(options)

    def option(k: str) -> str:
        c = options[k]
        r = c.result
        votes = f"{r.justifiable} of {r.voters} justifiable" if r else "no votes"
        who = "the LLM's" if c.target_kind == "alternative" else "an analyst's"
        text = (tg.payloads.get(k, {}).get("hypothesis") or c.label)[:100]
        return f"{text} ({who}; {votes})"

    suggested = tg.suggested
    st.caption("Choose the gold yourself; nothing is chosen for you. "
               + (f"Most justifiable votes: {option(suggested.key)}." if suggested is not None and len(keys) > 1
                  else ""))
    choice = st.radio("Gold hypothesis", keys, key=f"gold.{tid}.choice", index=None, format_func=option)
    note = st.text_input("Note (optional)", key=f"gold.{tid}.note")
    if st.button("Make it the gold hypothesis", type="primary", key=f"gold.{tid}.decide", disabled=choice is None,
                 help="Choose a hypothesis above first." if choice is None else None):
        item = options[choice or keys[0]]
        if context.succeeded(lambda s: decide_gold(session=s, actor=user, task_id=tid, target_kind=item.target_kind,
                                                   target_id=item.target_id, note=note)):
            state.flash(f"Query {query_label(tg.task)}: the chosen hypothesis is now the gold hypothesis.",
                        where=f"gold.{tid}")
            st.rerun()


def render_gold_board(user: User, board: GoldBoard) -> None:
    st.caption(f"Decision rule: {board.rule} (change it in the Ground truth tab). A query's gold is one of its "
               "hypotheses that the rule, or the meeting, made justifiable.")
    if not board.tasks:
        st.info("No query of this dataset has a hypothesis to decide on.")
    for tg in board.tasks:
        with st.container(border=True):
            st.markdown(f"#### Query {query_label(tg.task)}: {md(tg.task.question)}")
            context.show_flash(f"gold.{tg.task.id}")
            if tg.decided:
                _decided(tg, board.names)
                continue
            _candidates(tg)
            _decide(user, tg, board)

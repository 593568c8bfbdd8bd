"""Widgets of the Programmatic checks page: a candidate artifact or check with its status, votes and (for
checks) the release gate's evidence; the LLM generation panel; the form to propose or edit a check."""

from __future__ import annotations

import base64
from typing import Any

import pandas as pd
import streamlit as st

from annotate_app import context, state
from annotate_app.components.output_files import show_output_file
from annotate_app.text import md
from curation.models import User
from curation.services.programmatic import (
    CandidateView,
    TaskView,
    propose_check,
    run_release_gate,
)
from curation.services.votes import QUESTIONS, VERDICT, cast_vote
from exports.programmatic_part import PROGRAMMATIC_TASK_TYPES

__all__ = ["gate_frame", "render_agenda_candidate", "render_artifact", "render_check", "render_propose_check"]

STATUS = {"justifiable": "🟢 accepted", "unjustifiable": "🔴 rejected", "contested": "🟠 contested",
          "unjudged": "⚪ awaiting votes"}


def gate_frame(gate: dict[str, Any]) -> pd.DataFrame:
    """The gate's evidence as rows: the accepted artifacts first (the check must pass), then each known wrong
    output (the check must catch at least one of them; a check about one property need not catch the others)."""
    acc = gate.get("on_accepted") or {}
    ok = acc.get("status") == "true"
    rows = [{"output": "accepted artifacts", "the check should": "pass", "it": "passed" if ok else
             f"did not pass ({acc.get('status')})", "": "✅" if ok else "❌", "why": acc.get("sentence", "")}]
    for w in gate.get("on_wrong") or []:
        caught = w.get("status") != "true"
        rows.append({"output": f"wrong: {w.get('label')}", "the check should": "fail on at least one",
                     "it": "caught it" if caught else "passed (not caught)", "": "✅" if caught else "·",
                     "why": w.get("sentence", "")})
    return pd.DataFrame(rows)


ANSWER_LABELS = {"yes": "Yes", "no": "No", "unsure": "Unsure"}
VERDICT_LABELS = {"yes": "Accept", "no": "Reject"}


def _widget_key(item: CandidateView, question: str) -> str:
    return f"prog.vote.{item.item.id}.{question}"


def _cast(user: User, item: CandidateView, question: str) -> None:
    """Callback of a vote widget: save this one answer now (like the review queue's). A refused answer stays in
    the widget with the reason next to it (e.g. the reason a rejection needs)."""
    answer = st.session_state.get(_widget_key(item, question))
    reason = st.session_state.get(_widget_key(item, "reason"), "") or ""
    if question == "reason":  # the reason belongs to the verdict
        question, answer = VERDICT, st.session_state.get(_widget_key(item, VERDICT))
    if answer is None:
        return
    try:
        with context.db() as session:
            cast_vote(session=session, actor=user, target_kind=f"prog_{item.item.role}", target_id=item.item.id,
                      question=question, answer=answer, explanation=reason if question == VERDICT else "")
        state.set_review_error(f"prog.{item.item.id}", None)
    except Exception as exc:  # noqa: BLE001 - shown next to the item through context.show_error
        state.set_review_error(f"prog.{item.item.id}", exc)


def _vote(user: User, item: CandidateView, voting: bool) -> None:
    """The questions of the votes service for a check or an artifact (the detail questions, then the verdict),
    each saved the moment it is answered."""
    if not voting:
        return
    if item.item.proposed_by_id == user.id:
        st.caption("Your own proposal: peers vote on it.")
        return
    mine = {v["question"]: v for v in item.votes if v["annotator_id"] == user.id}
    pending = state.review_error(f"prog.{item.item.id}") is not None
    questions = QUESTIONS[item.item.role]
    st.markdown("**Your vote** (each answer is saved when you click it)")
    # two questions a row: three in a row cut "Unsure" at 1024 px (as the review queue's)
    cols = [c for start in range(0, len(questions), 2) for c in st.columns(2)][:len(questions)]
    for col_, q in zip(cols, questions, strict=True):
        key = _widget_key(item, q.key)
        if not pending or key not in st.session_state:  # the database is the truth (another tab may vote)
            st.session_state[key] = (mine.get(q.key) or {}).get("answer")
        col_.segmented_control(q.text, options=list(q.answers), key=key, help=q.help or None,
                               format_func=(VERDICT_LABELS if q.key == VERDICT else ANSWER_LABELS).get,
                               on_change=_cast, args=(user, item, q.key))
    reason_key = _widget_key(item, "reason")
    stored = (mine.get(VERDICT) or {}).get("explanation", "")
    if reason_key not in st.session_state or (not pending and st.session_state[reason_key] == ""):
        st.session_state[reason_key] = stored
    st.text_input("Reason for the verdict (required to reject; press Enter to save)", key=reason_key,
                  on_change=_cast, args=(user, item, "reason"))
    error = state.review_error(f"prog.{item.item.id}")
    if error is not None:
        context.show_error(error)


def render_artifact(user: User, item: CandidateView, voting: bool) -> None:
    p = item.item.payload
    support = item.item.extra.get("support")
    agreed = f" · agreed by {support} of {item.item.extra.get('ok_samples')} samples" if support else ""
    with st.container(key=f"prog-item-{item.item.id}"), \
            st.expander(f"{STATUS.get(item.status, item.status)} · 📄 {p['path']} · {item.item.source}{agreed}",
                        expanded=voting or item.status != "justifiable"):  # open while there is something to do
        st.caption(item.why)
        show_output_file(p["path"], base64.b64decode(p["content_b64"]))
        _vote(user, item, voting)


def render_check(user: User, view: TaskView, item: CandidateView, voting: bool, staff: bool) -> None:
    p, gate = item.item.payload, item.item.gate or {}
    released = "🚀 released" if item.released else STATUS.get(item.status, item.status) + (
        " · not released (the gate has not passed it)" if item.status == "justifiable" else "")
    edited = f" · edit of {item.item.seed_id[:8]}" if item.item.seed_id else ""
    with st.container(key=f"prog-item-{item.item.id}"), \
            st.expander(f"{released} · {p['function']} / {p['metric']} · {item.item.source}{edited}",
                        expanded=voting or not item.released):
        st.caption(f"[{p['task_type']}] ground truth: gt/{p.get('ground_truth') or ''} · status: {item.why}")
        st.code(p["code"], language="python")
        if p.get("rule"):
            st.markdown(f"Rule: `{p['rule']}`")
        if gate:
            (st.success if gate.get("released") else st.error)(gate.get("sentence", ""))
            st.dataframe(gate_frame(gate), hide_index=True, key=f"prog.gate.{item.item.id}")
            st.caption("Release gate: the check must pass on the accepted artifacts and fail on at least one known "
                       "wrong output (made by altering them); wrong outputs it does not look at may pass.")
        else:
            st.info("The release gate has not run for this check yet." + ("" if staff else
                    " A curator runs it once the task has an accepted artifact."))
        if staff and st.button("Run the release gate", key=f"prog.gaterun.{item.item.id}"):
            with st.spinner("Running the check on the accepted artifacts and on known wrong outputs…"):
                store = context.settings().datasets_store  # the task's inputs sit beside the outputs
                done = context.attempt(lambda s: run_release_gate(session=s, actor=user, item_id=item.item.id,
                                                                  store=store))
            if done is not None:
                st.rerun()
        _vote(user, item, voting)
        if st.toggle("Edit this check (a new candidate)", key=f"prog.edit.{item.item.id}"):
            _check_form(user, view, p, seed_id=item.item.id)


def _check_form(user: User, view: TaskView, start: dict[str, Any], seed_id: str | None) -> None:
    key = f"prog.form.{seed_id or 'new'}"
    with st.form(key):
        ttype = st.selectbox("Task type", PROGRAMMATIC_TASK_TYPES, key=f"{key}.type",
                             index=PROGRAMMATIC_TASK_TYPES.index(start["task_type"]) if start.get("task_type")
                             in PROGRAMMATIC_TASK_TYPES else 0)
        function = st.text_input("Function label", start.get("function", ""), key=f"{key}.function")
        metric = st.text_input("Metric", start.get("metric", ""), key=f"{key}.metric")
        code = st.text_area("Check code: one function of the ground-truth path, reading the output files by name",
                            start.get("code", "def check(ground_truth):\n    return True\n"), height=180,
                            key=f"{key}.code")
        rule = st.text_input("Rule (optional lambda on the result)", start.get("rule") or "", key=f"{key}.rule")
        gt = st.text_input("Ground-truth artifact (path inside gt/, empty for gt/ itself)",
                           start.get("ground_truth", ""), key=f"{key}.gt")
        if st.form_submit_button("Propose this check"):
            fields = {"task_type": ttype, "function": function, "metric": metric, "code": code, "rule": rule,
                      "ground_truth": gt}
            done = context.attempt(lambda s: propose_check(session=s, actor=user, task_id=view.task.id or 0,
                                                           fields=fields, seed_id=seed_id))
            if done is not None:
                st.rerun()


def render_propose_check(user: User, view: TaskView) -> None:
    with st.expander("➕ Propose a new check"):
        _check_form(user, view, {}, seed_id=None)


def render_agenda_candidate(item: Any, status_line: str) -> None:
    """A candidate check or artifact on a stage-3 meeting's agenda (a :class:`GroundTruthItem` of kind
    ``check`` / ``artifact``): its task, its code and the release gate's evidence, or the file itself."""
    d = item.detail
    st.markdown(f"**Task:** {md(item.concept or '—')}  ·  **source:** {md(item.source)}  ·  {status_line}")
    if item.kind == "check":
        st.caption(f"[{d.get('task_type')}] ground truth: gt/{d.get('ground_truth') or ''}")
        st.code(item.code, language="python")
        if item.rationale:
            st.markdown(md(item.rationale))
        gate = d.get("gate") or {}
        if gate:
            (st.success if gate.get("released") else st.error)(f"Release gate: {gate.get('sentence', '')}")
            st.dataframe(gate_frame(gate), hide_index=True, key=f"meeting.gate.{item.target_id}")
        else:
            st.info("The release gate has not run for this check yet: a curator runs it on the Programmatic checks "
                    "page; an accepted check is released once it passes the gate.")
        return
    if d.get("support"):
        st.caption(f"Agreed by {d['support']} of {d.get('ok_samples')} LLM samples that ran")
    if d.get("content_b64"):
        show_output_file(str(d.get("path")), base64.b64decode(d["content_b64"]))

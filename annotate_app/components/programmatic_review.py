"""Widgets of the Programmatic checks page: a candidate artifact or check with its status, votes and (for
checks) the release gate's evidence; the LLM generation panel; the form to propose or edit a check."""

from __future__ import annotations

import base64
from typing import Any

import pandas as pd
import streamlit as st

from annotate_app import context
from annotate_app.components.kinds.programmatic import show_output_file
from curation.models import User
from curation.services.programmatic import (
    CandidateView,
    TaskView,
    generate_candidates,
    propose_check,
    run_release_gate,
)
from curation.services.votes import cast_vote
from exports.schema import PROGRAMMATIC_TASK_TYPES

__all__ = ["gate_frame", "render_artifact", "render_check", "render_generate", "render_propose_check"]

STATUS = {"justifiable": "🟢 accepted", "unjustifiable": "🔴 rejected", "contested": "🟠 contested",
          "unjudged": "⚪ awaiting votes"}


def gate_frame(gate: dict[str, Any]) -> pd.DataFrame:
    """The gate's evidence as rows: the accepted artifacts first, then each known wrong output."""
    acc = gate.get("on_accepted") or {}
    rows = [{"output": "accepted artifacts", "expected": "pass", "outcome": acc.get("status"),
             "as expected": "✅" if acc.get("status") == "true" else "❌", "why": acc.get("sentence", "")}]
    for w in gate.get("on_wrong") or []:
        rows.append({"output": f"wrong: {w.get('label')}", "expected": "fail", "outcome": w.get("status"),
                     "as expected": "✅" if w.get("status") != "true" else "—", "why": w.get("sentence", "")})
    return pd.DataFrame(rows)


def _vote(user: User, item: CandidateView, voting: bool) -> None:
    target = f"prog_{item.item.kind}"
    if not voting:
        return
    if item.item.proposed_by_id == user.id:
        st.caption("Your own proposal: peers vote on it.")
        return
    mine = next((v for v in item.votes if v["annotator_id"] == user.id and v["question"] == "justifiable"), None)
    c1, c2 = st.columns([1, 3])
    answer = c1.radio("Your verdict", ["yes", "no"], key=f"prog.vote.{item.item.id}", horizontal=True,
                      index=None if mine is None else ["yes", "no"].index(mine["answer"]))
    reason = c2.text_input("Reason (needed for no)", key=f"prog.reason.{item.item.id}",
                           value=mine["explanation"] if mine else "")
    if st.button("Save vote", key=f"prog.save.{item.item.id}") and answer:
        done = context.attempt(lambda s: cast_vote(session=s, actor=user, target_kind=target,
                                                   target_id=item.item.id, question="justifiable", answer=answer,
                                                   explanation=reason))
        if done is not None:
            st.rerun()


def render_artifact(user: User, item: CandidateView, voting: bool) -> None:
    p = item.item.payload
    support = item.item.extra.get("support")
    agreed = f" · agreed by {support} of {item.item.extra.get('ok_samples')} samples" if support else ""
    with st.container(key=f"prog-item-{item.item.id}"), \
            st.expander(f"{STATUS.get(item.status, item.status)} · 📄 {p['path']} · {item.item.source}{agreed}"):
        st.caption(item.why)
        show_output_file(p["path"], base64.b64decode(p["content_b64"]))
        _vote(user, item, voting)


def render_check(user: User, view: TaskView, item: CandidateView, voting: bool, staff: bool) -> None:
    p, gate = item.item.payload, item.item.gate or {}
    released = "🚀 released" if item.released else STATUS.get(item.status, item.status)
    edited = f" · edit of {item.item.seed_id[:8]}" if item.item.seed_id else ""
    with st.container(key=f"prog-item-{item.item.id}"), \
            st.expander(f"{released} · {p['function']} / {p['metric']} · {item.item.source}{edited}",
                        expanded=not item.released):
        st.caption(f"[{p['task_type']}] ground truth: gt/{p.get('ground_truth') or ''} · status: {item.why}")
        st.code(p["code"], language="python")
        if p.get("rule"):
            st.markdown(f"Rule: `{p['rule']}`")
        if gate:
            (st.success if gate.get("released") else st.error)(gate.get("sentence", ""))
            st.dataframe(gate_frame(gate), hide_index=True, key=f"prog.gate.{item.item.id}")
        else:
            st.info("The release gate has not run for this check yet.")
        if staff and st.button("Run the release gate", key=f"prog.gaterun.{item.item.id}"):
            with st.spinner("Running the check on the accepted artifacts and on known wrong outputs…"):
                done = context.attempt(lambda s: run_release_gate(session=s, actor=user, item_id=item.item.id))
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


def render_generate(user: User, view: TaskView, cfg: Any) -> None:
    from evaluation.llm import LLMClient

    with st.expander("🤖 Propose candidates with the LLM (self-consistency)"):
        st.caption("The LLM writes N solutions; each runs in the sandbox on the task's input files. Output files "
                   "on which a strict majority (at least two) of the samples that ran agree become candidate "
                   "artifacts; the LLM then proposes checks. Everything awaits the analysts' votes.")
        samples = st.number_input("Samples", 2, 20, 3, key="prog.samples")
        if st.button("Generate candidates", key="prog.generate"):
            with st.spinner("Asking the LLM and running each solution in the sandbox…"):
                summary = context.attempt(lambda s: generate_candidates(
                    session=s, actor=user, task_id=view.task.id or 0, client=LLMClient(cfg.llm_config()),
                    samples=int(samples), store=cfg.datasets_store))
            if summary is not None:
                st.success(f"{summary['ran']} of {summary['samples']} solutions ran; {summary['artifacts']} "
                           f"artifacts agreed, {summary['checks']} checks proposed.")
                if summary["disagreeing"]:
                    st.warning("No majority for: " + ", ".join(summary["disagreeing"]))
                for err in summary["errors"]:
                    st.caption(f"A sample failed: {err}")

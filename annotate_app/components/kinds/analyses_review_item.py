"""One item of the review queue: what it is, where it sits, and the vote widgets (each saved when cast)."""

from __future__ import annotations

from typing import Any

import streamlit as st

from annotate_app import context, state
from annotate_app.components.kinds.analyses_alternative_form import render_alternative_forms
from annotate_app.text import md
from curation.models import User
from curation.services.alternatives import merge_alternative
from curation.services.analyses.review_queue import ReviewItem
from curation.services.votes import QUESTIONS, VERDICT, cast_vote

ANSWER_LABELS = {"yes": "Yes", "no": "No", "unsure": "Unsure"}
VERDICT_LABELS = {"yes": "Justifiable", "no": "Unjustifiable"}


def _widget_key(item: ReviewItem, question: str) -> str:
    return f"review.{item.key}.{question}"


def _cast(user: User, item: ReviewItem, question: str) -> None:
    """Callback of a vote widget: save this one answer now. A refused answer stays in the widget, with the
    reason next to it, so the analyst can fix it (e.g. add the reason an unjustifiable verdict needs)."""
    answer = st.session_state.get(_widget_key(item, question))
    reason = st.session_state.get(_widget_key(item, "reason"), "") or ""
    if question == "reason":  # the reason belongs to the verdict
        question, answer = VERDICT, st.session_state.get(_widget_key(item, VERDICT))
    if answer is None:
        return
    try:
        with context.db() as session:
            cast_vote(session=session, actor=user, target_kind=item.target_kind, target_id=item.target_id,
                      question=question, answer=answer, explanation=reason if question == VERDICT else "")
        state.set_review_error(item.key, None)
    except Exception as exc:  # noqa: BLE001 - shown next to the item through context.show_error
        state.set_review_error(item.key, exc)


def _check_summary(check: dict[str, Any] | None) -> None:
    if not check:
        st.caption("No sanity-check output recorded for this code.")
        return
    if not check.get("ok"):
        st.error("Sanity check failed:", icon="🧪")
        st.code(str(check.get("error") or "no error text recorded"), language="text")
        return
    change = check.get("change") or {}
    rb, ra = change.get("rows_before"), change.get("rows_after")
    parts = [f"rows {rb:,} → {ra:,}" if rb is not None and ra is not None else "ran without error"]
    for label in ("created", "changed", "removed"):
        if change.get(label):
            parts.append(f"{label}: " + ", ".join(md(c) for c in change[label]))
    st.caption("🧪 Sanity check passed · " + " · ".join(parts))


def _header(item: ReviewItem) -> str:
    badges = [item.kind]
    if item.source:
        badges.append("LLM" if item.source == "llm" else "peer")
    if item.proposer:
        badges.append(f"by {md(item.proposer)}")
    if item.duplicate_of:
        badges.append(f"⚠️ same decision as {md(item.duplicate_label or item.duplicate_of[:8])}")
    return f"**{md(item.label)}** · {md(item.title or '(untitled)')} — " + " · ".join(badges)


def _merge_button(user: User, item: ReviewItem) -> None:
    target = item.duplicate_label or (item.duplicate_of or "")[:8]
    if st.button(f"Merge into {target} (votes follow, proposers kept)", key=f"merge.{item.key}"):
        if context.succeeded(lambda s: merge_alternative(session=s, actor=user, alternative_id=item.target_id,
                                                         into_kind=item.duplicate_kind or "",
                                                         into_id=item.duplicate_of or "")):
            state.flash(f"Merged {item.label} into {target}.")
            st.rerun()


def render_item(user: User, item: ReviewItem, can_vote: bool, dataset_id: int = 0,
                data_columns: list[str] | None = None, can_merge: bool = False) -> None:
    with st.container(border=True, key=f"item-{item.target_id}"):
        st.markdown(_header(item))
        concept = item.concept or "no conceptual variable uses its output directly"
        st.markdown(f"Conceptual variable: **{md(concept)}**"
                    + (f" ({md(item.variable_type)})" if item.variable_type else ""))
        if item.code:
            st.code(item.code, language="python")
        if item.rationale:
            st.markdown(f"*Rationale:* {md(item.rationale)}")
        if item.columns:
            st.caption(("Output column: " if item.kind == "transform" else "Columns: ")
                       + ", ".join(md(c) for c in item.columns))
        if item.kind == "transform":
            _check_summary(item.check)
        if item.parents or item.children:
            chain = " → ".join(filter(None, [md(", ".join(item.parents)), f"**{md(item.title)}**",
                                             md(", ".join(item.children))]))
            st.caption(f"Decision graph: {chain}")
        if item.duplicate_of and item.duplicate_kind and user.role in ("curator", "admin") and can_merge:
            _merge_button(user, item)
        if item.own:
            st.info("Your own proposal: peers judge it.", icon="🙋")
            return
        if not can_vote:
            st.caption(f"{item.voters} analyst(s) voted on this item.")
            return
        _vote_widgets(user, item)
        error = state.review_error(item.key)
        if error is not None:
            context.show_error(error)
        render_alternative_forms(user, dataset_id, item, data_columns or [])


def _vote_widgets(user: User, item: ReviewItem) -> None:
    mine = item.my_votes
    pending = state.review_error(item.key) is not None  # keep what the analyst chose until it is saved
    n = len(QUESTIONS[item.kind])  # two questions a row: four in a row cut "Unsure" and "Unjustifiable" at 1024 px
    cols = [c for _ in range((n + 1) // 2) for c in st.columns(2)][:n]
    for col, q in zip(cols, QUESTIONS[item.kind], strict=True):
        stored = mine.get(q.key) or {}
        with col:
            if q.key in mine and stored.get("answer") is None:
                st.markdown(f"<small>{q.text}</small>", unsafe_allow_html=True)
                st.caption(f"Skipped ({md(stored.get('skipped_reason'))})")
                continue
            labels = VERDICT_LABELS if q.key == VERDICT else ANSWER_LABELS
            key = _widget_key(item, q.key)
            if not pending or key not in st.session_state:  # the database is the truth (another tab may vote)
                st.session_state[key] = stored.get("answer")
            st.segmented_control(q.text, options=list(q.answers), format_func=labels.get, key=key, help=q.help or None,
                                 on_change=_cast, args=(user, item, q.key))
    verdict = mine.get(VERDICT) or {}
    reason_key = _widget_key(item, "reason")
    if reason_key not in st.session_state or (not pending and st.session_state[reason_key] == ""):
        st.session_state[reason_key] = verdict.get("explanation", "")
    st.text_input("Reason for the verdict (required for unjustifiable; press Enter to save)", key=reason_key,
                  on_change=_cast, args=(user, item, "reason"))

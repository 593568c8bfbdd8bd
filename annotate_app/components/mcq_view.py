"""An MCQ as a taker sees it, with its provenance, audit flags and the curator's review controls."""

from __future__ import annotations

import streamlit as st

from annotate_app import context, state
from annotate_app.text import md
from curation.models import Dataset, User
from curation.services.mcq_review import LETTERS, MCQView, edit_mcq, review_mcq, taker_text

REVIEW_BADGE = {"pending": "⏳ pending", "accepted": "✅ accepted", "rejected": "⛔ rejected", "edited": "✏️ edited"}


def render_taker(view: MCQView, dataset: Dataset) -> None:
    q = view.mcq
    st.markdown(md(taker_text(q, dataset)))
    for i, o in enumerate(q.options):
        if q.kind == "variable":
            st.markdown(f"**{LETTERS[i]}.** {md(o.get('text', ''))}")
        else:
            st.markdown(f"**{LETTERS[i]}.**")
            st.code(o.get("text", ""), language="python")


def render_provenance(view: MCQView) -> None:
    q = view.mcq
    for i, o in enumerate(q.options):
        prov = (o.get("extra") or {}).get("provenance")
        mark = "🔑 key" if i == q.correct_index else "distractor"
        if not prov or not (prov.get("why") or prov.get("items")):  # (a role alone: left by an edit before the fix)
            st.markdown(f"**{LETTERS[i]}** · {mark} · imported: no recorded link to the votes "
                        "(the audit matches it by its text)")
            continue
        st.markdown(f"**{LETTERS[i]}** · {mark} · {md(prov.get('why', ''))}")
        for item in prov.get("items", []):
            tally = item.get("tally") or {}
            meeting = f" · meeting: {item['meeting']['outcome']}" if item.get("meeting") else ""
            st.caption(md(f"{item['target_kind']} {item['target_id'][:10]} ({item['source']}) · {item['status']} by "
                          f"{item.get('rule') or item.get('basis')} · {tally.get('justifiable', 0)} ✔ "
                          f"{tally.get('unjustifiable', 0)} ✘ {tally.get('unsure', 0)} ?{meeting}"))


def render_mcq(user: User, view: MCQView, dataset: Dataset, n: int) -> None:
    q = view.mcq
    title = f"{n}. {q.kind} · {q.mc_type} · {md(q.concept.strip() or 'variables')} · {REVIEW_BADGE[view.review]}"
    with st.container(border=True):
        st.markdown(f"**{title}** · {md(view.source)}")
        for f in view.findings:
            st.warning(md(f"Audit: {f.message} ({f.flag})"))
        render_taker(view, dataset)
        with st.expander("Key and provenance"):
            render_provenance(view)
        c1, c2, c3 = st.columns([1, 1, 3])
        if c1.button("Accept", key=f"mcq.accept.{q.id}") and context.succeeded(
                lambda s: review_mcq(session=s, actor=user, mcq_id=q.id, decision="accepted",
                                   expected=view.review)):
            state.flash(f"MCQ {n} accepted.")
            st.rerun()
        reason = c3.text_input("Reason to reject", key=f"mcq.reason.{q.id}", label_visibility="collapsed",
                               placeholder="reason to reject")
        if c2.button("Reject", key=f"mcq.reject.{q.id}") and context.succeeded(
                lambda s: review_mcq(session=s, actor=user, mcq_id=q.id, decision="rejected", note=reason,
                                   expected=view.review)):
            state.flash(f"MCQ {n} rejected.")
            st.rerun()
        with st.expander("Edit"), st.form(f"mcq.edit.{q.id}"):
            texts = [st.text_area(f"Option {LETTERS[i]}", value=(q.options[i].get("text", "") if i < len(q.options)
                                                                 else ""), key=f"mcq.opt.{q.id}.{i}", height=80)
                     for i in range(4)]
            key_letter = st.radio("Key", list(LETTERS), index=q.correct_index, horizontal=True)
            note = st.text_input("Why the edit")
            save = st.form_submit_button("Save edit")
        if save:
            key_text = texts[LETTERS.index(key_letter)]
            if context.succeeded(lambda s: edit_mcq(session=s, actor=user, mcq_id=q.id, options=texts,
                                                    key=key_text, note=note, expected=view.review)):
                state.flash(f"MCQ {n} edited.")
                st.rerun()

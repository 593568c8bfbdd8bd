"""Stage-3 widgets: the meeting (agenda, item card, outcome form, vote revision, projector), ground-truth rule
picker with its preview (the analyses kind draws its coverage chart: kinds/analyses_coverage.py)."""

from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from annotate_app import context, state
from annotate_app.components.kinds import view_module
from annotate_app.text import md
from curation.ground_truth import RULES
from curation.models import Role, User
from curation.services.ground_truth import (
    RULE_CHOICES,
    GroundTruthItem,
    dataset_rule,
    ground_truth,
    preview_rule,
    set_rule,
)
from curation.services.meetings import (
    OUTCOMES,
    AgendaItem,
    close_meeting,
    display_names,
    meeting_agenda,
    meeting_summary,
    record_outcome,
    revise_vote,
    set_attendance,
    show_item,
)
from curation.services.votes import QUESTIONS
from evaluation.tasks import ItemKind, item_kind

AGENDA_PICK = "meeting.item"  # the agenda item picked in the list view
CLOSE_ASKED = "fp.meeting.close_asked"  # the meeting whose close waits for the facilitator's confirmation
BADGE = {"justifiable": "🟢 justifiable", "unjustifiable": "🔴 unjustifiable", "contested": "🟠 contested",
         "unjudged": "⚪ unjudged"}


def is_facilitator(user: User) -> bool:
    return user.role in (Role.CURATOR.value, Role.ADMIN.value)


def _names(user_ids: list[int]) -> dict[int, str]:
    return context.attempt(lambda s: display_names(session=s, user_ids=user_ids)) or {}


def _tally(t: dict[str, int]) -> str:
    return f"{t.get('justifiable', 0)} ✔ · {t.get('unjustifiable', 0)} ✘ · {t.get('unsure', 0)} ?"


def item_title(a: AgendaItem) -> str:
    i = a.item
    what = i.label or i.concept
    return f"{a.position + 1}. {i.kind} · {what[:60]}"


def render_item(a: AgendaItem, *, big: bool = False) -> None:
    """One agenda item: what it is, its place in the decision graph, the votes with reasons, the outcome."""
    i = a.item
    (st.header if big else st.subheader)(item_title(a))
    spec = item_kind(i.kind)
    if spec.agenda_view is not None:  # drawn by its task kind's component (a programmatic check: code, gate)
        view_module(spec.agenda_view).agenda_item(
            i, f"**now:** {BADGE.get(i.status, i.status)}  ·  **before the meeting:** {_tally(a.before)}")
    else:
        _render_decision(i, a, spec)
    names = _names(sorted({v["annotator_id"] for v in i.votes}))
    if i.votes:
        asked = {q.key: q.text for q in QUESTIONS.get(i.kind, ())}  # the words analysts answered, not the ids
        st.dataframe(pd.DataFrame([{"analyst": names.get(v["annotator_id"], "?"),
                                    "question": asked.get(v["question"], v["question"]),
                                    "answer": v["answer"] or "skipped", "reason": v["explanation"]}
                                   for v in i.votes]), hide_index=True, width="stretch")
    if a.outcome is not None:
        o = a.outcome
        st.success(f"Outcome: {BADGE.get(o.outcome, o.outcome)} — {md(o.reason)}"
                   + (f"  \nDissent: {md(o.dissent)}" if o.dissent else "") + f"  \n(revision {o.revision})")


def _render_decision(i: GroundTruthItem, a: AgendaItem, spec: ItemKind) -> None:
    st.markdown(f"**{spec.subject}:** {md(i.concept or '—')}  ·  **source:** {md(i.source)}  ·  "
                f"**now:** {BADGE.get(i.status, i.status)}  ·  **before the meeting:** {_tally(a.before)}")
    if i.code:
        st.code(i.code, language="python")
    if i.rationale:
        st.caption(f"{spec.rationale}: {md(i.rationale)}")
    if not spec.in_decision_graph:  # e.g. a DiscoveryBench hypothesis: the columns its variables use
        st.caption(f"Variables grounded in the columns {md(', '.join(i.columns) or '— (derived only)')}")
        return
    before = len(i.path_ids) - 1 if spec.step_of_its_path else len(i.path_ids)
    runs = f"runs after {before} earlier transform(s)" if before > 0 else (
        "runs on the raw data" if spec.step_of_its_path else "uses the data columns directly")
    st.caption(f"Decision graph: {runs}; columns {md(', '.join(i.columns) or '—')}")


def render_outcome_form(user: User, meeting_id: int, a: AgendaItem) -> None:
    key = a.item.key
    seen = state.seen_revision(key)
    if seen is None:
        state.set_seen_revision(key, a.revision)
        seen = a.revision
    if seen != a.revision:
        st.warning("Someone else recorded this item since you opened it (shown above).")
        if st.button("Reload this item", key=f"meeting.reload.{key}"):
            state.set_seen_revision(key, a.revision)
            st.rerun()
    with st.form(f"meeting.outcome.{key}"):
        current = a.outcome.outcome if a.outcome else "contested"
        outcome = st.radio("Outcome", OUTCOMES, index=OUTCOMES.index(current), horizontal=True,
                           format_func=lambda o: BADGE[o] if o != "contested" else "🟠 stays contested")
        reason = st.text_area("Reason", value=a.outcome.reason if a.outcome else "", height=70)
        dissent = st.text_input("Dissent (who disagrees, and why)", value=a.outcome.dissent if a.outcome else "")
        go_ = st.form_submit_button("Record outcome", type="primary")
    if go_:
        row = context.attempt(lambda s: record_outcome(
            session=s, actor=user, meeting_id=meeting_id, target_kind=a.item.target_kind,
            target_id=a.item.target_id, outcome=outcome, reason=reason, dissent=dissent, expected_revision=seen))
        if row is not None:
            state.set_seen_revision(key, row.revision)
            state.flash(f"Outcome recorded: {outcome}.")
            st.rerun()


def render_vote_revision(user: User, meeting_id: int, a: AgendaItem) -> None:
    mine = next((v for v in a.item.votes if v["annotator_id"] == user.id and v["question"] == "justifiable"), None)
    with st.form(f"meeting.vote.{a.item.key}"):
        st.markdown("**Your vote** (you may revise it during the meeting; the earlier vote is kept)")
        answer = st.radio("Overall, is it justifiable?", ["yes", "no"], horizontal=True,
                          index=1 if mine and mine["answer"] == "no" else 0)
        reason = st.text_input("Reason (required for no)", value=mine["explanation"] if mine else "")
        go_ = st.form_submit_button("Save my vote")
    if go_ and context.succeeded(lambda s: revise_vote(
            session=s, actor=user, meeting_id=meeting_id, target_kind=a.item.target_kind,
            target_id=a.item.target_id, question="justifiable", answer=answer, explanation=reason)):
        state.flash("Your vote is saved; the meeting keeps your earlier vote too.")
        st.rerun()


def render_meeting(user: User, meeting_id: int, analysts: dict[int, str]) -> None:
    loaded = context.attempt(lambda s: meeting_agenda(session=s, actor=user, meeting_id=meeting_id))
    if loaded is None:
        return
    meeting, agenda = loaded
    decided = sum(a.outcome is not None for a in agenda)
    st.markdown(f"**Meeting {meeting.id}** · {meeting.status} · rule `{meeting.rule}` · "
                f"{decided} of {len(agenda)} items decided")
    if meeting.status == "open" and is_facilitator(user):
        c1, c2 = st.columns([3, 1], vertical_alignment="bottom")  # [4, 1] cut "Save attendance" at 1024 px
        present = c1.multiselect("Attendance", list(analysts), default=[u for u in meeting.attendance if u in analysts],
                                 format_func=lambda u: analysts[u], key=f"meeting.attendance.{meeting.id}")
        if c2.button("Save attendance", key="meeting.attendance.save", width="stretch") and context.succeeded(
                lambda s: set_attendance(session=s, actor=user, meeting_id=meeting.id or 0, user_ids=present)):
            state.flash("Attendance saved.")
            st.rerun()
    if not agenda:
        st.info("Nothing to discuss: no item is contested or split.")
    context.show_deferred_error()
    projector = st.toggle("Projector view (one item at a time)", key=state.MEETING_PROJECTOR,
                          on_change=_projector_switched,
                          args=(user, meeting.id or 0, meeting.status == "open", meeting.current, len(agenda)))
    if agenda and projector:
        pos = min(meeting.current, len(agenda) - 1)
        if is_facilitator(user) and meeting.status == "open":
            c1, c2, c3 = st.columns([1, 3, 1])
            if c1.button("◀ Previous", key="meeting.prev", disabled=pos == 0) and context.succeeded(
                    lambda s: show_item(session=s, actor=user, meeting_id=meeting.id or 0, position=pos - 1)):
                st.rerun()
            c2.progress((pos + 1) / len(agenda), text=f"item {pos + 1} of {len(agenda)}")
            if c3.button("Next ▶", key="meeting.next", disabled=pos >= len(agenda) - 1) and context.succeeded(
                    lambda s: show_item(session=s, actor=user, meeting_id=meeting.id or 0, position=pos + 1)):
                st.rerun()
        render_item(agenda[pos], big=True)
        chosen = agenda[pos]
    elif agenda:
        pick = st.selectbox("Agenda (most disagreement first)", range(len(agenda)), key=AGENDA_PICK,
                            format_func=lambda n: item_title(agenda[n]) + ("  ✔" if agenda[n].outcome else ""))
        chosen = agenda[pick]
        render_item(chosen)
    if agenda and meeting.status == "open":
        if is_facilitator(user):
            render_outcome_form(user, meeting.id or 0, chosen)
        elif chosen.item.proposer_id != user.id:
            render_vote_revision(user, meeting.id or 0, chosen)
    if meeting.status == "open" and is_facilitator(user):
        render_close(user, meeting.id or 0, decided, len(agenda))
    if meeting.status == "closed":
        render_summary(meeting.id or 0)


def _projector_switched(user: User, meeting_id: int, is_open: bool, current: int, items: int) -> None:
    """The projector opens on the item picked in the agenda (and moves everyone's projector there); back in the
    list view, the agenda picks the item the projector showed."""
    if st.session_state.get(state.MEETING_PROJECTOR):
        picked = st.session_state.get(AGENDA_PICK)
        if (isinstance(picked, int) and 0 <= picked < items and picked != current and is_open
                and is_facilitator(user)):
            context.attempt_in_callback(lambda s: show_item(session=s, actor=user, meeting_id=meeting_id,
                                                            position=picked))
    elif 0 <= current < items:
        st.session_state[AGENDA_PICK] = current


def render_close(user: User, meeting_id: int, decided: int, total: int) -> None:
    """Closing is final: with items still undecided the facilitator is asked to confirm, naming how many."""
    asking = st.session_state.get(CLOSE_ASKED) == meeting_id
    if not asking:
        if st.button("Close the meeting", key="meeting.close"):
            if decided < total:
                st.session_state[CLOSE_ASKED] = meeting_id
                st.rerun()
            _close(user, meeting_id, decided, total)
        return
    undecided = total - decided
    st.warning(f"{undecided} of {total} items have no outcome yet. Closing the meeting is final: they keep their "
               "votes' status and no outcome can be recorded afterwards.")
    c1, c2 = st.columns(2)
    if c1.button(f"Close with {undecided} undecided", key="meeting.close.confirm", type="primary"):
        st.session_state.pop(CLOSE_ASKED, None)
        _close(user, meeting_id, decided, total)
    if c2.button("Keep the meeting open", key="meeting.close.cancel"):
        st.session_state.pop(CLOSE_ASKED, None)
        st.rerun()


def _close(user: User, meeting_id: int, decided: int, total: int) -> None:
    if context.succeeded(lambda s: close_meeting(session=s, actor=user, meeting_id=meeting_id)):
        state.flash(f"Meeting {meeting_id} closed: {decided} of {total} items decided.")
        st.rerun()


def render_summary(meeting_id: int) -> None:
    summary = context.attempt(lambda s: meeting_summary(session=s, meeting_id=meeting_id, named=True))
    if summary is None:
        return
    st.subheader("Meeting summary")
    st.caption(f"Started {summary['started_at'][:16]} by {md(summary['started_by'])}, closed "
               f"{(summary['closed_at'] or '')[:16]}; attendance: {md(', '.join(summary['attendance']) or '—')}. "
               "Exported with the next release.")
    st.dataframe(pd.DataFrame([{"item": r["label"][:60], "kind": r["kind"], "before": _tally(r["tally_before"]),
                                "after": _tally(r["tally_after"]), "outcome": r["outcome"] or "not discussed",
                                "reason": r["reason"], "dissent": r["dissent"]} for r in summary["items"]]),
                 hide_index=True, width="stretch")
    st.download_button("⬇ Meeting record (JSON)", json.dumps(summary, indent=2), file_name=f"meeting-{meeting_id}.json",
                       mime="application/json", key=f"meeting.download.{meeting_id}", on_click="ignore")


def render_rule_picker(user: User, dataset_id: int) -> None:
    current = context.attempt(lambda s: dataset_rule(session=s, dataset_id=dataset_id))
    if current is None:
        return
    keys = [r.key for r in RULE_CHOICES]
    choice = st.radio("Ground-truth rule", keys, index=keys.index(current.key), key=f"rule.{dataset_id}",
                      format_func=lambda k: f"{RULES[k].title} — {RULES[k].description}")
    if choice != current.key:
        changes = context.attempt(lambda s: preview_rule(session=s, actor=user, dataset_id=dataset_id, rule=choice))
        if changes is not None:
            st.markdown(f"**Preview:** switching from `{current.key}` to `{choice}` changes {len(changes)} item(s).")
            if changes:
                st.dataframe(pd.DataFrame([{"item": c.label[:60], "kind": c.kind, "before": c.before,
                                            "after": c.after, "why": c.why} for c in changes]),
                             hide_index=True, width="stretch")
            if st.button(f"Apply {choice}", key="rule.apply", type="primary") and context.succeeded(
                    lambda s: set_rule(session=s, actor=user, dataset_id=dataset_id, rule=choice)):
                state.flash(f"Ground-truth rule set to {choice}.")
                st.rerun()
    items = context.attempt(lambda s: ground_truth(session=s, dataset_id=dataset_id)) or []
    if items:
        table = pd.DataFrame([{"item": (i.label or i.concept)[:60], "kind": i.kind, "source": i.source,
                               "status": BADGE.get(i.status, i.status), "basis": i.basis, "why": i.why} for i in items])
        st.dataframe(table, hide_index=True, width="stretch")


"""Stage 3: the consensus meeting, then the tabs of the kind that curates the dataset (BLADE analyses: the
ground-truth rule and expert coverage; DiscoveryBench folders: the gold hypotheses and the rule)."""

import streamlit as st

from annotate_app import context, state
from annotate_app.components.kinds import stage_component
from annotate_app.components.meeting_view import is_facilitator, render_meeting
from annotate_app.text import plural
from curation.models import Stage
from curation.services.meetings import agenda_size, meeting_participants, meetings_of, start_meeting
from curation.services.stages import STAGE_LABELS, review_overview

user = context.require_user()
st.title("🤝 Consensus (stage 3)")
overview = context.attempt(lambda s: review_overview(session=s, actor=user)) or []
ready = {d.id: (d, r) for d, r in overview if r.stage == Stage.CLOSED.value}
if not ready:
    st.info("No dataset has closed stage 2 yet: the consensus meeting follows the review, once the curator "
            "closes stage 2 on the Review page.")
    st.stop()
previous = state.get(state.MEETING_DATASET_ID)
dataset_id = st.selectbox("Dataset", list(ready), key="consensus.dataset",
                          index=list(ready).index(previous) if previous in ready else 0,
                          format_func=lambda i: f"{ready[i][0].name} · {STAGE_LABELS[ready[i][1].stage]}")
state.put(state.MEETING_DATASET_ID, dataset_id)

component = context.attempt(lambda s: stage_component(s, ready[dataset_id][0]))
if component is None:
    st.stop()
if isinstance(component, str):
    st.info(component)
    st.stop()
extra = component.consensus_tabs(user, ready[dataset_id][0]) if is_facilitator(user) else []
tabs = st.tabs(["Meeting", *(name for name, _ in extra)], key="consensus.tab", on_change="rerun")
with tabs[0]:
    if tabs[0].open is not False:
        meetings = context.attempt(lambda s: meetings_of(session=s, actor=user, dataset_id=dataset_id)) or []
        analysts = context.attempt(lambda s: meeting_participants(session=s, dataset_id=dataset_id)) or {}
        open_ = [m for m in meetings if m.status == "open"]
        waiting = (context.attempt(lambda s: agenda_size(session=s, actor=user, dataset_id=dataset_id or 0)) or 0
                   if not open_ and is_facilitator(user) else 0)
        if not open_ and is_facilitator(user) and not waiting:
            st.info("Nothing to discuss: no item is contested or split under the rule, so a meeting would have an "
                    "empty agenda." + component.MEETING_NOTE)
        elif not open_ and is_facilitator(user):
            with st.form("meeting.start"):
                st.markdown(f"{plural(waiting, 'item')} contested or split under the rule will be on the agenda.")
                if analysts:
                    present = st.multiselect("Who is here?", list(analysts), format_func=lambda u: analysts[u])
                else:  # an imported dataset: nobody submitted stage 1, so there is no one to list
                    present = []
                    st.caption("Attendance: no analyst submitted stage 1 of this dataset, so there is no one to "
                               "list; the meeting records outcomes without attendance.")
                go = st.form_submit_button("Start the consensus meeting", type="primary")
            if go:
                started = context.attempt(lambda s: start_meeting(session=s, actor=user, dataset_id=dataset_id,
                                                                  attendee_ids=present))
                if started is not None:
                    state.flash(f"Meeting {started.id} started with {plural(len(started.agenda), 'item')} on the "
                                "agenda.")
                    st.rerun()
        elif not open_:
            st.info("No meeting is open on this dataset; the curator starts it.")
        shown = open_[0] if open_ else (meetings[-1] if meetings else None)
        if shown is not None:
            render_meeting(user, shown.id or 0, analysts)
for tab, (_, draw) in zip(tabs[1:], extra, strict=True):
    with tab:
        if tab.open:
            draw()

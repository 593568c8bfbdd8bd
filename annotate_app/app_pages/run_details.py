"""Run details: pick a succeeded run; its kind's page component draws the drill-down (for BLADE analyses: run →
dataset → analysis, with the agent's code, every match and its reason, and overrides)."""

import streamlit as st

from annotate_app import context, state
from annotate_app.components.inspect_logs import run_transcripts
from annotate_app.components.kinds import view_module
from curation.models import Role, RunStatus
from curation.services.scoring import kind_of, list_runs

user = context.require_user(Role.EVALUATOR, Role.CURATOR, Role.ADMIN)
cfg = context.settings()
st.title("🔎 Run details")
runs = [r for r in context.attempt(lambda s: list_runs(session=s, actor=user)) or []
        if r.status == RunStatus.SUCCEEDED.value and (kind_of(r.kind).view or r.agent_run_id)]
if not runs:
    st.info("No succeeded run yet: score a submission on the Scoring runs page.")
    st.stop()
ids = [r.id for r in runs]
chosen = state.chosen_run()
run_id = st.selectbox("Run", ids, index=ids.index(chosen) if chosen in ids else 0, key="details.run",
                      format_func=lambda i: next(" · ".join(filter(None, [  # no "None" for kinds without a judge
                          f"#{r.id} {r.agent}", r.kind, r.model_name, f"release {r.release_version}",
                          r.judge.get("name"), r.mode if r.mode != "default" else None])) for r in runs if r.id == i))
state.choose_run(run_id)
run = next(r for r in runs if r.id == run_id)
if kind_of(run.kind).view:
    view_module(kind_of(run.kind).view or "").drilldown(run, user, cfg)
if run.agent_run_id:  # an agent run's, or an inspect_ai log's: what the model said and did, task by task
    run_transcripts(run.agent_run_id, user, cfg)

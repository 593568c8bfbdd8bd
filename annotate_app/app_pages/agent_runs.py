"""Agent runs (evaluators, curators, admins): a model under test answers a release's tasks with a strategy, on the
server; follow it, read its transcripts and cost, download its submission, open the scored run."""

import streamlit as st

from annotate_app import context, state
from annotate_app.components.release_choice import scorable_releases_or_stop
from annotate_app.components.transcript_view import COST_HELP, agent_runs_frame, task_runs_frame, transcript
from annotate_app.text import md
from curation.models import Role, RunStatus
from curation.services import agent_runs as ar
from evaluation.agents import ANSWERED, AgentSettings

user = context.require_user(Role.EVALUATOR, Role.CURATOR, Role.ADMIN)
cfg = context.settings()
jobs = context.job_runner()
st.title("🤖 Agent runs")
st.caption("Run a model under test (any OpenAI-compatible endpoint) on a release's tasks with a strategy. The run "
           "works on the server: you can leave this page and come back. Each finished run is scored automatically; "
           "every model call is cached, so running the same thing again sends no request.")

records = scorable_releases_or_stop(user, "There is no release yet: a curator cuts one on the Releases page "
                                          "before agents can run on it.")
kinds = ar.agent_kinds()
existing = context.attempt(lambda s: ar.list_agent_runs(session=s, actor=user)) or []

with st.expander("Start an agent run", expanded=not existing), st.form(f"agent.{state.form_version('agent')}"):
    c1, c2 = st.columns(2)
    kind = c1.radio("Tasks", [k[0] for k in kinds], format_func=lambda n: next(k[1] for k in kinds if k[0] == n),
                    key="agent.kind")
    version = c2.selectbox("Release", [r.version for r in records], key="agent.release")
    record = next(r for r in records if r.version == version)
    only = st.multiselect("Only these datasets (none chosen: all)", sorted(record.summary), key="agent.only")
    c3, c4 = st.columns(2)
    model = c3.text_input("Model", placeholder="e.g. gpt-4o, llama3.1:8b", key="agent.model")
    base_url = c4.text_input("Endpoint (OpenAI-compatible base URL)", value=cfg.llm_base_url or "",
                             placeholder="e.g. http://localhost:11434/v1", key="agent.base_url",
                             help="The server's own LLM key is sent only to its own endpoint (the default here); "
                                  "another endpoint gets the key an admin configured for it "
                                  "(FORKPATHS_AGENT_ENDPOINT_KEYS), or none.")
    c5, c6, c7 = st.columns(3)
    strategy = c5.radio("Strategy", ["oneshot", "react"], horizontal=True, key="agent.strategy",
                        help="oneshot: one answer from the question, the data dictionary and a sample of rows "
                             "(repaired once). react: the model runs Python on the data in the sandbox, then answers.")
    runs = c6.number_input("Runs per task", min_value=1, max_value=ar.MAX_RUNS_PER_TASK, value=1,
                           key="agent.runs")
    workflow = c7.checkbox("Also write a workflow", key="agent.workflow",
                           help="A narrative per answer from which a person could rewrite the code.")
    st.caption(f"BLADE's coverage@10 needs at least **{ar.COVERAGE_RUNS} runs per dataset**; with fewer, "
               "coverage@10 is not defined (F1 and precision are).")
    c8, c9, c10, c11 = st.columns(4)
    temperature = c8.number_input("Temperature", min_value=0.0, max_value=2.0, value=0.0, step=0.1,
                                  key="agent.temperature")
    seed = c9.number_input("Seed (run i uses seed + i)", min_value=0, value=0, step=1, key="agent.seed")
    steps = c10.number_input("ReAct: tool calls at most", min_value=1, max_value=100, value=12, key="agent.steps")
    agent_name = c11.text_input("Agent name (leaderboard)", placeholder="default: '<strategy> agent #<run>'",
                                key="agent.name",
                                help="Runs with one name and model share a leaderboard row: give an MCQ run the "
                                     "name of an analyses run to show its accuracy beside it. Unnamed, each run "
                                     "is its own agent.")
    go = st.form_submit_button("Start", type="primary")
if go:
    run = context.attempt(lambda s: ar.start_agent_run(
        session=s, actor=user, release_version=version, model=model, base_url=base_url, strategy=strategy,
        runs_per_task=int(runs), kind=kind, workflow=workflow, temperature=float(temperature), seed=int(seed),
        only=only, agent=agent_name, settings=AgentSettings(max_steps=int(steps)), prices=cfg.agent_prices,
        artifacts=cfg.artifact_store()))
    if run is not None:
        jobs.submit(run.job_id or 0)
        state.bump_form("agent")
        state.choose_agent_run(run.id)
        state.flash(f"Agent run {run.id} started: {run.model} ({run.strategy}) on release {run.release_version}, "
                    f"{run.tasks_total} task run(s). It keeps running if you leave this page.")
        st.rerun()

_active = any(r.status in ar.ACTIVE for r in existing)


@st.fragment(run_every=2 if _active else None)  # poll only while a run is queued or running
def runs_panel() -> None:
    runs = context.attempt(lambda s: ar.list_agent_runs(session=s, actor=user)) or []
    if not runs:
        st.info("No agent run yet: start one above.")
        return
    st.dataframe(agent_runs_frame(runs), hide_index=True, width="stretch", key="agent.table", column_config={
        "status": st.column_config.TextColumn(width="small"),
        "progress": st.column_config.ProgressColumn(min_value=0, max_value=1, format="percent", width="small"),
        "cost": st.column_config.TextColumn(help=COST_HELP),
        "created (UTC)": st.column_config.DatetimeColumn(format="YYYY-MM-DD HH:mm")})
    ids = [r.id for r in runs]
    chosen = state.chosen_agent_run()
    pick = st.selectbox("Agent run", ids, index=ids.index(chosen) if chosen in ids else 0,
                        format_func=lambda i: next(f"#{r.id} {r.agent} · {r.model} · {r.strategy} · release "
                                                   f"{r.release_version}" for r in runs if r.id == i))
    state.choose_agent_run(pick)
    run = next(r for r in runs if r.id == pick)
    cost = (f"— (no price set for {run.model}: prices are a setting, FORKPATHS_AGENT_PRICES)" if run.cost is None
            else f"${run.cost:.4f}")
    st.caption(f"{run.prompt_tokens:,} tokens in · {run.completion_tokens:,} out · cost {cost} · {run.calls} "
               f"requests sent · {run.cache_hits} from the cache · temperature {run.temperature:g} · seed {run.seed}"
               f" · templates {', '.join(run.templates.values())}")
    if run.status in ar.ACTIVE:
        st.progress(run.tasks_done / max(run.tasks_total, 1),
                    text=f"{run.status}: {run.tasks_done} of {run.tasks_total} task runs done")
        if st.button("Cancel this run", key="agent.cancel") and context.succeeded(
                lambda s: ar.cancel_agent_run(session=s, actor=user, run_id=pick)):
            state.flash(f"Cancelling agent run {pick}: it stops at the next step of the task under way; finished "
                        "tasks are kept.", "warning")
            st.rerun()
    elif run.status == RunStatus.SUCCEEDED.value:
        rows = context.attempt(lambda s: ar.task_runs(session=s, actor=user, run_id=run.id or 0)) or []
        if all(t.status in ANSWERED for t in rows):
            st.success(md(f"Agent run {run.id} succeeded. {run.message}"))
        else:  # finished and scored, but some task runs got no usable answer: not all good news
            st.warning(md(f"Agent run {run.id} finished, but not every task run got a usable answer. "
                          f"{run.message}"), icon="⚠️")
    else:
        if run.status == RunStatus.CANCELLED.value:  # the user's own gesture, not a failure
            st.info(md(f"Agent run {run.id} was cancelled. {run.message}"), icon="⏹️")
        else:
            st.error(md(f"Agent run {run.id} {run.status}: {run.message}"))
        if st.button("Resume (finished tasks are kept)", key="agent.resume"):
            resumed = context.attempt(lambda s: ar.resume_agent_run(session=s, actor=user, run_id=pick))
            if resumed is not None:
                jobs.submit(resumed.job_id or 0)
                st.rerun()
    c1, c2 = st.columns(2)
    if run.submissions:
        got = context.attempt(lambda s: ar.submission_download(session=s, actor=user, run_id=pick,
                                                               artifacts=cfg.artifact_store()))
        if got is not None:
            c1.download_button("⬇ Generated submission", got[1], file_name=got[0], mime=got[2], key="agent.download",
                              on_click="ignore")
    scored = [i for i in run.scoring_run_ids if i]
    if scored and c2.button(f"Open scored run #{scored[0]}", key="agent.open"):
        state.choose_run(scored[0])
        st.switch_page("app_pages/run_details.py")
    rows = context.attempt(lambda s: ar.task_runs(session=s, actor=user, run_id=pick)) or []
    if not rows:
        return
    st.subheader("Tasks")
    st.dataframe(task_runs_frame(rows), hide_index=True, width="stretch", key="agent.tasks",
                 column_config={"cost": st.column_config.TextColumn(help=COST_HELP)})
    tid = st.selectbox("Transcript of", [t.id for t in rows], key=f"agent.transcript.{pick}",
                       format_func=lambda i: next(f"{t.title or t.task_key} · run {t.replicate + 1} · {t.status}"
                                                  for t in rows if t.id == i))
    messages = context.attempt(lambda s: ar.transcript(session=s, actor=user, task_run_id=tid,
                                                       artifacts=cfg.artifact_store()))
    if messages is not None:
        transcript(messages)


runs_panel()

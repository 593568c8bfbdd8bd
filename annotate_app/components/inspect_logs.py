"""inspect_ai on the Runs and Run details pages: the upload that imports logs as scoring runs, and the transcripts of
a run that came from an agent run or an inspect log."""

from __future__ import annotations

from typing import Any

import streamlit as st

from annotate_app import context, state
from annotate_app.components.transcript_view import transcript
from annotate_app.text import md
from curation.services import agent_runs as ar
from curation.services.inspect_import import STRATEGY, InspectImport, import_inspect_log

__all__ = ["import_panel", "run_transcripts"]


def import_panel(user: Any, cfg: Any, worker: Any) -> None:
    """Upload inspect_ai logs; each is imported in one transaction and its runs are queued for scoring."""
    with st.expander("Import inspect_ai logs"), st.form(f"inspect.{state.form_version('inspect')}"):
        from evaluation.inspect_bridge.answers import inspect_kinds

        st.markdown(
            "Upload the logs of `inspect eval forkpaths/<kind> -T release=<version> --model <provider/model>` "
            "(inspect writes them to `./logs/`, as `.eval` or `.json`; several at once is fine). The kinds it runs: "
            f"{', '.join(f'`forkpaths/{k}`' for k in inspect_kinds())}. The log's release must be one of this "
            "app's releases. Each sample's final answer is scored by the kind's own engine, as an uploaded "
            "submission would be; the model, the task and the log's id and hash are recorded, and the transcripts "
            "are kept. A log run with several epochs gives one run per epoch (for BLADE's coverage@k).")
        logs = st.file_uploader("inspect_ai log(s)", type=["eval", "json"], accept_multiple_files=True,
                                key="runs.inspect.files", max_upload_size=cfg.submission_widget_mb)
        agent = st.text_input("Agent name for these runs", placeholder="default: inspect <solver>, e.g. inspect react",
                              key="runs.inspect.agent")
        go = st.form_submit_button("Import and score", type="primary")
    if not go:
        return
    if not logs:
        st.error("Choose an inspect_ai log (.eval or .json) to import.")
        return
    imported = []
    for f in logs:  # one transaction per log: a bad one is named (context.attempt) and the others go on
        name, data = f.name, f.getvalue()

        def one(s: Any, name: str = name, data: bytes = data) -> InspectImport:
            return import_inspect_log(session=s, actor=user, name=name, data=data, artifacts=cfg.artifact_store(),
                                      max_bytes=cfg.max_submission_bytes, agent=agent,
                                      judges=context.judge_settings(), limits=context.scoring_limits())

        got = context.attempt(one)
        if got is not None:
            for run_id in got.scoring_run_ids:
                worker.submit(run_id)
            imported.append(got)
    for got in imported:
        runs = ", ".join(f"#{i}" for i in got.scoring_run_ids)
        st.success(md(f"{got.log}: {got.samples} sample answer(s) imported; scoring run(s) {runs} queued (agent "
                      f"run {got.agent_run_id})."))
        for problem in got.problems:
            st.warning(md(problem), icon="⚠️")
    if imported:
        state.bump_form("inspect")
        state.choose_run(imported[-1].scoring_run_ids[-1] if imported[-1].scoring_run_ids else None)


def run_transcripts(agent_run_id: int, user: Any, cfg: Any) -> None:
    """The transcripts of the agent run (or inspect log) a scoring run came from, task by task."""
    run = context.attempt(lambda s: ar.get_agent_run(session=s, actor=user, run_id=agent_run_id))
    rows = context.attempt(lambda s: ar.task_runs(session=s, actor=user, run_id=agent_run_id)) or []
    if run is None or not rows:
        return
    st.subheader("Transcripts")
    info = (run.settings or {}).get("inspect") if run.strategy == STRATEGY else None
    if info:
        st.caption(md(f"From the inspect_ai log {info.get('log')}: task {info.get('task')}, model {run.model}, "
                      f"eval id {info.get('eval_id')}, sha256 {str(info.get('log_sha256'))[:16]}…"))
    else:
        st.caption(md(f"From agent run {agent_run_id}: model {run.model}, strategy {run.strategy}."))
    tid = st.selectbox("Transcript of", [t.id for t in rows], key=f"details.transcript.{agent_run_id}",
                       format_func=lambda i: next(f"{t.title or t.task_key} · run {t.replicate + 1} · {t.status}"
                                                  for t in rows if t.id == i))
    if tid is None:
        return
    messages = context.attempt(lambda s: ar.transcript(session=s, actor=user, task_run_id=tid,
                                                       artifacts=cfg.artifact_store()))
    if messages is not None:
        transcript(messages)

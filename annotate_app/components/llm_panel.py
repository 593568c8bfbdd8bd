"""Curators generate LLM alternatives for the dataset under review. Generation is a background job (a worker
on PostgreSQL, a thread of the app on SQLite): the panel shows its live progress and a Cancel button, a reload
shows it still running, and its report stays on the page until dismissed. Without an endpoint the panel says how
to configure one and the rest of the page works as before."""

from __future__ import annotations

import streamlit as st

from annotate_app import context
from annotate_app.text import md
from curation.models import BackgroundJob, RunStatus, User
from curation.services.analyses.llm_alternatives import JOB_KIND, generation_summary, start_generation
from curation.services.background_jobs import ACTIVE, cancel_job, dismiss_job, interrupt_dead_jobs, latest_job
from curation.services.hypotheses.llm import JOB_KIND as HYPOTHESIS_JOB
from curation.services.hypotheses.llm import hypothesis_generation_summary, start_hypothesis_generation

#: what the panel generates: BLADE alternatives (default) or hypotheses for a DiscoveryBench dataset's queries
KINDS = {
    JOB_KIND: ("LLM alternatives (curators)", "Generate alternatives for", start_generation, generation_summary),
    HYPOTHESIS_JOB: ("LLM hypotheses (curators)", "Generate hypotheses for the queries of", start_hypothesis_generation,
                     hypothesis_generation_summary),
}

HOW_TO = """No LLM endpoint is configured, so alternatives cannot be generated yet (everything else works).
Set these in the environment or in `.env` and restart forkpaths:

```
FORKPATHS_LLM_BASE_URL=https://api.openai.com/v1   # or http://localhost:11434/v1 (Ollama),
                                                   # http://localhost:8000/v1 (vLLM), http://localhost:1234/v1 (LM Studio)
FORKPATHS_LLM_MODEL=gpt-4o-mini
FORKPATHS_LLM_API_KEY=sk-...                       # only if the endpoint needs one
```
Or from a terminal: `forkpaths alternatives generate DATASET`."""

POLL_S = 1.0


def _latest(dataset_id: int, kind: str = JOB_KIND) -> BackgroundJob | None:
    def read(s):  # type: ignore[no-untyped-def]
        interrupt_dead_jobs(session=s)  # a generation whose process died does not stay "running"
        return latest_job(session=s, kind=kind, scope=f"dataset:{dataset_id}")

    return context.attempt(read)


def _show_job(user: User, job: BackgroundJob) -> None:
    if job.status in ACTIVE:
        done, total = job.progress_done, job.progress_total
        stopping = " · cancelling after this seed" if job.cancel_requested else ""
        st.progress(done / total if total else 0.0,
                    text=f"Generation {job.status}: {done}/{total} · {job.stage or 'queued'}{stopping}")
        if not job.cancel_requested and st.button("Cancel the generation", key="llm.cancel") and context.succeeded(
                lambda s: cancel_job(session=s, actor=user, job_id=job.id or 0)):
            st.rerun()
        return
    if job.dismissed_at is not None:
        return
    # the last generation's report stays here until the curator dismisses it
    if job.result and job.status in (RunStatus.SUCCEEDED.value, RunStatus.CANCELLED.value):
        kind, text = KINDS.get(job.kind, KINDS[JOB_KIND])[3](job.result)
        getattr(st, kind)(md(text))
    else:
        st.error(md(f"The generation {job.status}: {job.message}"))
    if st.button("Dismiss this report", key="llm.dismiss") and context.succeeded(
            lambda s: dismiss_job(session=s, actor=user, job_id=job.id or 0)):
        st.rerun()


def render_llm_panel(user: User, dataset_id: int, dataset_name: str, kind: str = JOB_KIND) -> None:
    title, action, start, _ = KINDS[kind]
    settings = context.settings()
    config = settings.llm_config()
    context.job_runner()  # on SQLite: the app's job threads start (and take up generations still queued)
    first = _latest(dataset_id, kind)
    active = first is not None and first.status in ACTIVE
    shown = first is not None and (active or first.dismissed_at is None)
    with st.expander(title, expanded=shown):

        @st.fragment(run_every=POLL_S if active else None)  # poll only while a generation is queued or running
        def job_panel() -> None:
            job = _latest(dataset_id, kind)
            if job is not None:
                _show_job(user, job)
                if active and job.status not in ACTIVE:  # it ended: redraw the page (stops the polling)
                    st.rerun()

        job_panel()
        if not config.configured:
            st.info(HOW_TO)
            return
        st.caption(f"Model `{config.model}` at {config.base_url}. Answers are cached: generating again sends "
                   "nothing and adds only what is not stored yet. Generation runs in the background: you may leave "
                   "this page.")
        if not st.button(f"{action} {dataset_name}", key="llm.generate", type="primary"):
            return
        try:
            with context.db() as session:  # the checks and the job's row: one transaction, committed here
                job_id = start(session=session, actor=user, dataset_id=dataset_id)
            context.job_runner().submit(job_id)
        except Exception as exc:  # noqa: BLE001 - the one helper shows it
            context.show_error(exc)
            return
        st.rerun()

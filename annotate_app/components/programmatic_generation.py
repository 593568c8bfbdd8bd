"""The LLM generation panel of the Programmatic checks page: a background job per task (a worker on PostgreSQL,
a thread of the app on SQLite). While it runs the panel shows its progress and a Cancel button and the rest of the
page stays usable; a reload shows it still running; its report (with each sample's outcome and code) stays
until dismissed."""

from __future__ import annotations

from typing import Any

import streamlit as st

from annotate_app import context
from annotate_app.text import md
from curation.models import BackgroundJob, RunStatus, User
from curation.services.background_jobs import ACTIVE, cancel_job, dismiss_job, interrupt_dead_jobs, latest_job
from curation.services.programmatic import TaskView
from curation.services.programmatic_generation import (
    JOB_KIND,
    MAX_SAMPLES,
    MIN_SAMPLES,
    generation_report,
    scope_of,
    start_candidate_generation,
)

__all__ = ["render_generate"]

POLL_S = 1.0
HOW_TO = ("No LLM endpoint is configured, so candidates cannot be generated (everything else on this page works). "
          "Set `FORKPATHS_LLM_BASE_URL` and `FORKPATHS_LLM_MODEL` (and `FORKPATHS_LLM_API_KEY` if the endpoint "
          "needs one) in the environment or `.env`, then restart forkpaths.")


def _latest(task_id: int) -> BackgroundJob | None:
    def read(s):  # type: ignore[no-untyped-def]
        interrupt_dead_jobs(session=s)  # a generation whose process died does not stay "running"
        return latest_job(session=s, kind=JOB_KIND, scope=scope_of(task_id))

    return context.attempt(read)


def _samples(result: dict[str, Any]) -> None:
    runs, codes = result.get("runs") or [], result.get("solutions") or []
    if not codes:
        return
    with st.expander(f"The {len(codes)} candidate solutions and what each wrote"):
        for n, code in enumerate(codes):
            run = runs[n] if n < len(runs) else {}
            what = (f"✅ ran, wrote {', '.join(run.get('files') or []) or 'nothing'}" if run.get("ok")
                    else f"❌ failed: {run.get('error', '?')}")
            st.markdown(f"**Sample {n + 1}** · {md(what)}")
            st.code(code, language="python")


def _show(user: User, job: BackgroundJob) -> None:
    if job.status in ACTIVE:
        done, total = job.progress_done, job.progress_total
        stopping = " · cancelling at the next step" if job.cancel_requested else ""
        st.progress(done / total if total else 0.0,
                    text=f"Generation {job.status}: step {done} of {total} · {job.stage or 'queued'}{stopping}")
        if not job.cancel_requested and st.button("Cancel the generation", key="prog.gen.cancel") and \
                context.succeeded(lambda s: cancel_job(session=s, actor=user, job_id=job.id or 0)):
            st.rerun()
        return
    if job.dismissed_at is not None:
        return
    if job.result and job.status in (RunStatus.SUCCEEDED.value, RunStatus.CANCELLED.value):
        kind, text = generation_report(job.result)
        getattr(st, kind)(md(text))
        for err in job.result.get("errors") or []:
            st.caption(f"A sample failed: {md(err)}")
        _samples(job.result)
    else:
        st.error(md(f"The generation {job.status}: {job.message} Nothing was stored."))
    if st.button("Dismiss this report", key="prog.gen.dismiss") and context.succeeded(
            lambda s: dismiss_job(session=s, actor=user, job_id=job.id or 0)):
        st.rerun()


def render_generate(user: User, view: TaskView, cfg: Any) -> None:
    """The panel for one task (curators and admins)."""
    task_id = view.task.id or 0
    config = cfg.llm_config()
    context.job_runner()  # on SQLite: the app's job threads start (and take up generations still queued)
    first = _latest(task_id)
    active = first is not None and first.status in ACTIVE
    shown = first is not None and (active or first.dismissed_at is None)
    with st.expander("🤖 Propose candidates with the LLM (self-consistency)", expanded=shown):
        st.caption("The LLM writes N solutions; each runs in the sandbox on the task's input files. Output files "
                   "on which a strict majority (at least two) of the samples that ran agree become candidate "
                   "artifacts; the LLM then proposes checks. Everything awaits the analysts' votes. It runs in the "
                   "background: you may leave this page.")

        @st.fragment(run_every=POLL_S if active else None)  # poll only while a generation is queued or running
        def job_panel() -> None:
            job = _latest(task_id)
            if job is not None:
                _show(user, job)
                if active and job.status not in ACTIVE:  # it ended: redraw the page (new candidates, no polling)
                    st.rerun()

        job_panel()
        if not config.configured:
            st.info(HOW_TO)
            return
        if active:
            return
        c1, c2 = st.columns([1, 3], vertical_alignment="bottom")
        samples = c1.number_input("Samples", MIN_SAMPLES, MAX_SAMPLES, 3, key="prog.samples")
        if not c2.button(f"Generate candidates for {view.task.key}", key="prog.generate", type="primary"):
            return
        try:
            with context.db() as session:  # the checks and the job's row: one transaction, committed here
                job_id = start_candidate_generation(session=session, actor=user, task_id=task_id,
                                                    samples=int(samples), store=cfg.datasets_store)
            context.job_runner().submit(job_id)
        except Exception as exc:  # noqa: BLE001 - the one helper shows it
            context.show_error(exc)
            return
        st.rerun()

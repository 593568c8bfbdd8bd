"""Scoring runs (evaluators, curators, admins): upload a submission, score it in the background, follow it."""

import pandas as pd
import streamlit as st

from annotate_app import context, state
from annotate_app.components.inspect_logs import import_panel
from annotate_app.components.release_choice import scorable_releases_or_stop
from annotate_app.text import md
from curation.models import Role, RunStatus
from curation.services.reproducibility import reproduce_run
from curation.services.scoring import (
    cancel_run,
    default_judge,
    interrupt_dead_runs,
    items_noun,
    judge_choices,
    kind_names,
    kind_of,
    list_runs,
    register_run,
    rescore_run,
    set_official,
)
from evaluation.tasks.base import count_of

user = context.require_user(Role.EVALUATOR, Role.CURATOR, Role.ADMIN)
cfg = context.settings()
worker = context.run_worker()
st.title("🏁 Scoring runs")
st.caption(f"Score an agent's submission ({', '.join(kind_of(n).label.split(' (')[0] for n in kind_names())}) "
           "against a release. Scoring runs on the server: you can leave this page and come back. Each run keeps its "
           "submission, the release and ground-truth hashes, the judge and the mode it was scored with.")

records = scorable_releases_or_stop(user, "There is no release yet: a curator cuts one on the Releases page "
                                          "before runs can be scored.")
versions = [r.version for r in records]

# what each judge is, for the help of the judge field (only the judges a kind may use are offered)
JUDGE_HELP = {"offline": "no LLM, rules and static analysis", "llm": "BLADE's prompts (needs FORKPATHS_LLM_*)",
              "hms": "DiscoveryBench's hypothesis matching (needs FORKPATHS_LLM_*)"}

with st.expander("Score a submission", expanded=True):
    # outside the form: the fields below are those the chosen kind declares (a form sends nothing before its button)
    kind = st.radio("What to score", kind_names(), horizontal=True, key="runs.kind",
                    format_func=lambda k: kind_of(k).label)
    task, judges = kind_of(kind), judge_choices(kind)
    with st.form(f"score.{state.form_version('score')}"):
        files = st.file_uploader("Submission file(s)", type=["json", "jsonl", "csv", "zip"],
                                 accept_multiple_files=True, key="runs.files", max_upload_size=cfg.submission_widget_mb)
        c1, c2, c3 = st.columns(3)
        agent = c1.text_input("Agent", placeholder="e.g. ReAct agent")
        model_name = c2.text_input("Language model", placeholder="e.g. gpt-4o")
        version = c3.selectbox("Release", versions)
        # the judge, mode and k only where the kind has a choice of them
        shown = iter(st.columns(3) if len(judges) > 1 or len(task.modes) > 1 or task.uses_k else [])
        judge = next(shown).radio("Judge", judges, horizontal=True, help="; ".join(
            f"{j}: {JUDGE_HELP[j]}" for j in judges if j in JUDGE_HELP)) if len(judges) > 1 else default_judge(kind)
        mode = next(shown).radio("Mode", task.modes, horizontal=True, help=(
            f"{task.modes[0]} fixes the upstream defects; {', '.join(task.modes[1:])} reproduce"
            f"{'s' if len(task.modes) == 2 else ''} them to compare with published numbers")
        ) if len(task.modes) > 1 else (task.modes or ("default",))[0]
        k = next(shown).number_input("k (coverage@k)", min_value=1, max_value=1000, value=10) if task.uses_k else 10
        if len(judges) == 1:
            st.caption(f"Judged by {judges[0]}" + (f" ({JUDGE_HELP[judges[0]]})" if judges[0] in JUDGE_HELP else "")
                       + ", the judge of this kind of task.")
        llm_model = st.text_input(
            f"{task.llm_role.capitalize()} model", placeholder=cfg.llm_model or "FORKPATHS_LLM_MODEL",
            help="the model these runs ask; any model at the configured endpoint (default: FORKPATHS_LLM_MODEL)",
        ) if task.llm_role else ""
        go = st.form_submit_button("Score", type="primary")
if go:
    run = context.attempt(lambda s: register_run(
        session=s, actor=user, release_version=version, files=[(f.name, f.getvalue()) for f in files or []],
        agent=agent, model_name=model_name, judge=judge, mode=mode, k=int(k), kind=kind,
        artifacts=cfg.artifact_store(), max_bytes=cfg.max_submission_bytes, judges=context.judge_settings(),
        limits=context.scoring_limits(), llm_model=llm_model))
    if run is not None:
        worker.submit(run.id or 0)
        state.bump_form("score")
        state.choose_run(run.id)
        state.flash(f"Run {run.id} queued: {run.agent} on release {run.release_version}, "
                    f"{count_of(run.progress_total, items_noun(run.kind))} to score. It keeps running if you leave "
                    "this page.")
        st.rerun()

import_panel(user, cfg, worker)

ACTIVE = {RunStatus.QUEUED.value, RunStatus.RUNNING.value}
RETRYABLE = {RunStatus.INTERRUPTED.value, RunStatus.FAILED.value, RunStatus.CANCELLED.value}


def _table(runs: list) -> pd.DataFrame:
    return pd.DataFrame([{
        "run": r.id, "status": r.status, "progress": r.progress_done / max(r.progress_total, 1), "agent": r.agent,
        "model": r.model_name, "release": r.release_version, "kind": r.kind, "judge": r.judge.get("name", ""),
        "mode": r.mode, "official": r.official, "created (UTC)": r.created_at, "message": r.message or r.stage}
        for r in runs])


_active = context.attempt(lambda s: any(r.status in ACTIVE for r in list_runs(session=s, actor=user))) or False


@st.fragment(run_every=2 if _active else None)  # poll only while something is queued or running
def runs_panel() -> None:
    context.attempt(lambda s: interrupt_dead_runs(session=s))  # a run whose scorer died does not stay "running"
    runs = context.attempt(lambda s: list_runs(session=s, actor=user)) or []
    if not runs:
        st.info("No runs yet: upload a submission above.")
        return
    st.dataframe(_table(runs), hide_index=True, width="stretch", key="runs.table", column_config={
        "progress": st.column_config.ProgressColumn(min_value=0, max_value=1, format="percent"),
        "created (UTC)": st.column_config.DatetimeColumn(format="YYYY-MM-DD HH:mm")})
    ids = [r.id for r in runs]
    chosen = state.chosen_run()
    # no key: a new run (new options) makes a new widget that starts on the run just chosen
    pick = st.selectbox("Run", ids, index=ids.index(chosen) if chosen in ids else 0,
                        format_func=lambda i: next(f"#{r.id} {r.agent} · {r.model_name or '-'} · release {r.release_version}"
                                                   for r in runs if r.id == i))
    state.choose_run(pick)
    run = next(r for r in runs if r.id == pick)
    if run.status in ACTIVE:
        st.progress(run.progress_done / max(run.progress_total, 1),
                    text=f"{run.status}: {run.stage} ({run.progress_done}/{run.progress_total})")
        if st.button("Cancel this run", key="runs.cancel") and context.succeeded(
                lambda s: cancel_run(session=s, actor=user, run_id=pick)):
            state.flash(f"Cancelling run {pick}: it stops after the analysis it is scoring.", "warning")
            st.rerun()
    elif run.status == RunStatus.SUCCEEDED.value:
        st.success(f"Run {run.id} succeeded ({count_of(run.progress_done, items_noun(run.kind))} scored). Open it on the Leaderboard or in Run "
                   "details.")
        if run.message:  # a limit cost analyses their scores (timeouts, the run's time budget)
            st.warning(md(run.message))
    else:
        st.error(f"Run {run.id} {run.status}: {md(run.message)}")
    c1, c2, c3 = st.columns(3)
    latest = versions[0]
    # an interrupted, failed or cancelled run can be scored again on its own release; any ended run on a newer one
    offers = [v for v in ([run.release_version] if run.status in RETRYABLE else [])
              + ([latest] if run.status not in ACTIVE and run.release_version != latest else [])]
    for column, target in zip((c1, c3), offers, strict=False):
        label = "Re-score" if target == run.release_version else f"Re-score on release {target}"
        if column.button(label, key=f"runs.rescore.{target}"):
            new = context.attempt(lambda s, v=target: rescore_run(
                session=s, actor=user, run_id=pick, release_version=v,
                artifacts=cfg.artifact_store(), max_bytes=cfg.max_submission_bytes,
                judges=context.judge_settings(), limits=context.scoring_limits()))
            if new is not None:
                worker.submit(new.id or 0)
                state.choose_run(new.id)
                state.flash(f"Run {new.id} queued: run {pick} re-scored on release {new.release_version} "
                            f"(run {pick} is kept).")
                st.rerun()
    task = kind_of(run.kind)
    # ranked runs (their analyses may carry workflows) and runs of kinds that ask a model (re-judged)
    checkable = task.leaderboard.role == "ranked" or bool(task.llm_role)
    if run.status == RunStatus.SUCCEEDED.value and checkable and c1.button(
            "Check reproducibility", key="runs.reproduce",
            help="an inspector model redoes each analysis that carries a workflow from the workflow alone (needs "
                 "FORKPATHS_LLM_*); an imported AIRepr run is re-judged"):
        new = context.attempt(lambda s: reproduce_run(
            session=s, actor=user, run_id=pick, artifacts=cfg.artifact_store(),
            max_bytes=cfg.max_submission_bytes, judges=context.judge_settings(), limits=context.scoring_limits()))
        if new is not None:
            worker.submit(new.id or 0)
            state.choose_run(new.id)
            state.flash(f"Run {new.id} queued: the reproducibility of run {pick} "
                        f"({count_of(new.progress_total, items_noun(new.kind))}).")
            st.rerun()
    if user.role in (Role.CURATOR.value, Role.ADMIN.value) and run.status == RunStatus.SUCCEEDED.value:
        label = "Remove the official mark" if run.official else "Mark as official"
        if c2.button(label, key="runs.official") and context.succeeded(
                lambda s: set_official(session=s, actor=user, run_id=pick, official=not run.official)):
            st.rerun(scope="app")
    with st.expander("Provenance"):
        st.json({"submission_sha256": run.submission_sha256, "files": run.submission_files,
                 "release": run.release_version, "release_sha256": run.release_sha256, "ground_truth_hash": run.ground_truth_hash,
                 "dataset_hashes": run.dataset_hashes, "evaluator_version": run.evaluator_version,
                 "judge": run.judge, "transform_matcher": run.transform_matcher, "mode": run.mode, "k": run.k,
                 "source": run.source, "rescore_of": run.rescore_of_id, "started_at": str(run.started_at),
                 "finished_at": str(run.finished_at), "result": run.result_path,
                 "result_sha256": run.result_sha256})


runs_panel()

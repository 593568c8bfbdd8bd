"""Stage 1 of a DiscoveryBench dataset on the Annotate page: per query, the analyst's own hypothesis (context,
variables grounded in the data dictionary, relationship, workflow) with its supporting code run in the sandbox;
then submitting them all. The data dictionary stays in view; a half-written hypothesis is kept as a draft."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from annotate_app import context, state
from annotate_app.components import check_result
from annotate_app.components.drafts import Draft
from annotate_app.components.hypothesis_review import query_label
from annotate_app.components.transform_form import limits
from annotate_app.text import md
from curation.models import Dataset, HypothesisProposal, User
from curation.services.discoverybench_import import HypothesisTaskView
from curation.services.hypotheses import (
    HypothesisInput,
    HypothesisVariableInput,
    OwnHypotheses,
    delete_hypothesis,
    save_hypothesis,
    start_hypothesis_check,
    submit_hypotheses,
)

DERIVED = "(derived: say how)"
MAX_VARIABLES = 8
FIELDS = ["hypothesis", "context", "relationship", "workflow", "code", "n_vars",
          *(f"v{i}.{p}" for i in range(MAX_VARIABLES) for p in ("name", "column", "derived"))]


def _defaults(saved: HypothesisProposal | None) -> dict[str, Any]:
    data: dict[str, Any] = {"hypothesis": "", "context": "", "relationship": "", "workflow": "", "code": "",
                            "n_vars": 2, "sanity_check": None}
    for i in range(MAX_VARIABLES):
        data |= {f"v{i}.name": "", f"v{i}.column": DERIVED, f"v{i}.derived": ""}
    if saved is not None:
        data |= {"hypothesis": saved.hypothesis, "context": saved.context, "relationship": saved.relationship,
                 "workflow": saved.workflow, "code": saved.code, "n_vars": max(1, len(saved.variables)),
                 "sanity_check": saved.check}
        for i, v in enumerate(saved.variables[:MAX_VARIABLES]):
            data |= {f"v{i}.name": v.get("name", ""), f"v{i}.column": v.get("column") or DERIVED,
                     f"v{i}.derived": v.get("derived", "")}
    return data


def dictionary_table(dataset: Dataset, files: tuple[str, ...]) -> pd.DataFrame:
    rows = [{"column": e.get("column"), "file": e.get("file", ""),
             "description": (e.get("properties") or {}).get("description", "")}
            for e in dataset.dictionary if not files or not e.get("file") or e.get("file") in files]
    return pd.DataFrame(rows, columns=["column", "file", "description"])


def _input(draft: Draft) -> HypothesisInput:
    d = draft.data
    variables = []
    for i in range(int(d.get("n_vars") or 1)):
        column = d.get(f"v{i}.column")
        variables.append(HypothesisVariableInput(name=d.get(f"v{i}.name", ""),
                                                 column=None if column in (None, DERIVED) else column,
                                                 derived=d.get(f"v{i}.derived", "")))
    return HypothesisInput(hypothesis=d["hypothesis"], context=d["context"], variables=variables,
                           relationship=d["relationship"], workflow=d["workflow"], code=d["code"])


def _run_check(draft: Draft, user: User, task_id: int, prefix: str) -> None:
    code = draft.capture(FIELDS)["code"]
    store = context.settings().datasets_store

    def begin() -> Any:
        with context.db() as session:
            return start_hypothesis_check(session=session, actor=user, task_id=task_id, code=code, store=store,
                                          limits=limits())

    def done(check: dict[str, Any]) -> None:
        draft.capture(FIELDS)
        draft.load({"sanity_check": check})

    check_result.start(prefix, begin, code=code, limit_s=limits().timeout_s, on_done=done)


def _show_saved(h: HypothesisProposal) -> None:
    st.markdown(f"**Hypothesis:** {md(h.hypothesis)}  \n**Context:** {md(h.context)}  \n"
                f"**Relationship:** {md(h.relationship)}")
    st.dataframe(pd.DataFrame(h.variables, columns=["name", "column", "derived"]), hide_index=True, width="stretch")
    st.markdown(f"**Workflow:** {md(h.workflow)}")
    if h.code:
        st.code(h.code, language="python")
        check_result.render_supporting(h.check)


def _form(user: User, dataset: Dataset, task: HypothesisTaskView, saved: HypothesisProposal | None) -> None:
    prefix = f"hy{task.id}"
    draft = Draft(prefix, _defaults(saved), server=(user, f"annotate.{dataset.id}.hyp.{task.id}"))
    columns = list(dictionary_table(dataset, task.data_files)["column"])
    hypothesis = st.text_area("Hypothesis (the statement the data supports)", value=draft.value("hypothesis"),
                              key=draft.key("hypothesis"), height=80,
                              placeholder="e.g. In US adults, BMI rises with age by about 0.1 kg/m² a year.")
    context_ = st.text_input("Context (where it holds: population, place, period)", value=draft.value("context"),
                             key=draft.key("context"))
    st.markdown("**Variables** — each a column of the data dictionary, or a derived column and how it is derived")
    n_vars = int(st.number_input("Number of variables", 1, MAX_VARIABLES, int(draft.value("n_vars") or 1),
                                 key=draft.key("n_vars")))
    values: dict[str, Any] = {}
    for i in range(n_vars):
        c1, c2, c3 = st.columns([2, 2, 3])
        values[f"v{i}.name"] = c1.text_input(f"Variable {i + 1}: name", value=draft.value(f"v{i}.name"),
                                             key=draft.key(f"v{i}.name"))
        options = [DERIVED, *columns]
        current = draft.value(f"v{i}.column")
        values[f"v{i}.column"] = c2.selectbox(f"Variable {i + 1}: column", options,
                                              index=options.index(current) if current in options else 0,
                                              key=draft.key(f"v{i}.column"))
        values[f"v{i}.derived"] = c3.text_input(f"Variable {i + 1}: how it is derived (for a derived column)",
                                                value=draft.value(f"v{i}.derived"), key=draft.key(f"v{i}.derived"))
    relationship = st.text_input("Relationship (how the variables relate: direction, size, form)",
                                 value=draft.value("relationship"), key=draft.key("relationship"))
    workflow = st.text_area("Workflow (the steps from the data to the hypothesis)", value=draft.value("workflow"),
                            key=draft.key("workflow"), height=90)
    first = f"`{task.data_files[0]}`" if task.data_files else "the data"
    others = (f"; every data file of the query ({', '.join(task.data_files)}) is in its working folder by name"
              if len(task.data_files) > 1 else "")
    code = st.text_area(f"Supporting code (optional; runs on {first} as `df`{others}; with `pd`, `np` and "
                        "statsmodels)", value=draft.value("code"), key=draft.key("code"), height=120)
    st.caption("What the code prints (a table, a test, a fitted model's summary) is kept with the hypothesis. "
               "It must run without error; it need not fit a model.")
    st.button("▶ Run the code on the data", key=f"{prefix}.check", on_click=_run_check,
              args=(draft, user, task.id, prefix), disabled=not code.strip())
    if not check_result.running(prefix):
        check_result.render_supporting(draft.data.get("sanity_check"))
    draft.keep({"hypothesis": hypothesis, "context": context_, "relationship": relationship, "workflow": workflow,
                "code": code, "n_vars": n_vars, **values})
    row = st.container(horizontal=True)
    if row.button("Save hypothesis", type="primary", key=f"{prefix}.save"):
        draft.capture(FIELDS)
        data = _input(draft)
        if context.attempt(lambda s: save_hypothesis(session=s, actor=user, task_id=task.id, data=data,
                                                      check=draft.data.get("sanity_check"))) is not None:
            _forget(draft)
            state.flash(f"Saved your hypothesis for query {query_label(task)}.", where=prefix)
            st.rerun()
    if saved is not None and row.button("Delete my hypothesis", key=f"{prefix}.delete"):
        if context.succeeded(lambda s: delete_hypothesis(session=s, actor=user, task_id=task.id)):
            _forget(draft)
            st.rerun()
    context.show_flash(prefix)


def _forget(draft: Draft) -> None:
    """After a save or delete: drop the draft (here and on the server), so the form starts from what is saved."""
    draft.reset()
    st.session_state.pop(f"fp.draft.{draft.name}", None)


def _marker(task: HypothesisTaskView, mine: OwnHypotheses) -> str:
    if not task.needs_curation:
        return "🏅 gold imported"
    return "✅ written" if task.id in mine.by_task else "✏️ to write"


def render_hypothesis_stage1(user: User, dataset: Dataset, tasks: list[HypothesisTaskView],
                             mine: OwnHypotheses) -> None:
    st.markdown(f"#### ❓ {md(dataset.research_question)}")
    locked = mine.submitted
    if locked and mine.analysis is not None and mine.analysis.submitted_at is not None:
        st.success(f"You submitted your hypotheses on {mine.analysis.submitted_at:%Y-%m-%d %H:%M} UTC; they are "
                   "locked. Stage 2 (reviewing peers' hypotheses) is on the Review page once the curator opens it.")
    else:
        st.caption("Your hypotheses are private: no peer sees them, and you see none of theirs, until you submit.")
    to_curate = [t for t in tasks if t.needs_curation]
    st.caption(f"{len(tasks)} queries · {len(to_curate)} to curate · you wrote {len(mine.by_task)}")
    by_id = {t.id: t for t in tasks}
    task_id = st.selectbox("Query", list(by_id), key=f"hyp.task.{dataset.id}",
                           format_func=lambda i: f"{query_label(by_id[i])} · {by_id[i].question[:80]} · "
                                                 f"{_marker(by_id[i], mine)}")
    task = by_id[task_id]
    with st.container(border=True):
        st.markdown(f"**Query {query_label(task)}** ({md(task.question_type or 'general')}): "
                    f"{md(task.question)}")
        if task.domain_knowledge:
            st.caption(f"Domain knowledge: {task.domain_knowledge}")
        st.caption("Data files: " + ", ".join(task.data_files))
    with st.expander("Data dictionary of this query's data", expanded=True):
        st.dataframe(dictionary_table(dataset, task.data_files), hide_index=True, width="stretch")
    saved = mine.by_task.get(task.id)
    if not task.needs_curation:
        st.info("This query came with its gold hypothesis; nothing to curate here.")
    elif locked:
        if saved is not None:
            _show_saved(saved)
        else:
            st.info("You submitted without a hypothesis for this query.")
    else:
        _form(user, dataset, task, saved)
    if not locked:
        _submit(user, dataset, to_curate, mine)


def _submit(user: User, dataset: Dataset, to_curate: list[HypothesisTaskView], mine: OwnHypotheses) -> None:
    st.divider()
    st.markdown("##### Submit")
    missing = [t for t in to_curate if t.id not in mine.by_task]
    st.write("Submitting locks your hypotheses and lets you review peers' ones in stage 2.")
    if missing:
        st.warning("No hypothesis of yours yet for: " + ", ".join(query_label(t) for t in missing)
                   + ". After submitting you can no longer write one blind.")
    confirm = st.checkbox("I have finished my hypotheses for this dataset", key=f"hyp.confirm.{dataset.id}")
    if st.button("Submit my hypotheses", type="primary", disabled=not confirm, key=f"hyp.submit.{dataset.id}"):
        if context.attempt(lambda s: submit_hypotheses(session=s, actor=user, dataset_id=dataset.id or 0)):
            state.flash("Hypotheses submitted and locked. Thank you!", where="hyp.submit")
            st.rerun()
    context.show_flash("hyp.submit")

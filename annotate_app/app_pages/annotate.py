"""Stage 1: record one's own analysis of a dataset, blind to peers, then submit it."""

import streamlit as st

from annotate_app import context, state
from annotate_app.components.charts import decision_graph_figure
from annotate_app.components.context_pane import render_context
from annotate_app.components.hypothesis_stage1 import render_hypothesis_stage1
from annotate_app.components.model_form import render_models
from annotate_app.components.transform_form import render_transforms
from annotate_app.components.variable_form import render_variables
from annotate_app.text import md, plural
from curation.graph import analysis_graph
from curation.services.annotation import get_own_decisions, pending_checks, submit_analysis
from curation.services.datasets import dataset_data_path, list_datasets
from curation.services.discoverybench_import import list_hypothesis_tasks
from curation.services.hypotheses import is_hypothesis_dataset, own_hypotheses

user = context.require_user()
st.title("✍️ Annotate")

datasets = context.attempt(lambda s: list_datasets(session=s, actor=user, only_assigned=True)) or []
if not datasets:
    st.info("You are not assigned to any dataset yet; an admin assigns analysts to datasets.")
    st.stop()
by_id = {d.id: d for d in datasets}
previous = state.get(state.DATASET_ID)
dataset_id = st.selectbox("Dataset", list(by_id), format_func=lambda i: by_id[i].name,
                          index=list(by_id).index(previous) if previous in by_id else 0, key="annotate.dataset")
if dataset_id != previous:
    state.reset_drafts()
    state.put(state.DATASET_ID, dataset_id)
dataset = by_id[dataset_id]

if context.attempt(lambda s: is_hypothesis_dataset(s, dataset)):  # a DiscoveryBench folder: hypotheses per query
    tasks = context.attempt(lambda s: list_hypothesis_tasks(session=s, actor=user, dataset_id=dataset_id))
    mine = context.attempt(lambda s: own_hypotheses(session=s, actor=user, dataset_id=dataset_id))
    if tasks is not None and mine is not None:
        render_hypothesis_stage1(user, dataset, tasks, mine)
    st.stop()

decisions = context.attempt(lambda s: get_own_decisions(session=s, actor=user, dataset_id=dataset_id))
locked = bool(decisions and decisions.submitted)
try:
    data_path = str(dataset_data_path(dataset, context.settings().datasets_store))
except Exception as exc:  # noqa: BLE001 - the one helper shows it
    context.show_error(exc)
    st.stop()
render_context(dataset, data_path)

if locked:
    st.success(f"You submitted this analysis on {decisions.analysis.submitted_at:%Y-%m-%d %H:%M} UTC; it is locked.")
else:
    st.caption("Your analysis is private: no peer sees it, and you see none of theirs, until you submit.")

n_v, n_t, n_m = (len(decisions.variables), len(decisions.transforms), len(decisions.models)) if decisions else (0, 0, 0)
st.caption(f"Recorded so far: {plural(n_v, 'conceptual variable')} · {plural(n_t, 'transform')} · "
           f"{plural(n_m, 'model')}")
# Static tab labels: a label that changes (e.g. with a count) would send the analyst back to the first tab.
tabs = st.tabs(["Conceptual variables", "Transforms", "Models", "Graph", "Submit"], key="annotate.tab",
               on_change="rerun")
with tabs[0]:
    render_variables(user, dataset_id, decisions, dataset, locked)
with tabs[1]:
    render_transforms(user, dataset_id, decisions, locked, dataset)
with tabs[2]:
    render_models(user, dataset_id, decisions, dataset, locked)
with tabs[3]:
    if decisions and (decisions.transforms or decisions.models):
        graph = analysis_graph(decisions.dataset, decisions.variables, decisions.transforms, decisions.models)
        st.plotly_chart(decision_graph_figure(graph), width="stretch", key="annotate.graph")
        st.caption("original columns (○) → transforms (◆) → derived columns (●) → models (★); the conceptual "
                   "variables (■) are drawn next to the columns that operationalise them. Every alternative "
                   "branch is drawn; hover a node for its details.")
    elif locked:
        st.info("Nothing recorded: this analysis was submitted without transforms or models, so there is no "
                "graph to draw.")
    else:
        st.info("Record transforms or models to see how your analysis flows.")
with tabs[4]:
    if locked:
        st.info("Submitted. Stage 2 (reviewing peers' decisions) opens once the curator starts it; "
                "you will find it on the Review page.")
    else:
        st.write("Submitting locks your stage-1 analysis: you can no longer edit or delete its decisions. "
                 "It needs at least an IV, a DV and one model, and every transform and model must pass its "
                 "sanity check on its current code.")
        todo = pending_checks(decisions) if decisions else []
        if decisions and (decisions.transforms or decisions.models) and not todo:
            st.caption("✅ Every transform and model passed its sanity check on its current code.")
        if todo:
            st.warning("Still to check (run the check in its tab, then save it):  \n" + "  \n".join(
                f"- {c.kind} **{md(c.name)}**: {c.reason}" for c in todo))
        confirm = st.checkbox("I have finished my analysis of this dataset", key="annotate.confirm")
        if st.button("Submit my analysis", type="primary", disabled=not confirm, key="annotate.submit"):
            if context.attempt(lambda s: submit_analysis(session=s, actor=user, dataset_id=dataset_id)):
                state.flash("Analysis submitted and locked. Thank you!", where="submit")
                st.rerun()
    context.show_flash("submit")

"""Stage 1: record one's own work on a dataset, blind to peers, then submit it. The kind that curates the dataset
draws the stage (BLADE analyses: decisions; DiscoveryBench folders: a hypothesis per query)."""

import streamlit as st

from annotate_app import context, state
from annotate_app.components.kinds import stage_component
from curation.services.datasets import list_datasets

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

component = context.attempt(lambda s: stage_component(s, dataset))
if component is None:
    st.stop()
if isinstance(component, str):
    st.info(component)
    st.stop()
component.annotate(user, dataset)

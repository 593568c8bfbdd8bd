"""Datasets (curators and admins): register from a BLADE folder upload or a CSV + form; browse the registry."""

import pandas as pd
import streamlit as st

from annotate_app import context, state
from annotate_app.components.context_pane import dictionary_frame
from curation.dataset_files import read_blade_files, read_csv_with_form
from curation.models import Role
from curation.services.datasets import csv_columns, list_datasets, register_dataset

user = context.require_user(Role.CURATOR, Role.ADMIN)
cfg = context.settings()
st.title("🗂️ Datasets")


def _register(build) -> None:  # one helper for both forms: validate, store, report
    def action(session):
        bundle = build()
        return register_dataset(session=session, actor=user, bundle=bundle, store=cfg.datasets_store)

    ds = context.attempt(action)
    if ds is not None:
        state.bump_form("datasets")  # fresh, empty upload widgets
        state.flash(f"Registered '{ds.name}': {ds.num_rows:,} rows × {ds.num_columns} columns. "
                    "Assign analysts to it on the Users & assignments page.")
        st.rerun()


tab_list, tab_blade, tab_csv = st.tabs(["Registered", "Add a BLADE folder", "Add a CSV"], key="datasets.tab",
                                      on_change="rerun")
version = state.form_version("datasets")

with tab_blade:
    st.write("Upload a dataset in BLADE's layout: its `info.json` and `data.csv`, or one `.zip` of the folder.")
    with st.form("blade_upload", clear_on_submit=False):
        name = st.text_input("Name (optional for a .zip)", key=f"ds.blade.name.{version}")
        files = st.file_uploader("info.json + data.csv, or a .zip", accept_multiple_files=True,
                                 type=["json", "csv", "zip"], key=f"ds.blade.files.{version}")
        go = st.form_submit_button("Register dataset", type="primary")
    if go:
        uploads = {f.name: f.getvalue() for f in files or []}
        _register(lambda: read_blade_files(uploads, max_bytes=cfg.max_upload_bytes, name=name or None))

with tab_csv:
    upload = st.file_uploader("A CSV file (header row first)", type=["csv"], key=f"ds.csv.file.{version}")
    if upload is not None:
        data = upload.getvalue()
        try:
            columns = csv_columns(data, filename=upload.name)
        except Exception as exc:  # noqa: BLE001 - the one helper shows it
            context.show_error(exc)
            st.stop()
        with st.form("csv_form"):
            name = st.text_input("Name", value=upload.name.rsplit(".", 1)[0], key="ds.csv.name")
            question = st.text_area("Research question", key="ds.csv.question", height=70)
            description = st.text_area("Description (source, collection, licence)", key="ds.csv.desc", height=90)
            st.caption("Describe each column (what it measures, units, coding):")
            desc_df = st.data_editor(pd.DataFrame({"column": columns, "description": [""] * len(columns)}),
                                     disabled=["column"], hide_index=True, width="stretch",
                                     key="ds.csv.columns")
            go = st.form_submit_button("Register dataset", type="primary")
        if go:
            descriptions = {r.column: r.description for r in desc_df.itertuples() if str(r.description or "").strip()}
            _register(lambda: read_csv_with_form(
                data, filename=upload.name, name=name, research_question=question, description=description,
                column_descriptions=descriptions, max_bytes=cfg.max_upload_bytes))

with tab_list:
    datasets = context.attempt(lambda s: list_datasets(session=s, actor=user)) or []
    if not datasets:
        st.info("No datasets yet.")
    st.dataframe(pd.DataFrame([{"name": d.name, "question": d.research_question, "rows": d.num_rows,
                                "columns": d.num_columns, "source": d.source, "registered": d.created_at}
                               for d in datasets]), hide_index=True, width="stretch")
    pick = st.selectbox("Show the data dictionary of", [d.name for d in datasets], key="ds.pick") if datasets else None
    chosen = next((d for d in datasets if d.name == pick), None)
    if chosen is not None:
        st.markdown(f"**{chosen.research_question}**\n\n{chosen.description}")
        st.dataframe(dictionary_frame(chosen), hide_index=True, width="stretch")

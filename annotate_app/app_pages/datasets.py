"""Datasets (curators and admins): register from a BLADE folder upload (with its ground truth), a CSV + form or a
DiscoveryBench zip; browse the registry."""

import pandas as pd
import streamlit as st

from annotate_app import context, state
from annotate_app.components.context_pane import dictionary_frame
from annotate_app.components.dataset_upload import FORM, blade_upload_tab, registered_message
from annotate_app.components.discoverybench_upload import discoverybench_upload_tab
from annotate_app.text import md
from curation.dataset_files import read_csv_with_form
from curation.models import Role
from curation.services.datasets import (
    archive_dataset,
    csv_columns,
    list_datasets,
    register_dataset,
    restore_dataset,
)

user = context.require_user(Role.CURATOR, Role.ADMIN)
cfg = context.settings()
st.title("🗂️ Datasets")
CSV_FLASH = "datasets.csv"  # a registration's outcome stays in its tab instead of fading as a toast


def _register(build) -> None:  # one helper for both forms: validate, store, report
    def action(session):
        bundle = build()
        return register_dataset(session=session, actor=user, bundle=bundle, store=cfg.datasets_store)

    ds = context.attempt(action)
    if ds is not None:
        state.bump_form(FORM)  # fresh, empty upload widgets
        typed = ds.title if ds.title != ds.name else None
        state.flash(f"{registered_message(ds, typed)} Assign analysts to it on the Users & assignments page.",
                    where=CSV_FLASH)
        st.rerun()


@st.cache_data(max_entries=2, show_spinner=False)
def _csv_columns(data: bytes, filename: str) -> list[str]:  # the whole file is parsed: once per upload
    return csv_columns(data, filename=filename)


tab_list, tab_blade, tab_csv, tab_db = st.tabs(
    ["Registered", "Add a BLADE folder", "Add a CSV", "Import DiscoveryBench"], key="datasets.tab", on_change="rerun")
version = state.form_version(FORM)

with tab_blade:
    blade_upload_tab(user, cfg)

with tab_db:
    discoverybench_upload_tab(user, cfg)

with tab_csv:
    upload = st.file_uploader("A CSV file (header row first)", type=["csv"], key=f"ds.csv.file.{version}",
                              max_upload_size=cfg.upload_widget_mb)
    if upload is not None:
        data = upload.getvalue()
        try:
            columns = _csv_columns(data, upload.name)
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
    context.show_flash(CSV_FLASH)

with tab_list:
    datasets = context.attempt(lambda s: list_datasets(session=s, actor=user, include_archived=True)) or []
    context.show_flash("datasets.list")
    if not datasets:
        st.info("No datasets yet.")
    else:
        st.dataframe(pd.DataFrame([{"name": d.name, "status": "archived" if d.archived else "active",
                                    "question": d.research_question, "rows": d.num_rows, "columns": d.num_columns,
                                    "source": d.source, "registered": d.created_at} for d in datasets]),
                     hide_index=True, width="stretch",
                     column_config={"name": "Name", "question": st.column_config.TextColumn("Research question",
                                                                                            width="large"),
                                    "rows": "Rows", "columns": "Columns", "source": "Source", "status": "Status",
                                    "registered": st.column_config.DatetimeColumn("Registered (UTC)",
                                                                                  format="YYYY-MM-DD HH:mm")})
        st.caption("Long questions are cut in the table: pick a dataset below to read its question, description "
                   "and data dictionary in full.")
    pick = st.selectbox("Read in full", [d.name for d in datasets], key="ds.pick") if datasets else None
    chosen = next((d for d in datasets if d.name == pick), None)
    if chosen is not None:
        st.markdown(f"**{md(chosen.research_question)}**")
        st.markdown(md(chosen.description) if chosen.description else "_No description._")
        st.dataframe(dictionary_frame(chosen), hide_index=True, width="stretch")
        if chosen.archived:
            st.info(f"Archived on {chosen.archived_at:%Y-%m-%d}: hidden from annotation and left out of new "
                    "releases; its decisions and votes are kept.")
            if st.button("Restore this dataset", key="ds.restore"):
                if context.succeeded(lambda s: restore_dataset(session=s, actor=user, name=chosen.name)):
                    state.flash(f"Restored '{chosen.name}': it is annotated and released again.",
                                where="datasets.list")
                    st.rerun()
        elif st.button("Archive this dataset", key="ds.archive",
                       help="For a dataset registered by mistake or retired: nothing is deleted, and it can be "
                            "restored."):
            if context.succeeded(lambda s: archive_dataset(session=s, actor=user, name=chosen.name)):
                state.flash(f"Archived '{chosen.name}': hidden from annotation and left out of new releases.",
                            where="datasets.list")
                st.rerun()

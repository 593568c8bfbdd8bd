"""The Datasets page's "Import DiscoveryBench" tab: a zip of a DiscoveryBench folder or tree, imported with the
options and the report of ``forkpaths import-discoverybench`` (the service checks the role)."""

from __future__ import annotations

import streamlit as st

from annotate_app import context, state
from curation.models import User
from curation.services.discoverybench_import import DiscoveryBenchImportReport, import_discoverybench_zip
from curation.settings import Settings

FORM = "discoverybench"  # the form-version counter of this tab's widgets
FLASH_HERE = "datasets.discoverybench"  # the import's report stays under the form until the next run


def report_message(report: DiscoveryBenchImportReport) -> tuple[str, str]:
    """The flash kind and text: the CLI's report lines, then each folder that was not imported."""
    lines = report.lines()
    if report.refused:
        lines.append(f"Not imported ({len(report.refused)} folder{'s' if len(report.refused) != 1 else ''}):")
        lines += [f"- {sentence}" for sentence in report.refused]
    if report.tasks:
        lines.append("Assign analysts to the new datasets on the Users & assignments page.")
    return ("warning" if report.refused else "success"), "  \n".join(lines)


def _keys(version: int) -> tuple[str, str, str]:
    return f"ds.db.zip.{version}", f"ds.db.replace.{version}", f"ds.db.nogold.{version}"


def _submit(user: User, cfg: Settings, version: int) -> None:
    zip_key, replace_key, nogold_key = _keys(version)
    upload = state.get(zip_key)
    if upload is None:
        state.flash("Choose a .zip of a DiscoveryBench folder or tree first.", "warning", where=FLASH_HERE)
        return
    report = context.attempt_in_callback(lambda s: import_discoverybench_zip(
        session=s, actor=user, filename=upload.name, content=upload.getvalue(), store=cfg.datasets_store,
        max_bytes=cfg.max_upload_bytes, replace=bool(state.get(replace_key)), without_gold=bool(state.get(nogold_key))))
    state.bump_form(FORM)  # a fresh uploader for the next import
    if report is not None:
        kind, text = report_message(report)
        state.flash(text, kind, where=FLASH_HERE)


def discoverybench_upload_tab(user: User, cfg: Settings) -> None:
    st.write("Upload a `.zip` of a DiscoveryBench tree (or of some of its folders, or of one task folder), with "
             "its answer keys if you have them. Each folder becomes a dataset with one hypothesis task per query. "
             "Folders imported before with the same content are skipped; answer-key rows of folders not in the zip "
             "are ignored.")
    context.show_deferred_error()
    version = state.form_version(FORM)
    zip_key, replace_key, nogold_key = _keys(version)
    with st.form("discoverybench_upload", clear_on_submit=False):
        st.file_uploader("DiscoveryBench tree (.zip)", type=["zip"], key=zip_key, max_upload_size=cfg.upload_widget_mb)
        st.checkbox("Import without gold hypotheses: the queries are curated from scratch in stage 1",
                    value=False, key=nogold_key)
        st.checkbox("Replace folders whose content changed (only while no curated work rests on them)",
                    value=False, key=replace_key)
        st.form_submit_button("Import", type="primary", on_click=_submit, args=(user, cfg, version))
    context.show_flash(FLASH_HERE)

"""The Datasets page's "Add a BLADE folder" tab: one upload attempt per click, a fresh uploader after each, and
the upload's ground truth imported right there when the curator asks for it."""

from __future__ import annotations

import streamlit as st

from annotate_app import context, state
from curation.models import Dataset, User
from curation.services.blade_import import UploadOutcome, register_blade_upload
from curation.settings import Settings

FORM = "datasets"  # the form-version counter shared by the page's upload widgets
FLASH_HERE = "datasets.upload"  # an upload's outcome is shown in its tab, not as a toast that fades


def registered_message(dataset: Dataset, typed_name: str | None = None) -> str:
    renamed = f" (the name you typed, '{typed_name}', made folder-safe)" if typed_name else ""
    return f"Registered '{dataset.name}'{renamed}: {dataset.num_rows:,} rows × {dataset.num_columns} columns."


def outcome_message(outcome: UploadOutcome) -> tuple[str, str]:
    """The flash kind and text that tell the curator what the upload stored and what it left out."""
    text = registered_message(outcome.dataset, outcome.typed_name)
    kind = "success"  # the dataset is registered: a success, even when its ground truth was left out as asked
    report = outcome.imported
    if report is not None:
        text += (f" Its ground truth was imported: {report.variables} variables, {report.transforms} transforms, "
                 f"{report.models} models, {report.alternatives} reviewed alternatives ({report.votes} votes), "
                 f"{report.mcqs} MCQs.")
    elif outcome.left_out:
        files = " and ".join(outcome.left_out)
        text += (f" Its {files} {'was' if len(outcome.left_out) == 1 else 'were'} not imported, as asked. To bring "
                 "that ground truth in, upload the folder again under a new name with \"Import its ground truth\" "
                 "ticked, or run forkpaths import-blade on the folder.")
    return kind, text + " Assign analysts to it on the Users & assignments page."


def _keys(version: int) -> tuple[str, str, str]:
    return f"ds.blade.name.{version}", f"ds.blade.files.{version}", f"ds.blade.truth.{version}"


def _submit(user: User, cfg: Settings, version: int) -> None:
    name_key, files_key, truth_key = _keys(version)
    name = str(state.get(name_key) or "")
    files = [(upload.name, upload.getvalue()) for upload in state.get(files_key) or []]
    outcome = context.attempt_in_callback(lambda s: register_blade_upload(
        session=s, actor=user, files=files, name=name or None, store=cfg.datasets_store,
        max_bytes=cfg.max_upload_bytes, import_ground_truth=bool(state.get(truth_key, True))))
    state.bump_form(FORM)  # a fresh uploader: the files of this attempt never mix with the next one's
    state.put(state.UPLOAD_NAME, "" if outcome is not None else name)  # keep the typed name for another try
    if outcome is not None:
        kind, text = outcome_message(outcome)
        state.flash(text, kind, where=FLASH_HERE)  # stays under the form, where the curator looks, until the next run


def blade_upload_tab(user: User, cfg: Settings) -> None:
    st.write("Upload a dataset in BLADE's layout: its `info.json` and `data.csv` (with `annotations.csv` and "
             "`mcq_dataset.json` if it has ground truth), or one `.zip` of the folder.")
    context.show_deferred_error()
    version = state.form_version(FORM)
    name_key, files_key, truth_key = _keys(version)
    with st.form("blade_upload", clear_on_submit=False):
        st.text_input("Name (optional for a .zip)", value=state.get(state.UPLOAD_NAME, ""), key=name_key)
        st.file_uploader("info.json + data.csv, or a .zip", accept_multiple_files=True,
                         type=["json", "csv", "zip"], key=files_key,
                         max_upload_size=cfg.upload_widget_mb)
        st.checkbox("Import its ground truth too (annotations.csv, mcq_dataset.json), when the upload has it",
                    value=True, key=truth_key,
                    help="As `forkpaths import-blade` does: the conceptual variables, transforms, models, reviewed "
                         "alternatives and MCQs become the work of the labelled imported annotator.")
        st.form_submit_button("Register dataset", type="primary", on_click=_submit, args=(user, cfg, version))
    context.show_flash(FLASH_HERE)

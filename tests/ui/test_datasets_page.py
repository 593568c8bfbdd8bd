"""The Datasets page's upload tabs in AppTest: the same clear messages on both tabs, a fresh uploader after
every attempt, path-like names refused, and a zip's ground truth imported right there (or left out, said so)."""

from __future__ import annotations

import io
import zipfile

import pytest
from sqlmodel import func, select

from curation.db import session_scope
from curation.models import Dataset, Transform
from tests import factories as f
from tests.ui.conftest import texts


def _page(ui):
    at = ui.app(ui.curator).run()
    at.switch_page("app_pages/datasets.py").run()
    assert not at.exception, at.exception
    return at


def _version(at) -> int:
    return int(at.session_state["fp.form.version.datasets"]) if "fp.form.version.datasets" in at.session_state else 0


def _submit_blade(at, files, *, name="", truth=True):
    version = _version(at)
    at.text_input(key=f"ds.blade.name.{version}").input(name)
    at.checkbox(key=f"ds.blade.truth.{version}").check() if truth else at.checkbox(
        key=f"ds.blade.truth.{version}").uncheck()
    at.file_uploader(key=f"ds.blade.files.{version}").set_value(
        [(filename, content, "application/octet-stream") for filename, content in files])
    next(b for b in at.button if b.label == "Register dataset").click().run()
    assert not at.exception, at.exception
    return at


def _count(ui, model) -> int:
    with session_scope(ui.engine) as s:
        return s.exec(select(func.count()).select_from(model)).one()


@pytest.mark.parametrize(("content", "expected"), [
    (b'a,b\n"1,2\n', "the quoted value that starts on line 2 is never closed"),
    (b"a,b\n1,2,3\n4,5,6\n", "line 2, the first data row, has 3 fields but the header (line 1) has 2"),
    (b"a,b\n1,2\n\xe4,3\n", "mine.csv is not UTF-8 text: line 3 has a byte (0xe4)"),
    (b"a,b\n1,\x002\n", "mine.csv has a NUL byte (0x00) on line 2"),
])
def test_the_csv_tab_gives_registrations_own_messages(ui, content, expected):
    at = _page(ui)
    at.file_uploader(key="ds.csv.file.0").set_value(("mine.csv", content, "text/csv")).run()
    assert not at.exception, at.exception
    shown = texts(at)
    assert expected in shown
    assert "Error tokenizing" not in shown and "codec" not in shown and "C error" not in shown


def test_a_failed_blade_upload_is_explained_and_leaves_a_fresh_uploader(ui, tmp_path):
    at = _page(ui)
    folder = f.tiny_blade_folder(tmp_path, "storms_two")
    info, data = (folder / "info.json").read_bytes(), (folder / "data.csv").read_bytes()
    _submit_blade(at, [("info.json", info), ("info.json", b"{}"), ("data.csv", data)], name="storms two")
    assert "Two uploaded files are called info.json" in texts(at)
    version = _version(at)
    assert version == 1
    assert not at.file_uploader(key=f"ds.blade.files.{version}").value  # nothing carried into the next try
    assert at.text_input(key=f"ds.blade.name.{version}").value == "storms two"  # the typed name is kept
    at.run()  # the message belongs to that attempt only
    assert "Two uploaded files" not in texts(at)
    _submit_blade(at, [("info.json", info), ("data.csv", data)], name="../../evil")
    assert "The dataset name '../../evil' looks like a file path" in texts(at)
    _submit_blade(at, [("info.json", info), ("data.csv", data)], name="Storms (two)")
    assert "Registered 'storms_two' (the name you typed, 'Storms (two)', made folder-safe): 4 rows" in texts(at)
    assert _count(ui, Dataset) == 2  # the fixture's dataset and this one


def _zipped(folder) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in sorted(folder.iterdir()):
            archive.writestr(f"{folder.name}/{path.name}", path.read_bytes())
    return buffer.getvalue()


def test_a_zip_with_ground_truth_is_imported_right_there(ui, shared_blade):
    at = _page(ui)
    _submit_blade(at, [("hurricane.zip", _zipped(shared_blade / "datasets" / "hurricane"))])
    shown = texts(at)
    assert "Registered 'hurricane'" in shown and "Its ground truth was imported: 4 variables, 6 transforms" in shown
    assert _count(ui, Transform) == 6


def test_ground_truth_left_out_is_said_so(ui, shared_blade):
    at = _page(ui)
    _submit_blade(at, [("hurricane.zip", _zipped(shared_blade / "datasets" / "hurricane"))], truth=False)
    shown = texts(at)  # as the browser shows it (Markdown escapes removed)
    assert "Its annotations.csv and mcq_dataset.json were not imported, as asked" in shown
    assert "forkpaths import-blade" in shown
    # the dataset is registered: a success (not a warning), shown in the tab rather than as a fading toast
    assert not at.warning and not at.toast
    (success,) = at.success
    assert "Registered 'hurricane'" in success.value
    assert _count(ui, Transform) == 0


def test_uploaders_state_the_real_upload_limit(ui, monkeypatch):
    monkeypatch.setenv("FORKPATHS_MAX_UPLOAD_MB", "30")
    at = _page(ui)
    assert at.file_uploader(key="ds.blade.files.0").proto.max_upload_size_mb == 30  # not Streamlit's 200
    assert at.file_uploader(key="ds.csv.file.0").proto.max_upload_size_mb == 30

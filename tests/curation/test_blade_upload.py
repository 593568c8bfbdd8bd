"""The Datasets page's BLADE upload service: ground truth imported right there (or left out, said so), and
bad uploads refused with a sentence naming the uploaded files, on SQLite and PostgreSQL."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest
from sqlmodel import func, select

from curation.db import session_scope
from curation.errors import DatasetImportError, PermissionDenied
from curation.models import CuratedItem, Dataset, Role, Transform
from curation.services.blade_import import register_blade_upload
from tests import factories as f

MB = 2**20


def _zip(folder: Path, *, inside: str | None = None, replace: dict[str, bytes] | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in sorted(folder.iterdir()):
            content = (replace or {}).get(path.name, path.read_bytes())
            archive.writestr(f"{inside}/{path.name}" if inside else path.name, content)
    return buffer.getvalue()


def _upload(engine, store, actor, files, *, name=None, truth=True):
    with session_scope(engine) as s:
        return register_blade_upload(session=s, actor=actor, files=files, name=name, store=store,
                                     max_bytes=200 * MB, import_ground_truth=truth)


def _count(engine, model) -> int:
    with session_scope(engine) as s:
        return s.exec(select(func.count()).select_from(model)).one()


def test_a_zipped_blade_folder_brings_its_ground_truth_in(engine, store, shared_blade):
    curator = f.user(engine, "cura", Role.CURATOR)
    content = _zip(shared_blade / "datasets" / "hurricane", inside="hurricane")
    outcome = _upload(engine, store, curator, [("hurricane.zip", content)])
    report = outcome.imported
    assert outcome.dataset.name == "hurricane" and outcome.left_out == []
    assert (report.variables, report.transforms, report.models, report.alternatives) == (4, 6, 18, 44)
    assert _count(engine, Transform) == 6 and _count(engine, CuratedItem) == report.mcqs > 0
    renamed = _upload(engine, store, curator, [("h.zip", content)], name="Hurricanes (again)", truth=False)
    assert (renamed.dataset.name, renamed.dataset.title) == ("hurricanes_again", "Hurricanes (again)")


def test_an_imported_upload_keeps_the_typed_name_as_its_title(engine, store, shared_blade):
    curator = f.user(engine, "cura", Role.CURATOR)
    content = _zip(shared_blade / "datasets" / "fish", inside="fish")
    outcome = _upload(engine, store, curator, [("fish.zip", content)], name="Fish catch (BLADE)")
    assert outcome.imported is not None and outcome.typed_name == "Fish catch (BLADE)"
    assert (outcome.dataset.name, outcome.dataset.title) == ("fish_catch_blade", "Fish catch (BLADE)")


def test_ground_truth_left_out_on_request_is_reported(engine, store, shared_blade):
    curator = f.user(engine, "cura", Role.CURATOR)
    folder = shared_blade / "datasets" / "hurricane"
    files = [(p.name, p.read_bytes()) for p in sorted(folder.iterdir())]
    outcome = _upload(engine, store, curator, files, name="Hurricanes (2014)", truth=False)
    assert outcome.imported is None and outcome.left_out == ["annotations.csv", "mcq_dataset.json"]
    assert (outcome.dataset.name, outcome.typed_name) == ("hurricanes_2014", "Hurricanes (2014)")
    assert _count(engine, Transform) == 0 and _count(engine, Dataset) == 1


def test_a_broken_annotations_file_is_named_as_uploaded_and_nothing_stays(engine, store, shared_blade):
    curator = f.user(engine, "cura", Role.CURATOR)
    folder = shared_blade / "datasets" / "hurricane"
    text = (folder / "annotations.csv").read_text(encoding="utf-8")
    broken = text.replace('""spec_name"": ""remove_Katrina""', '""spec_name"": ""remove_Katrina"",,', 1)
    assert broken != text
    content = _zip(folder, inside="hurricane", replace={"annotations.csv": broken.encode()})
    with pytest.raises(DatasetImportError) as info:
        _upload(engine, store, curator, [("storms.zip", content)])
    message = str(info.value)
    assert "storms.zip:hurricane/annotations.csv, data row" in message and "not valid JSON" in message
    assert "forkpaths-upload-" not in message and "/tmp" not in message
    assert _count(engine, Dataset) == 0 and list(store.iterdir()) == []


@pytest.mark.parametrize(("files", "name", "needle"), [
    ([("info.json", b"{}"), ("info.json", b"{}"), ("data.csv", b"a\n1\n")], "x",
     "Two uploaded files are called info.json"),
    ([("info.json", b"{}"), ("data.csv", b"a\n1\n"), ("notes.txt", b"hi")], "x",
     "forkpaths does not use ('notes.txt')"),
    (None, "../../evil", "'../../evil' looks like a file path"),
    (None, "..", "looks like a file path"),
])
def test_bad_uploads_are_refused_with_a_sentence(engine, store, tmp_path, files, name, needle):
    curator = f.user(engine, "cura", Role.CURATOR)
    if files is None:
        folder = f.tiny_blade_folder(tmp_path, "storms")
        files = [(p.name, p.read_bytes()) for p in sorted(folder.iterdir())]
    with pytest.raises(DatasetImportError) as info:
        _upload(engine, store, curator, files, name=name)
    assert needle in str(info.value)
    assert _count(engine, Dataset) == 0 and list(store.iterdir()) == []


def test_only_curators_and_admins_upload(engine, store, tmp_path):
    analyst = f.user(engine, "ana", Role.ANALYST)
    folder = f.tiny_blade_folder(tmp_path, "storms")
    with pytest.raises(PermissionDenied):
        _upload(engine, store, analyst, [(p.name, p.read_bytes()) for p in folder.iterdir()], name="storms")

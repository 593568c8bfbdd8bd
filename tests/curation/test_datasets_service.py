"""Dataset registry through the services, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlmodel import select

from curation.dataset_files import read_blade_files, read_blade_folder, read_csv_with_form
from curation.db import session_scope
from curation.errors import DatasetImportError, NotFoundError, PermissionDenied
from curation.models import Dataset, Role
from curation.services import datasets as svc
from tests import factories as f

BLADE_WITH_DATA = ["affairs", "amtl", "boxes", "caschools", "crofoot", "fish", "hurricane", "panda_nuts", "reading",
                   "fertility", "toy"]


def test_every_shared_blade_dataset_registers_with_its_own_dictionary(sqlite_engine, store, shared_blade):
    """Registering each BLADE folder stores the dictionary its info.json holds, field for field."""
    folders = sorted(p for p in (shared_blade / "datasets").iterdir() if (p / "info.json").is_file())
    assert {p.name for p in folders} >= set(BLADE_WITH_DATA) - {"toy"}
    for folder in folders:
        bundle = read_blade_folder(folder, max_bytes=200 * 2**20)
        with session_scope(sqlite_engine) as s:
            ds = svc.register_dataset(session=s, actor=None, bundle=bundle, store=store)
        original = json.loads((folder / "info.json").read_text())
        with session_scope(sqlite_engine) as s:
            row = s.exec(select(Dataset).where(Dataset.name == ds.name)).one()
            assert row.research_question == original["research_questions"][0].strip()
            assert row.info == original  # the whole info.json, losslessly
            assert row.num_rows == original["data_desc"]["num_rows"]
            stored = {fld["column"]: fld["properties"] for fld in row.dictionary}
            for fld in original["data_desc"]["fields"]:
                ours, theirs = stored[fld["column"]], fld["properties"]
                if folder.name == "toy" and fld["column"] in ("Has_Children", "Last_Purchase_Date"):
                    continue  # BLADE's own file is wrong there; see tests/curation/test_profiling.py
                for key in ("dtype", "num_unique_values", "samples", "min", "max", "description"):
                    assert ours.get(key) == theirs.get(key), (folder.name, fld["column"], key)
                if "std" in theirs:
                    assert ours["std"] == pytest.approx(theirs["std"], rel=1e-9)
            assert (store / row.data_relpath).read_bytes() == (folder / "data.csv").read_bytes()


def test_registration_is_for_curators_and_admins(engine, store):
    bundle = read_blade_folder(f.tiny_blade_folder(store.parent / "src"), max_bytes=10**6)
    analyst = f.user(engine, "ana")
    curator = f.user(engine, "cura", Role.CURATOR)
    with session_scope(engine) as s, pytest.raises(PermissionDenied):
        svc.register_dataset(session=s, actor=analyst, bundle=bundle, store=store)
    with session_scope(engine) as s:
        assert svc.register_dataset(session=s, actor=curator, bundle=bundle, store=store).name == "storms"
    with session_scope(engine) as s, pytest.raises(PermissionDenied, match="admin"):
        svc.assign_analysts(session=s, actor=curator, dataset_id=1, user_ids=[analyst.id])


def test_a_failed_registration_stores_nothing(engine, store):
    bundle = read_blade_folder(f.tiny_blade_folder(store.parent / "src"), max_bytes=10**6)
    with session_scope(engine) as s:
        svc.register_dataset(session=s, actor=None, bundle=bundle, store=store)
    before = sorted(p.name for p in store.iterdir())
    with session_scope(engine) as s, pytest.raises(DatasetImportError, match="already registered"):
        svc.register_dataset(session=s, actor=None, bundle=bundle, store=store)
    # the database refuses mid-transaction: the files written for it are removed again
    renamed = bundle.model_copy(update={"name": "storms-two"})
    with pytest.raises(RuntimeError), session_scope(engine) as s:
        svc.register_dataset(session=s, actor=None, bundle=renamed, store=store)
        raise RuntimeError("the user's action failed after the dataset was added")
    with session_scope(engine) as s:
        assert [d.name for d in s.exec(select(Dataset)).all()] == ["storms"]
    after = sorted(p.name for p in store.iterdir() if not p.name.startswith("."))
    assert len(after) <= len(before) + 1  # at most an orphan folder no record points to
    assert not [p for p in store.iterdir() if p.name.endswith(".partial")]


def test_bad_uploads_get_clear_messages(store):
    cases = [
        ({"info.json": b"{not json", "data.csv": b"a\n1\n"}, "info.json"),
        ({"info.json": json.dumps({"research_questions": ["q?"], "data_desc": {
            "dataset_description": "", "fields": [{"column": "ghost", "properties": {}}],
            "num_rows": 1, "field_names": ["a"]}}).encode(), "data.csv": b"a\n1\n"}, "ghost"),
        ({"data.csv": b"a\n1\n"}, "info.json"),
    ]
    for files, needle in cases:
        with pytest.raises(DatasetImportError, match=needle):
            read_blade_files(files, max_bytes=10**6, name="x")
    with pytest.raises(DatasetImportError, match="FORKPATHS_MAX_UPLOAD_MB"):
        read_blade_files({"info.json": b"{}", "data.csv": b"a\n" + b"1\n" * 1000}, max_bytes=100, name="x")
    with pytest.raises(DatasetImportError, match="research question is empty"):
        read_csv_with_form(b"a,b\n1,2\n", filename="t.csv", name="t", research_question=" ", description="",
                           column_descriptions={}, max_bytes=10**6)
    # the CSV tab's column reader gives registration's own messages, not pandas' or the codec's
    with pytest.raises(DatasetImportError, match=r"t\.csv is not UTF-8 text \(it looks like UTF-16\): line 1"):
        svc.csv_columns(b"\xff\xfe\x00garbage\x00", filename="t.csv")
    with pytest.raises(DatasetImportError, match=r"quoted value that starts on line 2 is never closed"):
        svc.csv_columns(b'a,b\n"1,2\n', filename="t.csv")


def test_analysts_see_only_assigned_datasets(engine, store):
    ana = f.user(engine, "ana")
    bob = f.user(engine, "bob")
    ds = f.dataset(engine, store, assign=[ana])
    with session_scope(engine) as s:
        assert [d.name for d in svc.list_datasets(session=s, actor=ana)] == ["storms"]
        assert svc.list_datasets(session=s, actor=bob) == []
        with pytest.raises(PermissionDenied, match="not assigned"):
            svc.get_dataset(session=s, actor=bob, dataset_id=ds.id)
        with pytest.raises(NotFoundError):
            svc.get_dataset(session=s, actor=ana, dataset_id=9999)
        frame = svc.load_frame(ds, store)
        assert list(frame.columns) == ["deaths", "masfem", "wind", "year"] and len(frame) == 4


def test_missing_data_file_is_reported_with_the_setting_to_check(engine, store):
    ds = f.dataset(engine, store)
    (store / ds.data_relpath).unlink()
    with pytest.raises(DatasetImportError, match="FORKPATHS_DATA_DIR"):
        svc.dataset_data_path(ds, store)


def test_upload_zip_registers(engine, store, tmp_path: Path):
    import io
    import zipfile

    folder = f.tiny_blade_folder(tmp_path / "z", "zipped")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for p in folder.iterdir():
            zf.write(p, f"zipped/{p.name}")
    bundle = read_blade_files({"zipped.zip": buf.getvalue()}, max_bytes=10**6)
    with session_scope(engine) as s:
        assert svc.register_dataset(session=s, actor=None, bundle=bundle, store=store).num_rows == 4

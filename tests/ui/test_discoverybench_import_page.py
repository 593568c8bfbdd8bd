"""The Datasets page's "Import DiscoveryBench" tab in AppTest (issue 29 point 1): a zip of a tree is imported
with the CLI's options and report; a changed folder is refused alone, naming the file; the service checks the
role. SQLite (the page's app); the service cases run on both databases in tests/curation."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest
from sqlmodel import select

from curation.db import session_scope
from curation.errors import DatasetImportError, PermissionDenied
from curation.models import Dataset, HypothesisTask
from curation.services.discoverybench_import import import_discoverybench_zip
from tests.exports.discoverybench_helpers import make_folder, real_metadata
from tests.ui.conftest import texts

KEY = b"dataset,metadataid,query_id,gold_hypo\r\nsurvey,0,0,BMI rises with age.\r\nnls_ses,0,0,Elsewhere.\r\n"


def zipped(root: Path, *, top: str = "") -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        for path in sorted(root.rglob("*")):
            if path.is_file():
                z.write(path, f"{top}{path.relative_to(root).as_posix()}")
    return buffer.getvalue()


def team_tree(root: Path) -> Path:
    make_folder(root / "real" / "test", "survey", {0: real_metadata()})
    (root / "answer_key_real.csv").write_bytes(KEY)
    return root


def _upload(at, name: str, content: bytes, *, without_gold=False, replace=False):
    version = int(at.session_state["fp.form.version.discoverybench"]) \
        if "fp.form.version.discoverybench" in at.session_state else 0
    at.file_uploader(key=f"ds.db.zip.{version}").set_value((name, content, "application/zip"))
    at.checkbox(key=f"ds.db.nogold.{version}").set_value(without_gold)
    at.checkbox(key=f"ds.db.replace.{version}").set_value(replace)
    next(b for b in at.button if b.label == "Import").click().run()
    assert not at.exception, at.exception
    return texts(at)


def test_a_curator_imports_a_zipped_tree_and_reads_the_report(ui, tmp_path):
    at = ui.app(ui.curator).run()
    at.switch_page("app_pages/datasets.py").run()
    assert not at.exception, at.exception
    shown = _upload(at, "team.zip", zipped(team_tree(tmp_path / "tree"), top="discoverybench/"))
    assert "Read 1 DiscoveryBench folder and answer_key_real.csv." in shown
    assert "Registered 1 dataset with 1 hypothesis task (real/test 1); 0 need curation" in shown
    assert "Ignored 1 answer-key row of 1 folder not in the tree (nls_ses)." in shown
    with session_scope(ui.engine) as s:
        task = s.exec(select(HypothesisTask)).one()
        assert task.gold_hypothesis == "BMI rises with age."
    # the same zip again: skipped; a changed file: refused, naming it, with the others imported
    assert "Already imported with the same content, skipped: 1 folder (real/test/survey)." in _upload(
        at, "team.zip", zipped(tmp_path / "tree", top="discoverybench/"))
    (tmp_path / "tree" / "real" / "test" / "survey" / "data.csv").write_bytes(b"AGE,BMI\n1,2\n")
    make_folder(tmp_path / "tree" / "real" / "test", "more", {0: real_metadata()})
    shown = _upload(at, "team.zip", zipped(tmp_path / "tree"))
    assert "Registered 1 dataset with 1 hypothesis task" in shown
    assert "real/test/survey was imported before (as 'db_real_test_survey') with different content: data.csv " \
           "differs. It was not imported" in shown
    assert at.warning and not at.error
    shown = _upload(at, "team.zip", zipped(tmp_path / "tree"), replace=True)
    assert "replaced 1" in shown


def test_a_bad_zip_is_a_sentence_on_the_page(ui, tmp_path):
    at = ui.app(ui.curator).run()
    at.switch_page("app_pages/datasets.py").run()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        z.writestr("real/test/survey", b"x")
        z.writestr("real/test/survey/metadata_0.json", b"{}")
    shown = _upload(at, "clash.zip", buffer.getvalue())
    assert "clash.zip: 'real/test/survey' is both a file and a folder" in shown
    assert "a DiscoveryBench tree cannot hold both at one path, so nothing was imported" in shown
    shown = _upload(at, "wide.zip", _wide_zip(tmp_path))
    assert "wide.zip/real/test/wide/metadata_0.json is UTF-16 text" in shown


def _wide_zip(tmp_path: Path) -> bytes:
    import json

    root = tmp_path / "wide_tree"
    make_folder(root / "real" / "test", "wide", {0: json.dumps(real_metadata()).encode("utf-16")})
    return zipped(root)


def test_the_service_checks_the_role_and_the_zip(ui, tmp_path):
    content = zipped(team_tree(tmp_path / "tree"))
    for who in (ui.analyst,):
        with pytest.raises(PermissionDenied), session_scope(ui.engine) as s:
            import_discoverybench_zip(session=s, actor=who, filename="t.zip", content=content,
                                      store=ui.settings.datasets_store, max_bytes=2**20)
    with pytest.raises(DatasetImportError, match=r"t\.zip: '.*' makes the upload larger than the limit of 100 "
                                                 "bytes unpacked"), session_scope(ui.engine) as s:
        import_discoverybench_zip(session=s, actor=ui.curator, filename="t.zip", content=content,
                                  store=ui.settings.datasets_store, max_bytes=100)
    with session_scope(ui.engine) as s:
        assert s.exec(select(Dataset).where(Dataset.source == "discoverybench")).all() == []
        report = import_discoverybench_zip(session=s, actor=ui.curator, filename="t.zip", content=content,
                                           store=ui.settings.datasets_store, max_bytes=2**20, without_gold=True)
    assert (report.datasets, report.needs_curation) == (1, 1)

"""Imported gold blinds like any stage-1 work (issue 26, point 10): a DiscoveryBench dataset's gold hypotheses,
imported from its metadata or answer key, are its answers. A curator assigned to annotate it who has not submitted
gets them on no path: release exports (``release export --format discoverybench --as``), ``gt build``, the
services, and the Releases page; once the assignment is removed, nothing is withheld."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import select

from curation.bootstrap import initialise
from curation.db import session_scope
from curation.errors import BlindingViolation
from curation.models import Dataset, HypothesisTask, Role, User
from curation.services import release_exports as rex
from curation.services.blinding import blinding_reason, is_blind, withheld_ground_truth
from curation.services.datasets import assign_analysts
from curation.settings import Settings
from tests import factories as f
from tests.cli_runner import forkpaths
from tests.exports.test_release_hypotheses import make_tree

DATASET = "db_real_train_savings"  # its one query's gold hypothesis comes from its metadata


@pytest.fixture
def assigned(tmp_path: Path) -> Iterator[dict[str, Any]]:
    """Three DiscoveryBench folders imported (nobody has annotated anything: the only work is the imported gold)
    and released; curator 'cass' is assigned to annotate DATASET and has not submitted."""
    data = tmp_path / "data"
    assert forkpaths(tmp_path, "import-discoverybench", str(make_tree(tmp_path / "tree"))).returncode == 0
    settings = Settings(data_dir=data, load_starter_datasets=False)
    engine = initialise(settings).engine
    cass = f.user(engine, "cass", Role.CURATOR)
    with session_scope(engine) as s:
        admin = s.exec(select(User).where(User.username == "admin")).one()
        dataset = s.exec(select(Dataset).where(Dataset.name == DATASET)).one()
        golds = s.exec(select(HypothesisTask.gold_hypothesis).where(HypothesisTask.dataset_id == dataset.id)).all()
        assert [g for g in golds if g] == ["Everywhere."]  # the imported gold, from its metadata
        assign_analysts(session=s, actor=admin, dataset_id=dataset.id, user_ids=[cass.id])
    assert forkpaths(tmp_path, "release", "create", "--version", "1.0.0").returncode == 0
    yield {"settings": settings, "engine": engine, "cass": cass, "admin": admin, "dataset_id": dataset.id,
           "tmp": tmp_path}
    engine.dispose()


WHY = blinding_reason(DATASET, started=False, assigned=True)


def test_the_command_line_withholds_imported_gold_from_an_assigned_curator(assigned):
    tmp = assigned["tmp"]
    out = tmp / "x"
    export = forkpaths(tmp, "release", "export", "1.0.0", "--format", "discoverybench", "--out", str(out),
                       "--as", "cass")
    assert export.returncode == 2 and WHY in export.stderr, export.stderr
    assert not out.exists()
    for fmt in ("native",):
        other = forkpaths(tmp, "release", "export", "1.0.0", "--format", fmt, "--out", str(out), "--as", "cass")
        assert other.returncode == 2 and WHY in other.stderr
    built = forkpaths(tmp, "gt", "build", "1.0.0", "--json", "--as", "cass")
    assert built.returncode == 2 and WHY in built.stderr and "Everywhere." not in built.stdout
    # the admin, not assigned, exports it; once cass's assignment is removed, cass does too
    assert forkpaths(tmp, "release", "export", "1.0.0", "--format", "discoverybench", "--out", str(out)
                     ).returncode == 0
    with session_scope(assigned["engine"]) as s:
        assign_analysts(session=s, actor=assigned["admin"], dataset_id=assigned["dataset_id"], user_ids=[])
    again = forkpaths(tmp, "release", "export", "1.0.0", "--format", "discoverybench", "--out", str(tmp / "y"),
                      "--as", "cass")
    assert again.returncode == 0, again.stderr


def test_the_services_count_imported_gold_as_work_that_blinds(assigned):
    engine, cass, settings = assigned["engine"], assigned["cass"], assigned["settings"]
    with session_scope(engine) as s:
        assert is_blind(session=s, actor=cass, dataset_id=assigned["dataset_id"])
        withheld, message = withheld_ground_truth(session=s, actor=cass, release_version="1.0.0")
        assert withheld == [DATASET] and WHY in message
        with pytest.raises(BlindingViolation, match="stays hidden from you"):
            rex.export_release(session=s, actor=cass, version="1.0.0", fmt="discoverybench",
                               out=assigned["tmp"] / "z", artifacts=settings.artifact_store())
        assert not is_blind(session=s, actor=assigned["admin"], dataset_id=assigned["dataset_id"])
    assert not (assigned["tmp"] / "z").exists()


def test_the_releases_page_withholds_imported_gold(assigned, monkeypatch):
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    from tests.ui.conftest import APP, signed_in_token, texts

    monkeypatch.setenv("FORKPATHS_DATA_DIR", str(assigned["settings"].data_dir))
    monkeypatch.setenv("FORKPATHS_LOAD_STARTER_DATASETS", "false")
    monkeypatch.delenv("FORKPATHS_DATABASE_URL", raising=False)
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.session_state["fp.session_token"] = signed_in_token(assigned["engine"], assigned["settings"], assigned["cass"])
    try:
        at.run()
        at.switch_page("app_pages/releases.py").run()
        assert not at.exception, at.exception
        shown = texts(at)
        assert WHY in shown and "This release cannot be downloaded by you until then." in shown
        prepare = [b for b in at.button if b.key and b.key.startswith("releases.prepare.")]
        assert prepare and all(b.disabled for b in prepare)
    finally:
        st.cache_resource.clear()

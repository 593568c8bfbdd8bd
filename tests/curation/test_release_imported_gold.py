"""A dataset imported with a kind's part that holds gold has ground truth: a new release holds it by default, the
Releases page lists it among the datasets with ground truth (not behind "without ground truth yet"), and the
changelog of a later release counts its items, not its part (the reviewer's QRData findings)."""

from __future__ import annotations

import json
from pathlib import Path

from curation.db import session_scope
from curation.models import Role
from curation.services import releases as rel
from curation.services.kind_import import import_kind
from exports.changelog import diff_releases, render_changelog
from exports.native import read_release
from tests import factories as f
from tests.factories import artifacts_for


def _qrdata_folder(root: Path) -> Path:
    """Two file sets, so two datasets: 'qrdata_d' with three questions, 'qrdata_e' with one."""
    (root / "data").mkdir(parents=True)
    for name in ("d.csv", "e.csv"):
        (root / "data" / name).write_text("x,y\n1,2\n", encoding="utf-8")
    meta = {"reference": "book", "keywords": ["Statistics"], "question_type": "numerical"}
    records = [{"data_description": f"{n} holds x and y.", "question": f"What is the mean of x ({i})?",
                "answer": str(i), "data_files": [n], "meta_data": meta}
               for i, n in enumerate(["d.csv", "d.csv", "d.csv", "e.csv"])]
    (root / "QRData.json").write_text(json.dumps(records), encoding="utf-8")
    return root


def test_a_dataset_imported_with_gold_has_ground_truth_and_its_questions_are_counted(engine, store, tmp_path):
    cur = f.user(engine, "cur-q", Role.CURATOR)
    f.dataset(engine, store, name="empty")
    root = tmp_path / "releases"
    with session_scope(engine) as s:
        rel.cut_release(session=s, actor=cur, version="1.0.0", notes="", artifacts=artifacts_for(root), store=store,
                        include_empty=True)
    with session_scope(engine) as s:
        names = import_kind(session=s, actor=cur, kind="qrdata", path=_qrdata_folder(tmp_path / "qr"), store=store,
                            max_bytes=10_000_000).datasets
    assert sorted(names) == ["qrdata_d", "qrdata_e"]
    with session_scope(engine) as s:
        assert rel.release_candidates(session=s, actor=cur) == (["qrdata_d", "qrdata_e"], ["empty"])
        record = rel.cut_release(session=s, actor=cur, version="1.1.0", notes="", artifacts=artifacts_for(root),
                                 store=store)
    assert sorted(record.summary) == ["qrdata_d", "qrdata_e"]  # by default: what has ground truth
    assert "QRData questions" in rel.ground_truth_nouns()
    text = (root / record.path / "CHANGELOG.md").read_text(encoding="utf-8")
    assert "## Dataset `qrdata_d` (added)\n\nNew in this release: 3 QRData questions" in text, text
    assert "## Dataset `qrdata_e` (added)\n\nNew in this release: 1 QRData question" in text, text
    # a release's removed dataset is counted the same way
    first, second = read_release(root / "1.0.0"), read_release(root / record.path)
    back = render_changelog(diff_releases(second, first.model_copy(update={"version": "1.2.0"})))
    assert "## Dataset `qrdata_d` (removed)\n\nRemoved with it: 3 QRData questions" in back, back

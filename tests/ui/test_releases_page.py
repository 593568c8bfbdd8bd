"""The releases page in AppTest: cut, list, compare, download — and refusals shown as messages."""

from __future__ import annotations

import shutil

from sqlmodel import select

from curation.db import session_scope
from curation.models import ReleaseRecord
from curation.services.annotation import submit_analysis
from curation.services.release_store import reconcile_release_store
from curation.services.releases import cut_release
from tests import factories as f
from tests.factories import artifacts_for
from tests.ui.conftest import texts


def _page(ui, user):
    at = ui.app(user).run()
    at.switch_page("app_pages/releases.py").run()
    assert not at.exception, at.exception
    return at


def _cut(at, version=None, notes="notes", include_empty=True):
    box = [c for c in at.checkbox if c.label.startswith("Also release the datasets without ground truth")]
    if box:
        box[0].check() if include_empty else box[0].uncheck()
    if version is not None:
        next(t for t in at.text_input if t.label.startswith("Version")).input(version)
    next(t for t in at.text_area if t.label == "Release notes").input(notes)
    next(b for b in at.button if b.label == "Cut release").click().run()
    assert not at.exception, at.exception
    return at


def test_curator_cuts_lists_compares_and_downloads(ui):
    at = _page(ui, ui.curator)
    assert "No releases yet" in texts(at)
    assert next(t for t in at.text_input if t.label.startswith("Version")).value == "1.0.0"
    _cut(at, notes="first")
    assert "Release 1.0.0 cut: 1 dataset (manifest" in texts(at)  # pluralised, shown in a toast
    assert "…." not in texts(at) and ".." not in texts(at)  # issue 29 point 13: the cut message's double period
    assert next(t for t in at.text_input if t.label.startswith("Version")).value == "1.0.1"  # suggests the next
    (notes,) = [t for t in at.text_area if t.label == "Release notes"]  # one box, emptied for the next release
    assert notes.value == ""
    _cut(at, notes="second")
    assert "Release 1.0.1 cut" in texts(at)
    listing = at.dataframe[0].value
    assert list(listing["version"]) == ["1.0.1", "1.0.0"] and list(listing["notes"]) == ["second", "first"]
    assert "Changelog of release 1.0.1" in texts(at) and "Compared with release 1.0.0." in texts(at)
    # the release's dataset card and changelog are on the page, not only in the zip (issue 29 point 8)
    next(sb for sb in at.selectbox if sb.label == "Download release").set_value("1.0.1").run()
    labels = [e.label for e in at.expander]
    assert "📄 Dataset card (README.md of the release)" in labels
    assert "📝 Changelog (against release 1.0.0)" in labels
    card = next(e for e in at.expander if e.label.startswith("📄 Dataset card"))
    assert "storms" in " ".join(m.value for m in card.markdown)
    at.button(key="releases.prepare.native").click().run()
    assert not at.exception
    at.button(key="releases.prepare.blade").click().run()
    # both prepared downloads stay offered, not only the last one (issue 29 point 13)
    assert sorted(d.proto.label for d in at.get("download_button")) == [
        "⬇ Download forkpaths-1.0.1-blade.zip", "⬇ Download forkpaths-1.0.1.zip"], [
        d.proto.label for d in at.get("download_button")]
    next(sb for sb in at.selectbox if sb.label == "Download release").set_value("1.0.0").run()
    assert not at.get("download_button")  # another release: its own archives, prepared anew
    assert "📝 Changelog (the first release)" in [e.label for e in at.expander]
    with session_scope(ui.engine) as s:
        assert [r.version for r in s.exec(select(ReleaseRecord)).all()] == ["1.0.0", "1.0.1"]


def test_bad_versions_are_explained_and_nothing_is_cut(ui):
    at = _page(ui, ui.admin)
    _cut(at, version="one", notes="x")
    assert "is not a semantic version" in texts(at)
    _cut(at, version="1.0.0", notes="x")
    _cut(at, version="1.0.0", notes="x")
    assert "already exists; releases never change" in texts(at)
    with session_scope(ui.engine) as s:
        assert len(s.exec(select(ReleaseRecord)).all()) == 1


def _cut_as(ui, version):
    with session_scope(ui.engine) as s:
        cut_release(session=s, actor=ui.curator, version=version, notes="", artifacts=ui.settings.artifact_store(),
                    store=ui.settings.datasets_store, include_empty=True)


def _two_releases_around_the_analysts_submission(ui):
    _cut_as(ui, "1.0.0")
    f.full_analysis(ui.engine, ui.analyst, ui.dataset_id)
    with session_scope(ui.engine) as s:
        submit_analysis(session=s, actor=ui.analyst, dataset_id=ui.dataset_id)
    _cut_as(ui, "1.0.1")


def test_an_assigned_admin_sees_no_peer_work_on_the_compare_view_until_submitting(ui):
    _two_releases_around_the_analysts_submission(ui)  # the admin is assigned to the dataset too
    at = _page(ui, ui.admin)
    shown = texts(at)
    assert "Changelog of release 1.0.1" in shown and "femininity of name" not in shown and "log_deaths" not in shown
    assert "`storms` is left out of this comparison." in shown and "assigned to annotate 'storms'" in shown
    assert "No changes outside the withheld datasets." in shown
    assert "This release cannot be downloaded by you until then." in shown
    assert all(b.disabled for b in at.button if b.key and b.key.startswith("releases.prepare."))

    curator = texts(_page(ui, ui.curator))  # a curator who does not annotate it sees the analyst's work
    assert "femininity of name" in curator and "left out" not in curator

    f.full_analysis(ui.engine, ui.admin, ui.dataset_id)
    with session_scope(ui.engine) as s:
        submit_analysis(session=s, actor=ui.admin, dataset_id=ui.dataset_id)
    at = _page(ui, ui.admin)
    shown = texts(at)
    assert "femininity of name" in shown and "left out" not in shown
    at.button(key="releases.prepare.native").click().run()
    assert not at.exception and at.get("download_button")


def test_set_aside_release_files_are_reported_on_the_page(ui):
    _cut_as(ui, "1.0.0")
    root = ui.settings.releases_store
    shutil.copytree(root / "1.0.0", root / "1.0.1")  # as if a writer died between publishing and recording
    with session_scope(ui.engine) as s:
        reconcile_release_store(session=s, artifacts=artifacts_for(root))
    at = _page(ui, ui.admin)
    assert at.expander[0].label.startswith("⚠️ 1 problem(s) in the releases folder")
    assert "**1.0.1** was set aside" in texts(at) and "no release record was ever committed" in texts(at)
    assert list(at.dataframe[0].value["version"]) == ["1.0.0"]  # never listed, never served


def test_empty_datasets_are_listed_and_left_out_unless_asked_for(ui):
    at = _page(ui, ui.curator)
    box = next(c for c in at.checkbox if c.label.startswith("Also release the datasets without ground truth"))
    assert "storms" in box.label  # the empty dataset is named next to the choice
    assert next(m for m in at.multiselect if m.label == "Datasets").options == []  # nothing has ground truth yet
    _cut(at, version="1.0.0", include_empty=False)
    assert "no dataset has ground truth yet (empty: storms)" in texts(at)
    _cut(at, version="1.0.0", include_empty=True)
    assert "Release 1.0.0 cut: 1 dataset" in texts(at)


def test_nothing_is_hidden_from_an_assigned_admin_where_there_is_no_peer_work(ui):
    _cut_as(ui, "1.0.0")  # the admin is assigned to the dataset, which nobody has annotated yet
    at = _page(ui, ui.admin)
    assert "cannot be downloaded by you" not in texts(at)
    buttons = [b for b in at.button if b.key and b.key.startswith("releases.prepare.")]
    assert buttons and not any(b.disabled for b in buttons)
    at.button(key="releases.prepare.native").click().run()
    assert not at.exception and at.get("download_button")


def test_a_release_with_discoverybench_datasets_shows_hypothesis_tasks_not_blade_counts(ui, tmp_path):
    from curation.services.discoverybench_import import import_discoverybench
    from tests.exports.test_release_hypotheses import make_tree

    with session_scope(ui.engine) as s:
        import_discoverybench(session=s, actor=None, path=make_tree(tmp_path / "tree"),
                              store=ui.settings.datasets_store, max_bytes=2**26)
    at = _page(ui, ui.curator)
    chosen = next(m for m in at.multiselect if m.label == "Datasets")
    assert chosen.options == ["db_real_test_bmi", "db_real_train_savings", "db_synth_dev_jazz_0_0"]  # ground truth
    _cut(at, version="1.0.0", include_empty=True)
    assert "Release 1.0.0 cut: 4 datasets" in texts(at)
    assert list(at.dataframe[0].value["hypothesis tasks"]) == [5]
    listing = at.dataframe[0].value  # the list of releases counts only what some release holds
    assert "MCQs" not in listing.columns and "decisions" not in listing.columns
    assert not [c for c in listing.columns if listing[c].dtype.kind == "i" and (listing[c] == 0).all()], listing
    hypotheses, blade = at.dataframe[1].value, at.dataframe[2].value  # groups in the order of their datasets
    assert list(blade["dataset"]) == ["storms"] and "hypothesis tasks" not in blade.columns
    assert list(hypotheses.columns) == ["dataset", "hypothesis tasks", "with gold", "to curate", "candidates",
                                        "gold by consensus", "files", "votes"]
    assert "decisions" not in hypotheses.columns and "MCQs" not in hypotheses.columns
    bmi = hypotheses[hypotheses["dataset"] == "db_real_test_bmi"].iloc[0]
    assert (bmi["hypothesis tasks"], bmi["with gold"], bmi["to curate"]) == (3, 1, 2)
    shown = texts(at)
    assert "Hypothesis tasks: 3 datasets" in shown and "still to curate" in shown
    assert "Nothing curated yet: 1 dataset" in shown  # storms: released with its data alone
    assert ("Leaves out `db_real_test_bmi`, `db_real_train_savings`, `db_synth_dev_jazz_0_0` (named in "
            "NOT_EXPORTED.md).") in shown
    assert "Leaves out `storms` (named in NOT_EXPORTED.md)." in shown
    at.button(key="releases.prepare.discoverybench").click().run()
    assert not at.exception
    (download,) = at.get("download_button")
    assert "forkpaths-1.0.0-discoverybench.zip" in download.proto.label
    # a Hugging Face dataset holds every kind: it downloads as a zip of its folder
    at.button(key="releases.prepare.hf").click().run()
    assert not at.exception
    assert any("forkpaths-1.0.0-hf.zip" in d.proto.label for d in at.get("download_button"))


def test_the_release_just_cut_is_the_one_shown(ui):
    """After a cut, "Download release" and "What release … holds" show the new release, not the one picked before
    (a reviewer saw 1.0.0 still selected after cutting 1.0.1)."""
    at = _cut(_page(ui, ui.curator), notes="first")
    pick = next(sb for sb in at.selectbox if sb.label == "Download release")
    assert pick.value == "1.0.0"
    _cut(at, notes="second")
    assert "Release 1.0.1 cut" in texts(at)
    assert next(sb for sb in at.selectbox if sb.label == "Download release").value == "1.0.1"
    assert "What release 1.0.1 holds" in texts(at) and "What release 1.0.0 holds" not in texts(at)

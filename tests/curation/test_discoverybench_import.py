"""DiscoveryBench import (issue 17 point 1): the shared data, every quirk through the CLI, nothing half-stored,
idempotence, and who may import and see the gold. SQLite and PostgreSQL through the ``engine`` fixture."""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
from sqlmodel import func, select

from curation.dataset_staging import staging_root
from curation.db import make_engine, session_scope
from curation.errors import DatasetImportError, NotFoundError, PermissionDenied
from curation.models import Dataset, HypothesisTask, HypothesisTaskStatus, Role
from curation.services.datasets import assign_analysts, is_assigned, load_frame
from curation.services.discoverybench_import import import_discoverybench, list_hypothesis_tasks
from exports.discoverybench import read_discoverybench
from tests import factories as f
from tests.cli_runner import forkpaths
from tests.exports.discoverybench_helpers import dump_upstream, make_folder, real_metadata, synth_metadata

MB = 2**20


def _count(engine, model) -> int:  # type: ignore[no-untyped-def]
    with session_scope(engine) as s:
        return int(s.exec(select(func.count()).select_from(model)).one())


def _import(engine, store: Path, path: Path, actor=None, **options):  # type: ignore[no-untyped-def]
    with session_scope(engine) as s:
        return import_discoverybench(session=s, actor=actor, path=path, store=store, max_bytes=200 * MB, **options)


# ------------------------------------------------------------------------------------------ the shared data


def test_import_of_all_shared_data_matches_the_format_layer(engine, store, shared_discoverybench):
    tree = read_discoverybench(shared_discoverybench)
    report = _import(engine, store, shared_discoverybench)
    assert report.folders == report.datasets == len(tree.folders)
    assert report.tasks == len(tree.tasks)
    assert report.needs_curation == sum(t.needs_curation for t in tree.tasks)
    assert report.by_split == dict(Counter(f"{t.kind}/{t.split}" for t in tree.tasks))
    assert report.answer_keys == ["answer_key_real.csv", "answer_key_synth.csv"]
    with session_scope(engine) as s:
        rows = {r.key: r for r in s.exec(select(HypothesisTask)).all()}
        datasets = {d.name: d for d in s.exec(select(Dataset)).all()}
        assert len(datasets) == len(tree.folders) and {d.source for d in datasets.values()} == {"discoverybench"}
        for task in tree.tasks:
            row = rows[task.key]
            assert (row.source, row.split, row.metadata_k, row.qid, row.question) == (
                task.kind, task.split, task.metadata_k, task.qid, task.question)
            assert row.question_type == (task.question_type.value if task.question_type else None)
            assert row.question_type_raw == task.question_type_raw
            assert row.gold_hypothesis == (task.gold.text if task.gold else None)
            assert row.status == (HypothesisTaskStatus.NEEDS_CURATION if task.needs_curation
                                  else HypothesisTaskStatus.GOLD)
            assert row.domain_knowledge == task.domain_knowledge and row.domain == task.domain
            assert row.data_files == task.datasets
            if task.gold is not None:
                assert row.gold_workflow == task.gold.workflow
                assert row.true_hypothesis_expr == task.gold.true_hypothesis_expr
                assert row.target_col == task.gold.target_col
            assert (row.gold_context, row.gold_variables, row.gold_relationship) == (None, None, None)
        # test-split gold comes from the answer keys; train gold with the metadata's workflow
        assert any(r.split == "test" and r.gold_source == "answer_key" for r in rows.values())
        assert any(r.split == "train" and r.gold_workflow for r in rows.values())
        # every file of every folder is stored byte for byte and listed with its hash
        for folder in tree.folders:
            ds = datasets[f"db_{folder.kind}_{folder.split}_{folder.name}".replace("-", "_").lower()]
            listed = {entry["name"]: entry for entry in ds.files}
            expected = [m.file_name for m in folder.metadata] + [d.name for d in folder.files]
            assert sorted(listed) == sorted(expected), folder.relative
            for name, entry in listed.items():
                original = folder.path / name
                stored = store / entry["relpath"]
                assert stored.read_bytes() == original.read_bytes()
                assert entry["sha256"] == hashlib.sha256(original.read_bytes()).hexdigest()
            assert ds.data_relpath in {e["relpath"] for e in ds.files if e["role"] == "data"}
            described = {(e["file"], e["column"]) for e in ds.dictionary if e["properties"]["description"]}
            for meta in folder.metadata:
                for d in meta.metadata.datasets:
                    assert {(d.name, c.name) for c in d.column_list if c.description} <= described
    immigration = datasets.get("db_real_train_immigration_offshoring_effect_on_employment")
    if immigration is not None:  # three Stata files in one folder
        assert sorted(e["name"] for e in immigration.files if e["format"] == "stata") == [
            "immi_popimputed_00_07.dta", "off_shoring_imputed.dta", "offshoring_iv_mar2.dta"]


# ---------------------------------------------------------------------------------- quirks, through the CLI


_cli = forkpaths  # in this process; process=True for the real command


def _cli_engine(tmp_path: Path):  # type: ignore[no-untyped-def]
    return make_engine(f"sqlite:///{tmp_path / 'data' / 'forkpaths.db'}")


def _quirky_tree(root: Path) -> Path:
    """One hand-made folder per quirk of §1.3, in upstream's layout, with answer keys."""
    # columns as an object with raw, queries as a list of lists, the typo relationhsip; no answer-key row: to curate
    make_folder(root / "real" / "test", "typo_folder", {0: real_metadata(
        queries=[[{"qid": 0, "question_type": "relationhsip", "question": "How does BMI relate to age?"},
                  {"qid": 1, "question_type": "variable", "question": "Which variables matter?"}]])})
    # cp1252 bytes (0x92, 0xb5) in a synth file: columns as a list, flat queries, an executable hypothesis
    cp = dump_upstream(synth_metadata(
        domain="jazz music",
        queries=[{"qid": 7, "question": "What drives sell\u2019outs at 5\u00b5?", "question_type": "general",
                  "difficulty": 2, "true_hypothesis": "Tempo drives sell\u2019outs.",
                  "true_hypothesis_expr": "df['sold_out'] > 0.5", "target_col": "sold_out",
                  "relevant_cols": ["tempo"]}])).decode("utf-8").encode("cp1252")
    make_folder(root / "synth" / "dev", "jazz-music_0_3", {0: cp})
    # Stata .dta files named by a train file, with a workflow and a true hypothesis
    stata = root / "real" / "train" / "stata_folder"
    stata.mkdir(parents=True)
    pd.DataFrame({"wage": [1.0, 2.0, 3.0], "year": [2000, 2001, 2002]}).to_stata(
        stata / "wages.dta", write_index=False, variable_labels={"wage": "hourly wage"})
    pd.DataFrame({"x": [1, 2]}).to_stata(stata / "other.dta", write_index=False)
    train = real_metadata(
        datasets=[{"name": "wages.dta", "description": "Wages.", "columns": {"raw": [{"name": "year",
                                                                                      "description": "Year"}]}},
                  {"name": "other.dta", "description": "Other.", "columns": {"raw": [{"name": "x",
                                                                                      "description": "An x"}]}}],
        workflow="Regress wage on year.",
        queries=[[{"qid": 0, "question_type": "context", "question": "When do wages rise?",
                   "true_hypothesis": "Wages rise every year."}]])
    (stata / "metadata_0.json").write_bytes(dump_upstream(train))
    # a stray notebook checkpoint that must not become a task
    synth_test = make_folder(root / "synth" / "test", "steampunk-culture_0_3", {1: synth_metadata(
        queries=[{"qid": 0, "question": "Q?", "question_type": "general", "difficulty": 1}])})
    checkpoints = synth_test / ".ipynb_checkpoints"
    checkpoints.mkdir()
    (checkpoints / "metadata_0-checkpoint.json").write_bytes(dump_upstream(synth_metadata()))
    (root / "answer_key_synth.csv").write_bytes(
        b"dataset,metadataid,query_id,gold_hypo\r\nsteampunk-culture_0_3,1,0,Gears beat steam.\r\n")
    return root


def test_every_quirk_imports_through_the_cli(tmp_path):
    tree = _quirky_tree(tmp_path / "db")
    r = _cli(tmp_path, "import-discoverybench", str(tree), process=True)  # the real command, once
    assert r.returncode == 0, r.stderr
    assert "Read 4 DiscoveryBench folders and answer_key_synth.csv." in r.stdout
    assert "Registered 4 datasets with 5 hypothesis tasks" in r.stdout
    assert "2 need curation" in r.stdout
    engine = _cli_engine(tmp_path)
    with session_scope(engine) as s:
        rows = {r.key: r for r in s.exec(select(HypothesisTask)).all()}
        assert set(rows) == {"real/test/typo_folder/metadata_0/q0", "real/test/typo_folder/metadata_0/q1",
                             "synth/dev/jazz-music_0_3/metadata_0/q7", "real/train/stata_folder/metadata_0/q0",
                             "synth/test/steampunk-culture_0_3/metadata_1/q0"}  # no checkpoint
        typo = rows["real/test/typo_folder/metadata_0/q0"]
        assert (typo.question_type, typo.question_type_raw) == ("relationship", "relationhsip")
        assert rows["real/test/typo_folder/metadata_0/q1"].question_type == "variables"
        assert typo.status == "needs_curation" and typo.gold_hypothesis is None
        jazz = rows["synth/dev/jazz-music_0_3/metadata_0/q7"]
        assert jazz.question == "What drives sell\u2019outs at 5\u00b5?"
        assert (jazz.gold_hypothesis, jazz.true_hypothesis_expr, jazz.target_col, jazz.relevant_cols) == (
            "Tempo drives sell\u2019outs.", "df['sold_out'] > 0.5", "sold_out", ["tempo"])
        assert (jazz.source, jazz.split, jazz.difficulty, jazz.status) == ("synth", "dev", 2, "gold")
        stata = rows["real/train/stata_folder/metadata_0/q0"]
        assert (stata.gold_hypothesis, stata.gold_workflow, stata.gold_source) == (
            "Wages rise every year.", "Regress wage on year.", "metadata")
        steam = rows["synth/test/steampunk-culture_0_3/metadata_1/q0"]
        assert (steam.gold_hypothesis, steam.gold_source) == ("Gears beat steam.", "answer_key")
        ds = s.exec(select(Dataset).where(Dataset.name == "db_real_train_stata_folder")).one()
        assert {e["name"]: e["format"] for e in ds.files} == {
            "metadata_0.json": "json", "other.dta": "stata", "wages.dta": "stata"}
        assert ds.data_relpath.endswith("/wages.dta") and ds.num_rows == 3 and ds.num_columns == 2
        dictionary = {(e["file"], e["column"]): e["properties"]["description"] for e in ds.dictionary}
        assert dictionary[("wages.dta", "year")] == "Year"
        assert dictionary[("wages.dta", "wage")] == "hourly wage"  # the Stata label where the metadata is silent
        frame = load_frame(ds, tmp_path / "data" / "datasets")  # the main table, read as Stata
        assert list(frame.columns) == ["wage", "year"] and len(frame) == 3
        steam_ds = s.exec(select(Dataset).where(Dataset.name == "db_synth_test_steampunk_culture_0_3")).one()
        assert ".ipynb_checkpoints" not in str(steam_ds.files)
        jazz_ds = s.exec(select(Dataset).where(Dataset.name == "db_synth_dev_jazz_music_0_3")).one()
        stored = tmp_path / "data" / "datasets" / next(e["relpath"] for e in jazz_ds.files
                                                       if e["name"] == "metadata_0.json")
        assert stored.read_bytes() == (tree / "synth" / "dev" / "jazz-music_0_3" / "metadata_0.json").read_bytes()
    engine.dispose()


def test_the_cli_prints_bad_input_as_sentences_and_stores_nothing(tmp_path):
    tree = tmp_path / "db"
    make_folder(tree / "real" / "test", "fine", {0: real_metadata()})
    make_folder(tree / "real" / "test", "lacks_file", {0: real_metadata()}, files={})
    make_folder(tree / "real" / "test", "no_question", {3: real_metadata(
        queries=[[{"qid": 0, "question_type": "context"}]])})
    # a row of a folder the tree has that matches none of its queries is an error (one of an absent folder is not)
    (tree / "answer_key_real.csv").write_bytes(b"dataset,metadataid,query_id,gold_hypo\r\nfine,0,9,Gold.\r\n")
    r = _cli(tmp_path, "import-discoverybench", str(tree))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "lacks_file/metadata_0.json: datasets[0].name names the data file 'data.csv'" in r.stderr
    assert "no_question/metadata_3.json: queries[0][0].question is missing" in r.stderr
    assert "answer_key_real.csv: row 1 (dataset 'fine', metadataid 0, query_id 9) matches no query" in r.stderr
    assert "Nothing was imported." in r.stderr
    engine = _cli_engine(tmp_path)
    assert _count(engine, Dataset) == 0 and _count(engine, HypothesisTask) == 0
    engine.dispose()
    store = tmp_path / "data" / "datasets"
    assert not store.exists() or list(store.iterdir()) == []
    r = _cli(tmp_path, "import-discoverybench", str(tmp_path / "absent"))
    assert r.returncode == 2 and "absent does not exist" in r.stderr and "Traceback" not in r.stderr


def test_an_analyst_cannot_import_through_the_cli(tmp_path):
    tree = tmp_path / "db"
    make_folder(tree / "real" / "test", "fine", {0: real_metadata()})
    made = _cli(tmp_path, "create-user", "ana", "--role", "analyst", "--password-stdin",
                stdin="a long enough password 1\n")
    assert made.returncode == 0, made.stderr
    r = _cli(tmp_path, "import-discoverybench", str(tree), "--as", "ana")
    assert r.returncode == 2 and "needs the curator or admin role" in r.stderr and "Traceback" not in r.stderr
    engine = _cli_engine(tmp_path)
    assert _count(engine, Dataset) == 0
    engine.dispose()
    made = _cli(tmp_path, "create-user", "cur", "--role", "curator", "--password-stdin",
                stdin="a long enough password 2\n")
    assert made.returncode == 0, made.stderr
    r = _cli(tmp_path, "import-discoverybench", "--as", "cur", str(tree))
    assert r.returncode == 0, r.stderr
    engine = _cli_engine(tmp_path)
    with session_scope(engine) as s:
        ds = s.exec(select(Dataset)).one()
        assert ds.created_by_id is not None
    engine.dispose()


# ---------------------------------------------------------------------------------------- nothing half-stored


def test_a_failing_import_leaves_nothing_stored(engine, store, tmp_path):
    tree = tmp_path / "db"
    make_folder(tree / "real" / "test", "good_one", {0: real_metadata()})
    make_folder(tree / "real" / "test", "bad_one", {0: b"{\"datasets\": ["})  # not JSON
    with pytest.raises(DatasetImportError, match=r"bad_one/metadata_0\.json") as caught:
        _import(engine, store, tree)
    assert "Nothing was imported" in str(caught.value)
    assert _count(engine, Dataset) == 0 and _count(engine, HypothesisTask) == 0
    assert list(store.iterdir()) == []


def test_an_import_whose_transaction_fails_later_leaves_no_dataset_and_no_file(engine, store, tmp_path):
    first, second = tmp_path / "one", tmp_path / "two"
    make_folder(first / "real" / "test", "a_folder", {0: real_metadata()})
    make_folder(second / "real" / "test", "another", {0: real_metadata()}, files={})  # lacks its data file
    with pytest.raises(DatasetImportError, match="names the data file"), session_scope(engine) as s:
        import_discoverybench(session=s, actor=None, path=first, store=store, max_bytes=MB)
        # written to the staging area, not to the store: it moves in at the commit
        assert list(store.iterdir()) == [] and len(list(staging_root(store).rglob("*.csv"))) == 1
        import_discoverybench(session=s, actor=None, path=second, store=store, max_bytes=MB)
    assert _count(engine, Dataset) == 0 and _count(engine, HypothesisTask) == 0
    assert list(store.iterdir()) == [] and not staging_root(store).exists()


def test_a_file_over_the_size_limit_is_refused_naming_it(engine, store, tmp_path):
    tree = tmp_path / "db"
    make_folder(tree / "real" / "test", "a_small", {0: real_metadata()})
    make_folder(tree / "real" / "test", "z_large", {0: real_metadata()},
                files={"data.csv": b"AGE,BMI\n" + b"30,22.5\n" * 2000})
    with pytest.raises(DatasetImportError, match=r"z_large/data\.csv is .* over the upload limit"), \
            session_scope(engine) as s:
        import_discoverybench(session=s, actor=None, path=tree, store=store, max_bytes=4000)
    assert _count(engine, Dataset) == 0 and list(store.iterdir()) == []


def test_a_second_import_skips_unchanged_folders_and_refuses_changed_ones_per_folder(engine, store, tmp_path):
    tree = tmp_path / "db"
    make_folder(tree / "real" / "test", "kept", {0: real_metadata()})
    assert _import(engine, store, tree).datasets == 1
    again = _import(engine, store, tree)
    assert (again.datasets, again.tasks, again.unchanged, again.refused) == (0, 0, ["real/test/kept"], [])
    make_folder(tree / "real" / "test", "added", {0: real_metadata()})
    more = _import(engine, store, tree)
    assert (more.datasets, more.tasks, more.unchanged) == (1, 1, ["real/test/kept"])
    # the answer key now gives kept's query a gold: its content differs from what was imported; the new folder
    # "third" is imported all the same (issue 29 point 1)
    (tree / "answer_key_real.csv").write_bytes(b"dataset,metadataid,query_id,gold_hypo\r\nkept,0,0,BMI rises.\r\n")
    make_folder(tree / "real" / "test", "third", {0: real_metadata()})
    report = _import(engine, store, tree)
    assert (report.datasets, report.unchanged) == (1, ["real/test/added"])
    assert report.refused == [
        "real/test/kept was imported before (as 'db_real_test_kept') with different content: its gold hypotheses "
        "from answer_key_real.csv differ. It was not imported; use --replace (\"Replace changed folders\" on the "
        "page) to re-import it while no curated work rests on it, or import it under another folder name."]
    # a changed file is named
    (tree / "real" / "test" / "added" / "data.csv").write_bytes(b"AGE,BMI\n1,2\n")
    report = _import(engine, store, tree)
    assert "real/test/added was imported before (as 'db_real_test_added') with different content: data.csv " \
           "differs. It was not imported" in " ".join(report.refused)
    with session_scope(engine) as s:
        assert sorted(s.exec(select(Dataset.name)).all()) == ["db_real_test_added", "db_real_test_kept",
                                                              "db_real_test_third"]
        kept = s.exec(select(HypothesisTask).where(HypothesisTask.key == "real/test/kept/metadata_0/q0")).one()
        assert kept.gold_hypothesis is None
    assert len(list(store.iterdir())) == 3


def test_replace_reimports_a_changed_folder_only_while_no_work_rests_on_it(engine, store, tmp_path):
    from curation.services.hypotheses.common import HypothesisInput, HypothesisVariableInput
    from curation.services.hypotheses.stage1 import save_hypothesis

    tree = tmp_path / "db"
    make_folder(tree / "real" / "test", "kept", {0: real_metadata()})
    make_folder(tree / "real" / "test", "busy", {0: real_metadata()})
    _import(engine, store, tree)
    analyst, admin = f.user(engine, "ana", Role.ANALYST), f.user(engine, "adm", Role.ADMIN)
    with session_scope(engine) as s:
        busy = s.exec(select(Dataset).where(Dataset.name == "db_real_test_busy")).one()
        kept_before = s.exec(select(Dataset).where(Dataset.name == "db_real_test_kept")).one()
        task_id = s.exec(select(HypothesisTask.id).where(HypothesisTask.dataset_id == busy.id)).one()
        kept_id, old_folder = kept_before.id, kept_before.data_relpath.split("/")[0]
        assign_analysts(session=s, actor=admin, dataset_id=busy.id, user_ids=[analyst.id])
        assign_analysts(session=s, actor=admin, dataset_id=kept_id, user_ids=[analyst.id])
    with session_scope(engine) as s:  # stage-1 work on busy; none on kept (an assignment is not work)
        save_hypothesis(session=s, actor=analyst, task_id=task_id,
                        data=HypothesisInput(hypothesis="Older people weigh more.", context="US adults",
                                             variables=[HypothesisVariableInput(name="age", column="AGE"),
                                                        HypothesisVariableInput(name="bmi", column="BMI")],
                                             relationship="positive", workflow="Regress BMI on AGE."))
    (tree / "answer_key_real.csv").write_bytes(
        b"dataset,metadataid,query_id,gold_hypo\r\nkept,0,0,BMI rises.\r\nbusy,0,0,BMI falls.\r\n")
    report = _import(engine, store, tree, replace=True)
    assert report.replaced == ["real/test/kept"] and report.datasets == 0 and report.tasks == 1
    assert report.refused == [
        "real/test/busy was imported before (as 'db_real_test_busy') with different content (its gold hypotheses "
        "from answer_key_real.csv differ), and was not replaced: 1 hypothesis written by an analyst rests on it. "
        "Import the changed folder under another folder name."]
    with session_scope(engine) as s:
        kept = s.exec(select(Dataset).where(Dataset.name == "db_real_test_kept")).one()
        assert kept.id == kept_id  # replaced in place: assignments and links stay
        assert is_assigned(session=s, user_id=analyst.id, dataset_id=kept_id)
        (row,) = s.exec(select(HypothesisTask).where(HypothesisTask.dataset_id == kept_id)).all()
        assert row.gold_hypothesis == "BMI rises." and row.gold_source == "answer_key"
        stored = {d.data_relpath.split("/")[0] for d in s.exec(select(Dataset)).all()}
    assert {p.name for p in store.iterdir()} == stored and old_folder not in stored  # the old files are gone
    assert _import(engine, store, tree, replace=True).unchanged == ["real/test/kept"]


def test_a_subset_imports_with_the_full_answer_key_and_one_summary_line(engine, store, tmp_path,
                                                                        shared_discoverybench):
    """Issue 29 point 1: one real test folder with the benchmark's full answer key gave 23 errors."""
    import shutil as _shutil

    tree = tmp_path / "subset"
    _shutil.copytree(shared_discoverybench / "real" / "test" / "archaeology", tree / "real" / "test" / "archaeology")
    _shutil.copy(shared_discoverybench / "answer_key_real.csv", tree / "answer_key_real.csv")
    report = _import(engine, store, tree)
    assert report.datasets == 1 and report.refused == []
    with session_scope(engine) as s:
        rows = s.exec(select(HypothesisTask)).all()
    assert rows and all(r.gold_source == "answer_key" for r in rows)  # the folder's own rows were applied
    assert report.ignored_answer_rows > 0
    [line] = [x for x in report.lines() if x.startswith("Ignored")]
    assert line.startswith(f"Ignored {report.ignored_answer_rows} answer-key rows of ") and "not in the tree" in line
    assert "archaeology" not in line
    # then the whole tree: the folder imported before is skipped, the others are imported
    whole = _import(engine, store, shared_discoverybench)
    assert whole.unchanged == ["real/test/archaeology"] and whole.refused == [] and whole.ignored_answer_rows == 0


def test_without_gold_imports_every_query_to_be_curated(engine, store, tmp_path):
    tree = tmp_path / "db"
    metadata = synth_metadata()
    metadata["queries"][0]["true_hypothesis"] = "Tempo drives sell-outs."
    make_folder(tree / "synth" / "train", "jazz_0_0", {0: metadata})
    make_folder(tree / "real" / "test", "survey", {0: real_metadata()})
    (tree / "answer_key_real.csv").write_bytes(b"dataset,metadataid,query_id,gold_hypo\r\nsurvey,0,0,BMI rises.\r\n")
    report = _import(engine, store, tree, without_gold=True)
    assert (report.tasks, report.needs_curation) == (2, 2)
    assert "(imported without gold, as asked)" in report.lines()[1]
    with session_scope(engine) as s:
        rows = s.exec(select(HypothesisTask)).all()
        assert {(r.gold_hypothesis, r.gold_source, r.status) for r in rows} == {
            (None, None, HypothesisTaskStatus.NEEDS_CURATION.value)}
    # importing the same tree with its gold is a change of content, refused per folder
    again = _import(engine, store, tree)
    assert len(again.refused) == 2 and "it was imported without its gold hypotheses" in again.refused[0]


def test_the_cli_takes_replace_and_without_gold_and_prints_refusals(tmp_path):
    tree = tmp_path / "db"
    make_folder(tree / "real" / "test", "survey", {0: real_metadata()})
    done = _cli(tmp_path, "import-discoverybench", "--without-gold", str(tree))
    assert done.returncode == 0 and "1 needs curation" in done.stdout
    make_folder(tree / "real" / "test", "more", {0: real_metadata()})
    (tree / "answer_key_real.csv").write_bytes(b"dataset,metadataid,query_id,gold_hypo\r\nsurvey,0,0,BMI rises.\r\n"
                                               b"elsewhere,0,0,Not here.\r\n")
    done = _cli(tmp_path, "import-discoverybench", str(tree))
    assert done.returncode == 1 and "Registered 1 dataset with 1 hypothesis task" in done.stdout
    assert "Ignored 1 answer-key row of 1 folder not in the tree (elsewhere)." in done.stdout
    assert "Not imported: real/test/survey was imported before" in done.stderr
    done = _cli(tmp_path, "import-discoverybench", "--replace", str(tree))
    assert done.returncode == 0 and "replaced 1" in done.stdout


def test_a_registry_name_held_by_another_dataset_is_refused(engine, store, tmp_path):
    f.dataset(engine, store, name="db_real_test_storms")
    tree = tmp_path / "db"
    make_folder(tree / "real" / "test", "storms", {0: real_metadata()})
    make_folder(tree / "real" / "test", "other", {0: real_metadata()})
    report = _import(engine, store, tree)
    assert [r for r in report.refused if "was not imported from DiscoveryBench" in r] == [report.refused[0]]
    assert report.refused[0].startswith("real/test/storms: ")
    assert _count(engine, HypothesisTask) == 1  # the other folder's


# ------------------------------------------------------------------------------------------------ roles


def test_only_curators_and_admins_import(engine, store, tmp_path):
    tree = tmp_path / "db"
    make_folder(tree / "real" / "test", "fine", {0: real_metadata()})
    for role in (Role.ANALYST, Role.EVALUATOR):
        person = f.user(engine, f"u-{role.value}", role)
        with pytest.raises(PermissionDenied, match="needs the curator or admin role"):
            _import(engine, store, tree, actor=person)
    assert _count(engine, Dataset) == 0 and list(store.iterdir()) == []
    curator = f.user(engine, "cura", Role.CURATOR)
    assert _import(engine, store, tree, actor=curator).tasks == 1


def test_listing_tasks_hides_the_gold_from_analysts_and_needs_an_assignment(engine, store, tmp_path):
    tree = tmp_path / "db"
    make_folder(tree / "real" / "train", "gold_folder", {0: real_metadata(
        workflow="Fit a regression.",
        queries=[[{"qid": 1, "question_type": "relationship", "question": "B?", "true_hypothesis": "B rises."},
                  {"qid": 0, "question_type": "context", "question": "A?"}]])})
    _import(engine, store, tree)
    analyst = f.user(engine, "ana", Role.ANALYST)
    curator = f.user(engine, "cura", Role.CURATOR)
    evaluator = f.user(engine, "eva", Role.EVALUATOR)
    admin = f.user(engine, "adm", Role.ADMIN)
    with session_scope(engine) as s:
        dataset_id = s.exec(select(Dataset.id)).one()
        with pytest.raises(PermissionDenied, match="not assigned"):
            list_hypothesis_tasks(session=s, actor=analyst, dataset_id=dataset_id)
        with pytest.raises(NotFoundError):
            list_hypothesis_tasks(session=s, actor=curator, dataset_id=dataset_id + 99)
        assign_analysts(session=s, actor=admin, dataset_id=dataset_id, user_ids=[analyst.id])
    with session_scope(engine) as s:
        seen = list_hypothesis_tasks(session=s, actor=analyst, dataset_id=dataset_id)
        assert [t.qid for t in seen] == [0, 1]
        assert all(t.gold_hidden and t.gold_hypothesis is None and t.gold_workflow is None for t in seen)
        assert [t.needs_curation for t in seen] == [True, False]
        for person in (curator, evaluator, admin):
            full = list_hypothesis_tasks(session=s, actor=person, dataset_id=dataset_id)
            assert [(t.gold_hidden, t.gold_hypothesis, t.gold_workflow) for t in full] == [
                (False, None, None), (False, "B rises.", "Fit a regression.")]
    with session_scope(engine) as s:  # the analyst's view did not blank the stored gold
        assert s.exec(select(HypothesisTask).where(HypothesisTask.qid == 1)).one().gold_hypothesis == "B rises."


def test_a_table_unreadable_past_its_header_is_refused_before_anything_is_stored(engine, store, tmp_path):
    tree = tmp_path / "db"
    make_folder(tree / "real" / "test", "a_ok", {0: real_metadata()})
    make_folder(tree / "real" / "test", "b_ragged", {0: real_metadata()},
                files={"data.csv": b"AGE,BMI\n30,22.5\n41,27.1,9,9\n"})
    with pytest.raises(DatasetImportError, match=r"b_ragged/data\.csv: the data cannot be read to the end"):
        _import(engine, store, tree)
    assert _count(engine, Dataset) == 0 and list(store.iterdir()) == []


def test_a_cp1252_table_loads_in_its_own_encoding(engine, store, tmp_path):
    tree = tmp_path / "db"
    make_folder(tree / "synth" / "test", "astronomy_0_0", {0: synth_metadata()},
                files={"data.csv": "tempo,sold_out\n5\u00b5,0.5\n".encode("cp1252")})
    _import(engine, store, tree)
    with session_scope(engine) as s:
        ds = s.exec(select(Dataset)).one()
        assert [e.get("encoding") for e in ds.files if e["role"] == "data"] == ["cp1252"]
        assert load_frame(ds, store)["tempo"].tolist() == ["5\u00b5"]


def test_two_imports_of_one_folder_at_once_end_in_one_dataset_and_a_sentence(engine, store, tmp_path):
    if engine.dialect.name != "postgresql":
        pytest.skip("the race needs PostgreSQL's row locks (SQLite runs one writer at a time)")
    import threading

    from sqlalchemy import text

    tree = tmp_path / "db"
    make_folder(tree / "real" / "test", "raced", {0: real_metadata()})
    outcome: list[BaseException | None] = []

    def second() -> None:
        try:
            _import(engine, store, tree)
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 - handed to the test's thread
            outcome.append(exc)

    with session_scope(engine) as s:
        import_discoverybench(session=s, actor=None, path=tree, store=store, max_bytes=MB)  # flushed, not committed
        ours = s.connection().execute(text("select pg_backend_pid()")).scalar()
        racer = threading.Thread(target=second)
        racer.start()
        with engine.connect() as watcher:  # wait until the second import waits on our uncommitted row
            waiting = 0
            for _ in range(2400):
                waiting = watcher.execute(text(
                    "select count(*) from pg_stat_activity where :ours = any(pg_blocking_pids(pid))"),
                    {"ours": ours}).scalar() or 0
                # pg_stat_activity is read once per transaction: without a new one, a backend that connects (or
                # starts waiting) after the first look is never seen
                watcher.rollback()
                if waiting or not racer.is_alive():
                    break
                racer.join(0.05)
            if not waiting:  # say where the second import is instead
                import sys
                import traceback

                frame = sys._current_frames().get(racer.ident or 0)
                where = "".join(traceback.format_stack(frame)) if frame is not None else "(it ended)"
                pytest.fail(f"the second import never waited on the first (it ended with {outcome}); it is at:\n"
                            f"{where}")
    racer.join(60)
    assert len(outcome) == 1 and isinstance(outcome[0], DatasetImportError)
    assert "by another import at the same moment" in str(outcome[0])
    assert _count(engine, Dataset) == 1 and _count(engine, HypothesisTask) == 1
    assert len(list(store.iterdir())) == 1


@pytest.mark.parametrize(("encoding", "name"), [("utf-16", "UTF-16"), ("utf-16-le", "UTF-16"), ("utf-32", "UTF-32")])
def test_a_utf16_metadata_file_is_refused_naming_the_file_and_the_encoding(tmp_path, encoding, name):
    """Issue 26 point 11: it said "Expecting value at line 1, column 1". UTF-8 with a byte-order mark is read."""
    import json as _json

    tree = tmp_path / "tree"
    make_folder(tree / "real" / "test", "wide", {0: _json.dumps(real_metadata()).encode(encoding)})
    make_folder(tree / "real" / "test", "with_bom", {0: b"\xef\xbb\xbf" + dump_upstream(real_metadata())})
    done = forkpaths(tmp_path, "import-discoverybench", str(tree))
    assert done.returncode == 2
    assert f"wide/metadata_0.json is {name} text" in done.stderr and "Save it as UTF-8" in done.stderr
    assert "Expecting value" not in done.stderr and "with_bom" not in done.stderr
    (tree / "real" / "test" / "wide" / "metadata_0.json").unlink()
    (tree / "real" / "test" / "wide" / "metadata_0.json").write_bytes(dump_upstream(real_metadata()))
    assert forkpaths(tmp_path, "import-discoverybench", str(tree)).returncode == 0


def test_the_page_upload_imports_a_zipped_tree_on_both_databases(engine, store, tmp_path):
    """The import page's service (issue 29 point 1): a zip of a tree with its full answer key, the same options
    and report as the command; a changed folder refused alone; the role checked in the service."""
    import io
    import zipfile

    from curation.services.discoverybench_import import import_discoverybench_zip

    tree = tmp_path / "db"
    make_folder(tree / "real" / "test", "survey", {0: real_metadata()})
    (tree / "answer_key_real.csv").write_bytes(
        b"dataset,metadataid,query_id,gold_hypo\r\nsurvey,0,0,BMI rises.\r\nnls_ses,0,0,Not here.\r\n")

    def zipped() -> bytes:
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as z:
            for path in sorted(tree.rglob("*")):
                if path.is_file():
                    z.write(path, f"team/{path.relative_to(tree).as_posix()}")
        return buffer.getvalue()

    curator, analyst = f.user(engine, "cura", Role.CURATOR), f.user(engine, "ana", Role.ANALYST)
    with pytest.raises(PermissionDenied), session_scope(engine) as s:
        import_discoverybench_zip(session=s, actor=analyst, filename="team.zip", content=zipped(), store=store,
                                  max_bytes=MB)
    with session_scope(engine) as s:
        report = import_discoverybench_zip(session=s, actor=curator, filename="team.zip", content=zipped(),
                                           store=store, max_bytes=MB)
    assert (report.datasets, report.tasks, report.ignored_answer_rows, report.refused) == (1, 1, 1, [])
    (tree / "real" / "test" / "survey" / "data.csv").write_bytes(b"AGE,BMI\n1,2\n")
    make_folder(tree / "real" / "test", "more", {0: real_metadata()})
    with session_scope(engine) as s:
        report = import_discoverybench_zip(session=s, actor=curator, filename="team.zip", content=zipped(),
                                           store=store, max_bytes=MB, without_gold=True)
    assert report.datasets == 1 and report.needs_curation == 1
    assert report.refused[0].startswith("real/test/survey was imported before (as 'db_real_test_survey') with "
                                        "different content: data.csv differs")
    with session_scope(engine) as s:
        assert sorted(s.exec(select(Dataset.name)).all()) == ["db_real_test_more", "db_real_test_survey"]

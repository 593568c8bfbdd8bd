"""Issue 28: DataSciBench's real layout in and out, through the CLI and the database.

A tree of four tasks in upstream's layout (tests/exports/datascibench_tree, its README says whence) imports with
each task's own input files as a dataset of its own (dl_0's inputs in a data/ subfolder included); a named
dataset is used only when its files are byte-identical to a task's inputs; the checks run with the inputs where
upstream's checks find them (``../data.csv``, ``../data/*.xlsx``), pass the release gate, are released, score in
``datascibench`` mode like upstream (a duplicate metric counted once) and by default strictly, and the export
writes the same tree back byte for byte.
"""

from __future__ import annotations

import io
import json
import shutil
import zipfile
from pathlib import Path

import pytest
from sqlmodel import select

from curation.bootstrap import initialise
from curation.cli import main
from curation.db import session_scope
from curation.models import CuratedItem, Dataset, Role, User
from curation.services import releases as rel
from curation.services.programmatic import list_programmatic_tasks, task_inputs
from curation.settings import Settings

TREE = Path(__file__).resolve().parents[1] / "exports" / "datascibench_tree"
pytestmark = pytest.mark.usefixtures("os_sandbox")


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.relative_to(root).parts[0] in ("data", "metric")}


def _zip(folders: dict[str, dict[str, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        for task, files in folders.items():
            for name, data in files.items():
                z.writestr(f"{task}/{name}", data)
    return buffer.getvalue()


@pytest.fixture
def settings(tmp_path, monkeypatch) -> Settings:
    monkeypatch.setenv("FORKPATHS_DATA_DIR", str(tmp_path / "data"))
    empty = tmp_path / "no-starters"
    empty.mkdir()
    monkeypatch.setenv("FORKPATHS_STARTER_DATASETS_DIR", str(empty))
    monkeypatch.delenv("FORKPATHS_DATABASE_URL", raising=False)
    return Settings()


def test_a_tree_imports_with_its_own_inputs_scores_like_upstream_and_exports_the_same_tree(
        settings, tmp_path, capsys) -> None:
    assert main(["checks", "import-datascibench", str(TREE)]) == 0
    printed = capsys.readouterr().out
    assert "imported 4 programmatic tasks" in printed and "dl_0: dataset datascibench_dl_0 (2 input files)" in printed
    engine = initialise(settings).engine
    with session_scope(engine) as s:
        tasks = {t.key: t for t in s.exec(select(CuratedItem)).all()}
        datasets = {d.name: d for d in s.exec(select(Dataset)).all()}
        assert sorted(datasets) == ["datascibench_csv_excel_0", "datascibench_csv_excel_1", "datascibench_dl_0",
                                    "datascibench_human_0"]  # one per task, never matched by file name
        assert {f["name"] for f in datasets["datascibench_dl_0"].files} == {"data/data_1.xlsx", "data/data_2.xlsx"}
        assert task_inputs(session=s, task=tasks["dl_0"], store=settings.datasets_store) == {
            "data/data_1.xlsx": (TREE / "data/dl_0/data/data_1.xlsx").read_bytes(),
            "data/data_2.xlsx": (TREE / "data/dl_0/data/data_2.xlsx").read_bytes()}
        assert task_inputs(session=s, task=tasks["human_0"], store=settings.datasets_store) == {
            "data.csv": (TREE / "data/human_0/data.csv").read_bytes()}
        admin = s.exec(select(User).where(User.role == Role.ADMIN.value)).first()
        views = list_programmatic_tasks(session=s, actor=admin)
        # every check passed the release gate with the task's inputs beside the outputs (../data/*.xlsx ...)
        assert {(v.task.key, c.item.payload["metric"]): c.released for v in views for c in v.checks} == {
            ("csv_excel_0", "No Missing Values"): True, ("csv_excel_0", "Filled Amounts"): True,
            ("csv_excel_1", "Totals Match The Source"): True, ("csv_excel_1", "Per Product Totals"): True,
            ("dl_0", "Missing Value Percentage"): True, ("dl_0", "Every Sheet Read"): True,
            ("human_0", "Most Correlated Pair"): True, ("human_0", "Correlation Value"): True}
        assert sum(len(v.checks) for v in views) == 9  # human_0's duplicate metric is kept as a check of its own

    # the export writes the tree that was read, byte for byte
    out = tmp_path / "export"
    assert main(["checks", "export-datascibench", str(out)]) == 0
    capsys.readouterr()
    assert _files(out) == _files(TREE)

    # scored: the reference outputs pass in both modes; a wrong pair for human_0 scores as upstream scores it
    with session_scope(engine) as s:
        rel.cut_release(session=s, actor=admin, version="1.0.0", notes="", artifacts=settings.artifact_store(),
                        store=settings.datasets_store)
    reference = {k: {p.name: p.read_bytes() for p in (TREE / "data" / k / "gt").iterdir()} for k in tasks}
    truth = reference["human_0"]["most_corr_output.csv"].decode().splitlines()[1].split(",")
    others = sorted({"AAA", "BBB", "CCC", "DDD"} - {truth[0], truth[1]})
    wrong = {**reference, "human_0": {"most_corr_output.csv": (
        f"ticker_1,ticker_2,correlation\n{others[0]},{others[1]},0.5\n").encode()}}
    runs = tmp_path / "run1.zip", tmp_path / "run2.zip"
    runs[0].write_bytes(_zip(reference))
    runs[1].write_bytes(_zip(wrong))
    results = {}
    for mode in ("datascibench", "default"):
        result = tmp_path / f"{mode}.json"
        assert main(["score", "--kind", "programmatic", "--release", "1.0.0", "--mode", mode, "--submission",
                     str(runs[0]), "--submission", str(runs[1]), "--out", str(result)]) == 0
        results[mode] = json.loads(result.read_text())
    human = {mode: [o for o in r["outcomes"] if o["task"] == "human_0"] for mode, r in results.items()}
    # upstream: the later "Most Correlated Pair" check (one row) replaces the earlier (the right pair), so the wrong
    # pair scores 2 (one row) + 1 (wrong correlation) of 4; by default all three count: 1 + 1 + 2 of 6
    assert [o["completion_rate"] for o in human["datascibench"]] == [1.0, 0.75]
    assert [o["completion_rate"] for o in human["default"]] == [1.0, pytest.approx(4 / 6)]
    assert results["datascibench"]["mode"] == "datascibench" and results["default"]["mode"] == "default"
    for mode in results:
        assert all(o["passed"] for o in results[mode]["outcomes"] if o["task"] != "human_0"), mode
        assert results[mode]["scores"]["programmatic"]["errors"] == 0

    # headless, one folder, upstream's rule
    folder = tmp_path / "dl_0_run"
    folder.mkdir()
    (folder / "combined_data.csv").write_bytes(reference["dl_0"]["combined_data.csv"])
    assert main(["checks", "run", "dl_0", "--outputs", str(folder), "--mode", "datascibench"]) == 0
    assert "completion rate 1.000" in capsys.readouterr().out
    assert main(["checks", "run", "dl_0", "--datascibench", str(TREE), "--outputs", str(folder)]) == 0
    assert "completion rate 1.000" in capsys.readouterr().out


def test_a_named_dataset_is_used_only_when_its_files_are_byte_identical(settings, tmp_path, capsys) -> None:
    copy = tmp_path / "copy"
    for part in ("data", "metric"):
        shutil.copytree(TREE / part / "human_0", copy / part / "human_0_again")
    assert main(["checks", "import-datascibench", str(TREE), "--no-accept"]) == 0
    capsys.readouterr()
    # human_0_again reads data.csv; csv_excel_0's dataset has other bytes (input.csv): refused, nothing stored
    assert main(["checks", "import-datascibench", str(copy), "--no-accept",
                 "--dataset", "human_0_again=datascibench_csv_excel_0"]) == 2
    err = capsys.readouterr().err
    assert "Task human_0_again: dataset datascibench_csv_excel_0 has no file byte-identical to its input data.csv" in err
    assert main(["checks", "import-datascibench", str(copy), "--no-accept", "--dataset", "nope=x"]) == 2
    assert "--dataset names task nope, which the tree does not have" in capsys.readouterr().err
    # a task that exists already refuses the whole tree
    for part in ("data", "metric"):
        shutil.copytree(TREE / part / "csv_excel_0", copy / part / "csv_excel_0")
    assert main(["checks", "import-datascibench", str(copy), "--no-accept",
                 "--dataset", "human_0_again=datascibench_human_0"]) == 2
    assert "A programmatic task named 'csv_excel_0' exists already" in capsys.readouterr().err
    for part in ("data", "metric"):
        shutil.rmtree(copy / part / "csv_excel_0")
    # the same bytes: the existing dataset serves
    assert main(["checks", "import-datascibench", str(copy), "--no-accept",
                 "--dataset", "human_0_again=datascibench_human_0"]) == 0
    assert "human_0_again: dataset datascibench_human_0 (1 input file)" in capsys.readouterr().out
    engine = initialise(settings).engine
    with session_scope(engine) as s:
        assert len(s.exec(select(Dataset)).all()) == 4  # no new dataset
        task = s.exec(select(CuratedItem).where(CuratedItem.key == "human_0_again")).one()
        assert task_inputs(session=s, task=task, store=settings.datasets_store) == {
            "data.csv": (TREE / "data/human_0/data.csv").read_bytes()}


def test_each_task_gets_its_own_dataset_and_a_named_one_only_by_bytes_on_both_databases(engine, store) -> None:
    """The service on SQLite and PostgreSQL (no gate: nothing runs): human_0's data.csv never lands on a dataset
    that merely has a file of that name; a refusal stores nothing."""
    from curation.errors import NotFoundError
    from curation.services.programmatic import ProgrammaticError, import_datascibench_tasks
    from exports.datascibench import read_tree
    from tests import factories as f

    curator = f.user(engine, "cur", Role.CURATOR)
    other = f.dataset(engine, store)  # a one-table dataset whose table is data.csv, with other bytes
    tree = {r.task.key: r for r in read_tree(TREE)}
    with pytest.raises(ProgrammaticError, match=rf"Task human_0: dataset {other.name} has no file byte-identical to "
                                                r"its input data.csv"), session_scope(engine) as s:
        import_datascibench_tasks(session=s, actor=curator, tasks=[tree["human_0"]], store=store,
                                  datasets={"*": other.name}, accept=False, run_gate=False)
    with pytest.raises(NotFoundError, match="there is no dataset named 'nope'"), session_scope(engine) as s:
        import_datascibench_tasks(session=s, actor=curator, tasks=[tree["human_0"]], store=store,
                                  datasets={"human_0": "nope"}, accept=False, run_gate=False)
    with session_scope(engine) as s:
        assert s.exec(select(CuratedItem)).all() == [] and len(s.exec(select(Dataset)).all()) == 1
        stored = import_datascibench_tasks(session=s, actor=curator, tasks=list(tree.values()), store=store,
                                           accept=False, run_gate=False)
        names = {t.key: s.get(Dataset, t.dataset_id).name for t in stored}
        assert names == {k: f"datascibench_{k}" for k in tree}
        assert task_inputs(session=s, task=next(t for t in stored if t.key == "csv_excel_1"),
                           store=store) == {
            "source.xlsx": (TREE / "data/csv_excel_1/source.xlsx").read_bytes()}
    folders = sorted(p.name.rsplit("-", 1)[0] for p in store.iterdir() if p.name.startswith("datascibench_"))
    assert folders == sorted(f"datascibench_{k}" for k in tree)  # one folder each, none left by the refusals

"""DataSciBench's layout in and out, on hand-made folders: metric/<task>/metric.yaml, data/<task>/prompt.json and
gt/; malformed input names the file and the line; a release carrying programmatic tasks round-trips (golden).

Regenerate the golden files with ``FORKPATHS_UPDATE_GOLDEN=1``."""

from __future__ import annotations

import base64
import hashlib
import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from exports.datascibench import DataSciBenchError, normalise_task_type, read_task, read_tree, write_tree
from exports.native import parse_release_json
from exports.programmatic_part import (
    PROGRAMMATIC_TASK_TYPES,
    ProgrammaticArtifact,
    ProgrammaticCheck,
    ProgrammaticPart,
    ProgrammaticTaskRelease,
)
from exports.schema import DatasetRelease, Release

GOLDEN = Path(__file__).parent / "golden" / "datascibench"
METRIC = """\
prompt: Clean the sales table.
TMC-list:
  - task_name: Data Cleaning and Preprocessing
    function: Data Completeness
    metric: Data Completeness Ratio
    code: |
      import pandas as pd

      def completeness(ground_truth):
          df = pd.read_csv('cleaned.csv')
          return df.notna().all().all()
    ground_truth: cleaned.csv
  - task_name: data visualization
    function: Plot Validity
    metric: Plot exists
    code: |
      import os

      def plot_ok(ground_truth):
          return os.path.getsize('plot.png') > 0
    rule: "lambda ok: ok is True"
"""


def make_tree(root: Path, metric: str = METRIC, key: str = "csv_excel_1") -> Path:
    (root / "metric" / key).mkdir(parents=True)
    (root / "metric" / key / "metric.yaml").write_text(metric, encoding="utf-8")
    data = root / "data" / key
    (data / "gt").mkdir(parents=True)
    (data / "prompt.json").write_text(json.dumps({"prompt": "Clean the sales table and plot it.",
                                                  "data_source_type": "1=no dependency", "difficulty": "easy"}))
    (data / "sales.csv").write_text("a,b\n1,\n2,3\n")
    (data / "gt" / "cleaned.csv").write_text("a,b\n2,3\n")
    (data / "gt" / "test_gt.py").write_text("import pandas as pd\n")
    return root


def test_a_hand_made_task_is_read_as_datascibench_means_it(tmp_path: Path) -> None:
    read = read_task(make_tree(tmp_path), "csv_excel_1")
    t = read.task
    assert t.prompt == "Clean the sales table and plot it." and t.data_source_type == "1=no dependency"
    assert t.input_files == ["sales.csv"] and read.inputs == {"sales.csv": b"a,b\n1,\n2,3\n"}
    assert [a.path for a in t.artifacts] == ["cleaned.csv"]  # test_gt.py is the reference solution
    assert t.extra["reference_solution"] == "import pandas as pd\n" and t.extra["prompt_json"] == {"difficulty": "easy"}
    c1, c2 = t.checks
    assert (c1.id, c1.task_type, c1.function, c1.metric, c1.ground_truth, c1.rule) == (
        "c1", "data cleaning & preprocessing", "Data Completeness", "Data Completeness Ratio", "cleaned.csv", None)
    assert "def completeness(ground_truth):" in c1.code
    assert (c2.task_type, c2.rule, c2.ground_truth) == ("data visualization", "lambda ok: ok is True", "")


def test_written_back_it_reads_the_same_and_matches_the_golden_files(tmp_path: Path) -> None:
    tasks = read_tree(make_tree(tmp_path / "in"))
    write_tree(tmp_path / "out", tasks)
    again = read_tree(tmp_path / "out")
    assert [t.task for t in again] == [t.task for t in tasks] and again[0].inputs == tasks[0].inputs
    files = sorted(p.relative_to(tmp_path / "in") for p in (tmp_path / "in").rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(tmp_path / "out") for p in (tmp_path / "out").rglob("*") if p.is_file())
    assert all((tmp_path / "in" / f).read_bytes() == (tmp_path / "out" / f).read_bytes() for f in files)
    # a task whose checks no longer are the file's (edited, or made in forkpaths) is written in forkpaths' format
    for t in tasks:
        t.task.extra.pop("metric_yaml")
        t.task.extra.pop("prompt_json_text")
    write_tree(tmp_path / "made", tasks)
    assert [t.task.checks for t in read_tree(tmp_path / "made")] == [t.task.checks for t in tasks]
    for rel in ("metric/csv_excel_1/metric.yaml", "data/csv_excel_1/prompt.json"):
        produced = (tmp_path / "made" / rel).read_bytes()
        golden = GOLDEN / rel
        if os.environ.get("FORKPATHS_UPDATE_GOLDEN"):
            golden.parent.mkdir(parents=True, exist_ok=True)
            golden.write_bytes(produced)
        assert produced == golden.read_bytes(), f"{rel} differs from {golden}"


@pytest.mark.parametrize(("metric", "words"), [
    ("prompt: x\nTMC-list:\n  - task_name: data visualization\n    code: [unclosed\n",
     r"metric/csv_excel_1/metric.yaml line \d+, column \d+: the YAML does not parse"),
    ("prompt: x\nTMC-list:\n  - task_name: data visualization\n    function: f\n    metric: m\n"
     "  - task_name: data visualization\n    function: f\n    metric: m\n    code: 'def f(g): return 1'\n",
     r"metric/csv_excel_1/metric.yaml line 3 \(entry 1 of TMC-list\): the field code is missing"),
    ("prompt: x\nTMC-list:\n  - task_name: astrology\n    function: f\n    metric: m\n    code: 'def f(g): return 1'\n",
     r"line 3 \(entry 1 of TMC-list\): task_name 'astrology' is none of DataSciBench's six task types"),
    ("prompt: x\nTMC-list:\n  - task_name: data visualization\n    function: f\n    metric: m\n"
     "    code: 'def f(g): return 1'\n    ground_truth: ../../etc/passwd\n", r"must be relative to gt/"),
    ("prompt: x\nTMC-list:\n  - task_name: data visualization\n    function: f\n    metric: m\n"
     "    code: 'def f(g): return 1'\n    ground_truth: nope.csv\n", r"names ground_truth 'nope.csv'"),
    ("- just\n- a list\n", r"line 1, column 1: expected a mapping"),
    ("prompt: x\n", r"metric/csv_excel_1/metric.yaml line 1, column 1: it has no 'TMC-list'"),
    ("prompt: x\nTMC-list:\n  task_name: x\n", r"line 3, column 3: its TMC-list is not a list of checks"),
])
def test_malformed_metric_files_name_the_file_and_line(tmp_path: Path, metric: str, words: str) -> None:
    with pytest.raises(DataSciBenchError, match=words):
        read_tree(make_tree(tmp_path, metric))


def test_a_folder_that_is_not_a_tree_is_explained(tmp_path: Path) -> None:
    with pytest.raises(DataSciBenchError, match="no metric/ folder"):
        read_tree(tmp_path)
    (tmp_path / "metric").mkdir()
    with pytest.raises(DataSciBenchError, match="holds no <task>/metric.yaml"):
        read_tree(tmp_path)
    make_tree(tmp_path / "t")
    (tmp_path / "t" / "data" / "csv_excel_1" / "prompt.json").write_text("{nope")
    with pytest.raises(DataSciBenchError, match="prompt.json is not valid JSON"):
        read_tree(tmp_path / "t")


def test_task_names_are_matched_loosely_to_the_six_types() -> None:
    assert normalise_task_type("Data Exploration & Statistics Understanding") == PROGRAMMATIC_TASK_TYPES[1]
    assert normalise_task_type("predictive_modeling") == "predictive modeling"
    assert normalise_task_type("Interpretability and report generation") == PROGRAMMATIC_TASK_TYPES[5]
    assert normalise_task_type("pattern mining") == "data mining & pattern recognition"
    assert normalise_task_type("cooking") is None


def _release() -> Release:
    data = b"a,b\n2,3\n"
    task = ProgrammaticTaskRelease(
        key="csv_excel_1", prompt="Clean it.", input_files=["data.csv"], data_source_type="1",
        artifacts=[ProgrammaticArtifact(path="cleaned.csv", sha256=hashlib.sha256(data).hexdigest(), size=len(data),
                                        content_b64=base64.b64encode(data).decode())],
        checks=[ProgrammaticCheck(id="c1", task_type=PROGRAMMATIC_TASK_TYPES[0], function="Data Completeness",
                                  metric="ratio", code="def f(gt):\n    return True\n", ground_truth="cleaned.csv",
                                  gate={"released": True, "sentence": "Released."})])
    ds = DatasetRelease(name="sales", research_question="q", data_file="data/sales/data.csv", data_sha256="0" * 64,
                        num_rows=1, num_columns=2).with_parts(programmatic=ProgrammaticPart(tasks=[task]))
    return Release(version="1.0.0", created_at=datetime(2026, 11, 25, tzinfo=UTC), app_version="t", datasets=[ds])


def test_release_format_carries_programmatic_tasks_and_round_trips() -> None:
    release = _release()
    text = release.model_dump_json(indent=1)
    assert Release.model_validate_json(text) == release
    assert release.format_version == "2.0" and set(release.datasets[0].parts) == {"programmatic"}
    # the committed golden was written in format 1.2 (programmatic_tasks a field of the dataset): read, it is
    # upgraded to the same release
    golden = GOLDEN / "release-with-programmatic-task.json"
    older = json.loads(golden.read_text(encoding="utf-8"))
    assert older["format_version"] == "1.2" and older["datasets"][0]["programmatic_tasks"]
    assert parse_release_json(golden.read_bytes()) == release
    # optional: a 1.2 release written before the field existed still reads, without a programmatic part
    del older["datasets"][0]["programmatic_tasks"]
    assert parse_release_json(json.dumps(older)).datasets[0].parts == {}


# ------------------------------------------------------------------------------------ DataSciBench's real layout

TREE = Path(__file__).parent / "datascibench_tree"  # four tasks in upstream's layout (its README says whence)


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.relative_to(root).parts[0] in ("data", "metric")}


def test_the_real_layout_is_read_with_each_tasks_own_inputs_at_any_depth_and_written_back_byte_for_byte(
        tmp_path: Path) -> None:
    read = {r.task.key: r for r in read_tree(TREE)}
    assert sorted(read) == ["csv_excel_0", "csv_excel_1", "dl_0", "human_0"]
    assert read["dl_0"].task.input_files == ["data/data_1.xlsx", "data/data_2.xlsx"]  # a data/ subfolder
    assert read["csv_excel_1"].task.input_files == ["source.xlsx"]  # not a CSV
    assert read["human_0"].task.input_files == ["data.csv"] and read["csv_excel_0"].task.input_files == ["input.csv"]
    assert read["dl_0"].inputs["data/data_1.xlsx"] == (TREE / "data/dl_0/data/data_1.xlsx").read_bytes()
    assert [c.metric for c in read["human_0"].task.checks] == ["Most Correlated Pair", "Correlation Value",
                                                               "Most Correlated Pair"]  # kept: the mode decides
    write_tree(tmp_path, list(read.values()))
    assert _files(tmp_path) == _files(TREE)


def test_an_agents_run_folder_is_not_an_input(tmp_path: Path) -> None:
    root = make_tree(tmp_path)
    run = root / "data" / "csv_excel_1" / "gpt-4o_1"
    run.mkdir()
    (run / "logs.txt").write_text("ran")
    (run / "cleaned.csv").write_text("a,b\n")
    (root / "data" / "csv_excel_1" / "data").mkdir()
    (root / "data" / "csv_excel_1" / "data" / "extra.csv").write_text("x\n1\n")
    assert read_task(root, "csv_excel_1").task.input_files == ["data/extra.csv", "sales.csv"]


@pytest.mark.parametrize("make", ["symlink", "symlinked folder", "too large", "missing input", "fifo"])
def test_an_input_that_is_a_link_too_large_or_missing_is_refused_by_name(tmp_path: Path, make: str) -> None:
    root = make_tree(tmp_path / "tree")
    task = root / "data" / "csv_excel_1"
    outside = tmp_path / "secret.csv"
    outside.write_text("s\n1\n")
    limit = 10_000
    if make == "symlink":
        (task / "more.csv").symlink_to(outside)
        words = r"data/csv_excel_1/more.csv is a symbolic link"
    elif make == "symlinked folder":
        (task / "data").symlink_to(tmp_path)
        words = r"data/csv_excel_1/data is a symbolic link"
    elif make == "too large":
        (task / "big.csv").write_bytes(b"x" * (limit + 1))
        words = r"data/csv_excel_1/big.csv is 10,001 bytes, over the upload limit of 10,000 bytes"
    elif make == "fifo":
        os.mkfifo(task / "pipe.csv")
        words = r"data/csv_excel_1/pipe.csv is not a regular file"
    else:
        metric = METRIC.replace("df = pd.read_csv('cleaned.csv')", "df = pd.read_csv('../missing.csv')")
        (root / "metric" / "csv_excel_1" / "metric.yaml").write_text(metric)
        words = (r"metric/csv_excel_1/metric.yaml line 3 \(entry 1 of TMC-list, metric 'Data Completeness Ratio'\): "
                 r"the check reads '../missing.csv', which data/csv_excel_1/ does not have")
    with pytest.raises(DataSciBenchError, match=words):
        read_tree(root, max_input_bytes=limit)

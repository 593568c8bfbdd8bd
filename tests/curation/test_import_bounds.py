"""Imports are bounded and leave nothing on failure (issue 26 point 7).

- A 10^6-query DiscoveryBench metadata file under the upload limit once took an import past 10.9 GB of resident
  memory: the import now runs under a 1 GB address-space cap (``RLIMIT_AS``) and refuses it with a sentence.
- A killed import left its files in the dataset store with no database row, still there after the next start:
  files are staged beside the store and moved in at the commit, and every start sweeps what a killed import
  staged.
- A NUL byte in an answer key or a metadata text was stored on SQLite and was a ``psycopg.DataError`` dump on
  PostgreSQL: it is refused with the file, line and field on both databases, and nothing is stored.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlmodel import func, select

from curation.dataset_staging import staging_root, sweep_staging
from curation.db import make_engine, session_scope
from curation.errors import DatasetImportError
from curation.models import Dataset, HypothesisTask
from curation.services.discoverybench_import import import_discoverybench
from tests.cli_runner import cli_env, forkpaths
from tests.exports.discoverybench_helpers import dump_upstream, make_folder, real_metadata, synth_metadata

MB = 2**20
GB = 2**30


def _count(engine, model) -> int:  # type: ignore[no-untyped-def]
    with session_scope(engine) as s:
        return int(s.exec(select(func.count()).select_from(model)).one())


def _million_query_folder(parent: Path) -> Path:
    """A synth folder whose metadata_0.json holds 10^6 queries (about 140 MB), written as a stream."""
    folder = parent / "synth" / "test" / "huge_0_0"
    folder.mkdir(parents=True)
    (folder / "data.csv").write_bytes(b"tempo,sold_out\n120,0.5\n90,0.9\n")
    head = dump_upstream(synth_metadata(queries=[])).decode().replace('"queries": []', '"queries": [')
    with (folder / "metadata_0.json").open("w", encoding="utf-8", newline="") as out:
        out.write(head.rsplit("}", 1)[0])
        out.write(",\r\n".join(
            f'{{"qid": {i}, "question": "What drives sell-outs in concert number {i:07d} of the season?", '
            f'"question_type": "general", "difficulty": 1}}' for i in range(1_000_000)))
        out.write("]}")
    return folder


def _cap_memory() -> None:  # runs in the child before exec
    resource.setrlimit(resource.RLIMIT_AS, (GB, GB))


def test_a_million_query_metadata_file_is_refused_under_a_one_gigabyte_cap(tmp_path):
    root = tmp_path / "tree"
    folder = _million_query_folder(root)
    size = (folder / "metadata_0.json").stat().st_size
    assert 100 * MB < size < 200 * MB  # under the upload limit, as in the issue
    env = cli_env(tmp_path / "data", FORKPATHS_MAX_UPLOAD_MB="200")
    done = subprocess.run([sys.executable, "-m", "curation.cli", "import-discoverybench", str(root)], env=env,
                          cwd=tmp_path, capture_output=True, text=True, preexec_fn=_cap_memory, timeout=300)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and "MemoryError" not in done.stderr
    assert "huge_0_0/metadata_0.json" in done.stderr and f"{size:,} bytes" in done.stderr
    assert "at most" in done.stderr and "Split its queries" in done.stderr


def test_a_metadata_file_over_the_query_cap_is_refused_naming_the_count(tmp_path):
    from exports.discoverybench.metadata import MAX_QUERIES_PER_FILE

    root = tmp_path / "tree"
    queries = [{"qid": i, "question": f"What drives sell-outs in concert {i}?", "question_type": "general"}
               for i in range(MAX_QUERIES_PER_FILE + 1)]
    make_folder(root / "synth" / "test", "bigger_0_0", {0: synth_metadata(queries=queries)})
    refused = forkpaths(tmp_path, "import-discoverybench", str(root))
    assert refused.returncode == 2
    assert f"bigger_0_0/metadata_0.json holds {MAX_QUERIES_PER_FILE + 1:,} queries" in refused.stderr
    assert "Nothing was imported" in refused.stderr


def _tree_of_many_folders(root: Path, count: int) -> Path:
    rows = b"".join(b"%d,%d\n" % (i, i * 7 % 100) for i in range(40_000))
    for n in range(count):
        make_folder(root / "real" / "test", f"folder_{n:03d}", {0: real_metadata()},
                    files={"data.csv": b"AGE,BMI\n" + rows})
    return root


def test_a_killed_import_leaves_no_orphan_file_after_the_next_start(tmp_path):
    root = _tree_of_many_folders(tmp_path / "tree", 60)
    data = tmp_path / "data"
    env = cli_env(data)
    assert forkpaths(tmp_path, "init").returncode == 0
    store = data / "datasets"
    child = subprocess.Popen([sys.executable, "-m", "curation.cli", "import-discoverybench", str(root)], env=env,
                             cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        # wait until the import has written files (staged, or in the store as before the staging area)
        while not any(p.is_file() for place in (store, staging_root(store)) if place.exists()
                      for p in place.rglob("*")):
            assert child.poll() is None, "the import ended before it wrote a file: make the tree larger"
            assert time.monotonic() < deadline
            time.sleep(0.002)  # polling the state, leaving the CPU to the import
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait()
    assert forkpaths(tmp_path, "init").returncode == 0  # a start
    engine = make_engine(f"sqlite:///{data / 'forkpaths.db'}")
    try:
        with session_scope(engine) as s:
            recorded = {f["relpath"] for d in s.exec(select(Dataset)).all() for f in d.files}
    finally:
        engine.dispose()
    on_disk = {p.relative_to(store).as_posix() for p in store.rglob("*") if p.is_file()} if store.exists() else set()
    assert on_disk == recorded  # every file in the store is a file of a recorded dataset
    assert not staging_root(store).exists()


def test_the_sweep_moves_in_a_committed_dataset_and_leaves_a_running_import_alone(engine, store, tmp_path):
    make_folder(tmp_path / "tree" / "real" / "test", "a_folder", {0: real_metadata()})
    with session_scope(engine) as s:
        import_discoverybench(session=s, actor=None, path=tmp_path / "tree", store=store, max_bytes=MB)
    [folder] = list(store.iterdir())
    # as if the process had died between the commit and the move: its folder is still staged
    dead = staging_root(store) / f"{os.uname().nodename}-{2**22 + 7}"  # no such pid (above pid_max's default)
    dead.mkdir(parents=True)
    folder.rename(dead / folder.name)
    (dead / "orphan-1234abcd").mkdir()
    (dead / "orphan-1234abcd" / "data.csv").write_text("x\n1\n")
    running = staging_root(store) / f"{os.uname().nodename}-{os.getpid()}" / "busy-0000"
    running.mkdir(parents=True)
    with session_scope(engine) as s:
        report = sweep_staging(session=s, store=store)
    assert report.moved_in == [folder.name] and report.removed == ["orphan-1234abcd"]
    assert [p.name for p in store.iterdir()] == [folder.name]
    assert running.is_dir() and not dead.exists()


# ------------------------------------------------------------------------------------------ control characters


def test_a_nul_in_an_answer_key_is_refused_with_file_line_and_column(engine, store, tmp_path):
    tree = tmp_path / "tree"
    make_folder(tree / "real" / "test", "a_folder", {0: real_metadata()})
    (tree / "answer_key_real.csv").write_bytes(
        b"dataset,metadataid,query_id,gold_hypo\r\na_folder,0,0,BMI rises\x00 with age.\r\n")
    with pytest.raises(DatasetImportError) as caught, session_scope(engine) as s:
        import_discoverybench(session=s, actor=None, path=tree, store=store, max_bytes=MB)
    message = str(caught.value)
    assert "answer_key_real.csv: row 1 (line 2), column gold_hypo holds a NUL byte (U+0000)" in message
    assert "DataError" not in message and len(message) < 400
    assert _count(engine, Dataset) == 0 and _count(engine, HypothesisTask) == 0
    assert list(store.iterdir()) == []


def test_a_control_character_in_a_metadata_text_is_refused_with_line_and_field(engine, store, tmp_path):
    tree = tmp_path / "tree"
    metadata = real_metadata()
    metadata["queries"][0][0]["question"] = "How does BMI\u0000 relate to age?"
    metadata["domain_knowledge"] = "Savings\u0007 behaviour."
    make_folder(tree / "real" / "test", "a_folder", {0: metadata})
    with pytest.raises(DatasetImportError) as caught, session_scope(engine) as s:
        import_discoverybench(session=s, actor=None, path=tree, store=store, max_bytes=MB)
    message = str(caught.value)
    text = dump_upstream(metadata).decode()
    bell = text[:text.index("\\u0007")].count("\n") + 1
    nul = text[:text.index("\\u0000")].count("\n") + 1
    assert f"a_folder/metadata_0.json (line {bell}): domain_knowledge holds a control character (U+0007)" in message
    assert f"a_folder/metadata_0.json (line {nul}): queries[0][0].question holds a NUL byte (U+0000)" in message
    assert _count(engine, Dataset) == 0 and _count(engine, HypothesisTask) == 0


# ------------------------------------------------------------------------------------ DataSciBench and AIRepr


def test_datascibench_files_are_capped_before_they_are_read_and_control_characters_refused(tmp_path):
    from exports.datascibench import MAX_INPUT_BYTES, DataSciBenchError, read_task
    from tests.exports.test_datascibench import METRIC, make_tree

    root = make_tree(tmp_path / "big")
    with (root / "data" / "csv_excel_1" / "huge.csv").open("wb") as out:
        out.truncate(MAX_INPUT_BYTES + 1)  # sparse: costs no disk, and is never read
    with pytest.raises(DataSciBenchError, match=rf"data/csv_excel_1/huge\.csv is {MAX_INPUT_BYTES + 1:,} bytes"):
        read_task(root, "csv_excel_1")
    root = make_tree(tmp_path / "nul_prompt")
    (root / "data" / "csv_excel_1" / "prompt.json").write_text('{\n "prompt": "Clean\\u0000 it."\n}')
    with pytest.raises(DataSciBenchError, match=r"prompt\.json line 2: the prompt holds a NUL byte \(U\+0000\)"):
        read_task(root, "csv_excel_1")
    root = make_tree(tmp_path / "nul_metric", metric=METRIC.replace("Plot exists", '"Plot\\0 exists"'))
    with pytest.raises(DataSciBenchError, match=r"line \d+ \(entry 2 of TMC-list\): the field metric holds a NUL"):
        read_task(root, "csv_excel_1")


def test_an_airepr_file_over_the_cap_is_refused_before_it_is_parsed(tmp_path):
    from evaluation.reproducibility.airepr import MAX_FILE_BYTES, AIReprError, read_airepr_files

    with pytest.raises(AIReprError, match=rf"gpt-4o_qrdata_react\.json is {MAX_FILE_BYTES + 1:,} bytes"):
        read_airepr_files([("gpt-4o_qrdata_react.json", b" " * (MAX_FILE_BYTES + 1))])

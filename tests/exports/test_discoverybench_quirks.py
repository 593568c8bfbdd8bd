"""Each quirk of upstream's files (evaluation-seeds-reference §1.3), on small hand-made folders."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pandas as pd
import pytest

from exports.discoverybench import (
    ColumnGroups,
    QuestionType,
    dump_metadata,
    normalise_question_type,
    read_discoverybench,
    read_task_folder,
    write_discoverybench,
)
from tests.exports.discoverybench_helpers import dump_upstream, make_folder, real_metadata, synth_metadata


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _round_trip(root: Path, tmp_path: Path) -> Path:
    out = write_discoverybench(read_discoverybench(root), tmp_path / "out")
    assert _files(out) == _files(root)
    return out


def test_columns_as_object_with_raw_and_as_list(tmp_path: Path) -> None:
    root = tmp_path / "db"
    make_folder(root / "real" / "test", "survey", {0: real_metadata()})
    make_folder(root / "synth" / "dev", "jazz_0_0", {0: synth_metadata()})
    tree = read_discoverybench(root)
    real, synth = tree.folders
    real_ds = real.metadata[0].metadata.datasets[0]
    synth_ds = synth.metadata[0].metadata.datasets[0]
    assert isinstance(real_ds.columns, ColumnGroups) and real_ds.columns_shape == "object"
    assert synth_ds.columns_shape == "list"
    assert [c.name for c in real_ds.column_list] == ["AGE", "BMI"]
    assert [c.description for c in synth_ds.column_list] == ["Beats per minute", "Share of seats sold"]
    _round_trip(root, tmp_path)


def test_a_real_folder_with_list_columns_and_flat_queries_is_read_too(tmp_path: Path) -> None:
    """Upstream's evaluator crashes when told the wrong kind; the reader takes either shape in either kind."""
    odd = real_metadata(
        datasets=synth_metadata()["datasets"],
        queries=[{"qid": 0, "question_type": "context", "question": "Which group?"}],
    )
    folder = make_folder(tmp_path / "real" / "train", "odd", {0: odd})
    read = read_task_folder(folder)
    assert read.kind == "real" and read.metadata[0].metadata.queries_shape == "flat"
    assert dump_metadata(read.metadata[0]) == dump_upstream(odd)


def test_queries_as_list_of_lists_and_flat(tmp_path: Path) -> None:
    nested = real_metadata(queries=[
        [{"qid": 0, "question_type": "context", "question": "Q0"}, {"qid": 1, "question_type": "variables",
                                                                      "question": "Q1"}],
        [{"qid": 2, "question_type": "relationship", "question": "Q2"}],
    ])
    flat = synth_metadata(queries=[{"qid": 3, "question": "Q3"}, {"qid": 4, "question": "Q4"}])
    root = tmp_path / "db"
    make_folder(root / "real" / "test", "nested", {0: nested})
    make_folder(root / "synth" / "test", "flat_0_0", {0: flat})
    tree = read_discoverybench(root)
    assert [(t.folder, t.qid, t.field) for t in tree.tasks] == [
        ("nested", 0, "queries[0][0]"), ("nested", 1, "queries[0][1]"), ("nested", 2, "queries[1][0]"),
        ("flat_0_0", 3, "queries[0]"), ("flat_0_0", 4, "queries[1]"),
    ]
    _round_trip(root, tmp_path)


@pytest.mark.parametrize(
    ("written", "meant"),
    [
        ("relationhsip", QuestionType.RELATIONSHIP),
        ("relationship", QuestionType.RELATIONSHIP),
        ("Relationship ", QuestionType.RELATIONSHIP),
        ("variable", QuestionType.VARIABLES),
        ("VARIABLES", QuestionType.VARIABLES),
        ("contxt", QuestionType.CONTEXT),
        ("general", QuestionType.GENERAL),
        ("banana", None),
        ("", None),
        (None, None),
    ],
)
def test_question_type_is_normalised(written: str | None, meant: QuestionType | None) -> None:
    assert normalise_question_type(written) is meant


def test_question_type_typo_is_kept_for_the_round_trip(tmp_path: Path) -> None:
    data = real_metadata(queries=[[{"qid": 0, "question_type": "relationhsip", "question": "How?"}]])
    root = tmp_path / "db"
    make_folder(root / "real" / "test", "typo", {0: data})
    tree = read_discoverybench(root)
    (task,) = tree.tasks
    assert task.question_type is QuestionType.RELATIONSHIP and task.question_type_raw == "relationhsip"
    out = _round_trip(root, tmp_path)
    assert b'"relationhsip"' in (out / "real/test/typo/metadata_0.json").read_bytes()


def test_cp1252_bytes_are_read_and_written_back(tmp_path: Path) -> None:
    data = synth_metadata(domain="jazz music", queries=[{"qid": 1, "question": "Miles Davis\u2019 tempo in \u00b5s?"}])
    content = json.dumps(data, indent=4, ensure_ascii=False).replace("\n", "\r\n").encode("cp1252")
    assert b"\x92" in content and b"\xb5" in content
    with pytest.raises(UnicodeDecodeError):
        content.decode("utf-8")
    root = tmp_path / "db"
    make_folder(root / "synth" / "dev", "jazz-music_0_0", {0: content})
    tree = read_discoverybench(root)
    assert tree.tasks[0].question == "Miles Davis\u2019 tempo in \u00b5s?"
    file = tree.folders[0].metadata[0]
    assert file.style.encoding == "cp1252"
    _round_trip(root, tmp_path)
    # an edit that still fits cp1252 stays cp1252; one that does not is written as UTF-8
    query = file.metadata.query_list()[0][1]
    query.question = "Tempo \u2013 and sell-outs?"
    assert dump_metadata(file).decode("cp1252").count("\u2013") == 1
    query.question = "Tempo \u2192 sell-outs?"
    assert "\u2192" in dump_metadata(file).decode("utf-8")


def test_stata_files_are_read_with_pandas(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    pd.DataFrame({"year": [2000, 2001], "share": [0.1, 0.2]}).to_stata(
        buffer, write_index=False, variable_labels={"share": "Share of immigrants"}
    )
    data = real_metadata(datasets=[{"name": "immi.dta", "description": "Imputed shares.",
                                    "columns": {"raw": [{"name": "year", "description": "Year"}]}}])
    root = tmp_path / "db"
    make_folder(root / "real" / "train", "immigration", {0: data}, files={"immi.dta": buffer.getvalue()})
    tree = read_discoverybench(root)
    (stata,) = tree.folders[0].files
    assert stata.format == "stata" and stata.columns == ("year", "share")
    assert stata.column_labels == {"share": "Share of immigrants"}
    _round_trip(root, tmp_path)


def test_notebook_checkpoints_and_hidden_files_are_ignored(tmp_path: Path) -> None:
    root = tmp_path / "db"
    folder = make_folder(root / "synth" / "train", "steampunk-culture_0_3", {0: synth_metadata()})
    checkpoints = folder / ".ipynb_checkpoints"
    checkpoints.mkdir()
    (checkpoints / "metadata_0-checkpoint.json").write_text("{ broken")
    (checkpoints / "metadata_0.json").write_text("{ broken too")
    (folder / ".DS_Store").write_bytes(b"\x00\x01")
    tree = read_discoverybench(root)
    assert [t.qid for t in tree.tasks] == [7]
    out = write_discoverybench(tree, tmp_path / "out")
    assert not list(out.rglob(".ipynb_checkpoints")) and not list(out.rglob(".DS_Store"))


def test_optional_fields_unknown_keys_and_id_not_k(tmp_path: Path) -> None:
    data = real_metadata(id=0, curator_note={"by": "x", "n": [1, 2.5, None]})
    del data["domain_knowledge"]  # missing in one upstream test file
    data["datasets"][0]["columns"]["raw"][0]["unit"] = "years"
    data["datasets"][0]["columns"]["extra_group"] = []
    root = tmp_path / "db"
    make_folder(root / "real" / "test", "survey", {3: data})
    tree = read_discoverybench(root)
    file = tree.folders[0].metadata[0]
    assert file.k == 3 and file.metadata.id == 0 and tree.tasks[0].metadata_k == 3
    assert file.metadata.domain_knowledge is None
    # the content is rendered (not the kept bytes) with the unknown keys, in the file's order
    assert json.loads(json.dumps(file.metadata.model_dump(mode="python"))) == data
    assert list(file.metadata.model_dump(mode="python")) == list(data)
    _round_trip(root, tmp_path)


def test_queries_without_gold_are_tasks_to_curate(tmp_path: Path) -> None:
    with_gold = synth_metadata(queries=[{"qid": 1, "question": "Q?", "true_hypothesis": "More tempo, fewer sell-outs.",
                                         "true_hypothesis_expr": "df['sold_out'] < 0.5", "target_col": "sold_out",
                                         "relevant_cols": ["tempo"]}])
    root = tmp_path / "db"
    make_folder(root / "synth" / "dev", "jazz_1_0", {0: with_gold})
    make_folder(root / "synth" / "test", "jazz_0_0", {0: synth_metadata()})
    tree = read_discoverybench(root)
    gold_task, open_task = tree.tasks
    assert not gold_task.needs_curation and gold_task.gold is not None
    assert (gold_task.gold.source, gold_task.gold.target_col, gold_task.gold.relevant_cols) == (
        "metadata", "sold_out", ["tempo"])
    assert open_task.needs_curation and open_task.gold is None


def test_answer_keys_give_test_gold_from_root_or_eval_folder(tmp_path: Path) -> None:
    root = tmp_path / "db"
    make_folder(root / "real" / "test", "survey", {0: real_metadata()})
    (root / "eval").mkdir()
    (root / "eval" / "answer_key_real.csv").write_bytes(
        b'dataset,metadataid,query_id,gold_hypo\r\nsurvey,0,0,"BMI rises with age, weakly."\r\n'
    )
    tree = read_discoverybench(root)
    (task,) = tree.tasks
    assert task.gold is not None and task.gold.text == "BMI rises with age, weakly." and task.gold.source == "answer_key"
    out = write_discoverybench(tree, tmp_path / "out")
    assert (out / "answer_key_real.csv").read_bytes() == (root / "eval" / "answer_key_real.csv").read_bytes()


def test_kind_and_split_outside_the_layout(tmp_path: Path) -> None:
    folder = make_folder(tmp_path, "loose", {0: synth_metadata()})
    read = read_task_folder(folder)
    assert (read.kind, read.split) == ("synth", "test")
    assert read_task_folder(folder, kind="synth", split="dev").split == "dev"
    real = read_task_folder(make_folder(tmp_path, "loose_real", {0: real_metadata()}))
    assert real.kind == "real"


def test_an_edited_query_is_written_in_the_files_style(tmp_path: Path) -> None:
    root = tmp_path / "db"
    make_folder(root / "real" / "test", "survey", {0: real_metadata()})
    tree = read_discoverybench(root)
    query = tree.folders[0].metadata[0].metadata.query_list()[0][1]
    query.question = "Does BMI rise with age?"
    out = write_discoverybench(tree, tmp_path / "out")
    written = (out / "real/test/survey/metadata_0.json").read_bytes()
    assert written == dump_upstream(real_metadata(queries=[[{"qid": 0, "question_type": "relationship",
                                                             "question": "Does BMI rise with age?"}]]))
    assert read_discoverybench(out).tasks[0].question == "Does BMI rise with age?"


def test_files_no_metadata_names_are_kept(tmp_path: Path) -> None:
    root = tmp_path / "db"
    make_folder(root / "real" / "train", "survey", {0: real_metadata()},
                files={"data.csv": b"AGE,BMI\n1,2\n", "codebook.pdf": b"%PDF-1.4"})
    tree = read_discoverybench(root)
    extra = next(f for f in tree.folders[0].files if f.name == "codebook.pdf")
    assert not extra.named and extra.format == "other"
    _round_trip(root, tmp_path)
    out = write_discoverybench(tree, tmp_path / "named-only", include_unnamed_files=False)
    assert not (out / "real/train/survey/codebook.pdf").exists()


def test_writer_refuses_to_overwrite_and_leaves_nothing_on_failure(tmp_path: Path) -> None:
    root = tmp_path / "db"
    make_folder(root / "real" / "test", "survey", {0: real_metadata()})
    tree = read_discoverybench(root)
    dest = tmp_path / "out"
    dest.mkdir()
    (dest / "keep.txt").write_text("mine")
    with pytest.raises(FileExistsError):
        write_discoverybench(tree, dest)
    assert (dest / "keep.txt").read_text() == "mine"
    (root / "real/test/survey/data.csv").unlink()  # the data vanished after reading
    with pytest.raises(FileNotFoundError):
        write_discoverybench(tree, tmp_path / "fresh")
    assert not (tmp_path / "fresh").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_cp1252_data_file_is_read_with_its_encoding(tmp_path: Path) -> None:
    data = real_metadata(datasets=[{"name": "data.csv", "description": "x",
                                    "columns": {"raw": [{"name": "Größe µm", "description": "size"}]}}])
    content = "Größe µm,n\n1,2\n".encode("cp1252")
    folder = make_folder(tmp_path / "real" / "test", "sizes", {0: data}, files={"data.csv": content})
    (csv_file,) = read_task_folder(folder).files
    assert csv_file.encoding == "cp1252" and csv_file.columns == ("Größe µm", "n")

"""Reading a QRData folder (upstream's benchmark layout): the shared subset in ../shared/qrdata, and each way a
folder can be wrong, refused with a sentence naming the file, the record and the field."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from exports.qrdata import QRDataFormatError, QRDataPart, blind_part, dataset_name, gold_number, read_qrdata
from tests.conftest import PROJECT_ROOT, unavailable

SHARED_QRDATA = PROJECT_ROOT.parent / "shared" / "qrdata"


@pytest.fixture
def shared() -> Path:
    if not (SHARED_QRDATA / "QRData.json").is_file():
        unavailable("shared", f"QRData's reference data is not at {SHARED_QRDATA} (../shared/qrdata)")
    return SHARED_QRDATA


def test_the_shared_subset_reads_into_one_dataset_per_set_of_files(shared):
    imported = read_qrdata(shared)
    records = json.loads((shared / "QRData.json").read_text(encoding="utf-8"))
    index = json.loads((shared / "upstream_index.json").read_text(encoding="utf-8"))
    questions = [q for d in imported.datasets for q in d.part.questions]
    assert len(questions) == len(records) == 29
    assert sorted(q.id for q in questions) == sorted(str(i) for i in index)  # ids: upstream positions
    by_id = {q.id: q for q in questions}
    for position, record in zip(index, records, strict=True):
        q = by_id[str(position)]
        assert (q.question, q.answer, q.data_files) == (record["question"], record["answer"], record["data_files"])
        assert q.question_type == record["meta_data"]["question_type"]
    assert sum(q.question_type == "numerical" for q in questions) == 25
    assert by_id["352"].answer == "-4.91" and by_id["352"].reasoning == "causal"
    assert by_id["364"].choices == ["a", "b", "c"] and by_id["364"].answer == "B"
    names = [d.name for d in imported.datasets]
    assert len(names) == len(set(names)) == 12
    polls = next(d for d in imported.datasets if d.name == "qrdata_pres08_polls08")
    assert [f.name for f in polls.files] == ["pres08.csv", "polls08.csv"] and len(polls.part.questions) == 4
    assert all(q.reasoning == "statistical" for q in polls.part.questions)  # QSS: keyword Statistics
    for d in imported.datasets:
        assert {f for q in d.part.questions for f in q.data_files} == {f.name for f in d.files}
        assert d.description and d.title.startswith("QRData: ")
        for f in d.files:
            assert f.sha256 == hashlib.sha256(f.source.read_bytes()).hexdigest() and f.size == f.source.stat().st_size
            assert f.origin.get("repo")  # data_sources.json: where the file was copied from
    assert "Attribution-NonCommercial 4.0" in imported.licence and "Findings of ACL 2024" in imported.attribution
    part = QRDataPart.model_validate(json.loads(polls.part.model_dump_json()))  # the payload round-trips
    assert part == polls.part and all(q.answer is None for q in blind_part(part).questions)


def _folder(tmp_path: Path, records: list[dict], *, files: tuple[str, ...] = ("d.csv",), index: object = None
            ) -> Path:
    root = tmp_path / "qr"
    (root / "data").mkdir(parents=True)
    for name in files:
        (root / "data" / name).write_text("x,y\n1,2\n", encoding="utf-8")
    (root / "QRData.json").write_text(json.dumps(records), encoding="utf-8")
    if index is not None:
        (root / "upstream_index.json").write_text(json.dumps(index), encoding="utf-8")
    return root


def _record(**kw: object) -> dict:
    meta = {"reference": "book", "keywords": ["Statistics"], "question_type": "numerical"}
    meta.update(kw.pop("meta", {}))  # type: ignore[arg-type]
    return {"data_description": "d.csv holds x and y.", "question": "What is the mean of x?", "answer": "1",
            "data_files": ["d.csv"], "meta_data": meta, **kw}


def test_without_an_index_the_position_is_the_id(tmp_path):
    imported = read_qrdata(_folder(tmp_path, [_record(), _record(answer="2")]))
    assert [q.id for q in imported.datasets[0].part.questions] == ["0", "1"]
    assert imported.datasets[0].name == "qrdata_d" and imported.licence == ""


@pytest.mark.parametrize(("records", "index", "words"), [
    ([], None, "no list of question records"),
    ([_record(answer="about one")], None, r"record 1 \(id 0\), field answer: the gold answer 'about one' of a "
                                          "numerical question is not a number"),
    ([_record(answer="nan")], None, "is not a number"),
    ([_record(answer="C", meta={"question_type": "multiple_choice", "multiple_choices": ["a", "b"]})], None,
     "field answer: the gold answer 'C' is none of the choices"),
    ([_record(meta={"question_type": "multiple_choice"}, answer="a")], None,
     "needs its choices"),
    ([_record(meta={"question_type": "open"})], None, "field meta_data.question_type"),
    ([_record(data_files=[])], None, "field data_files"),
    ([_record(question="")], None, "field question"),
    ([{"question": "q"}], None, "has no meta_data object"),
    (["text"], None, "is a JSON str, not a question record"),
    ([_record(data_files=["missing.csv"])], None, "names the data file missing.csv, which is not in"),
    ([_record(data_files=["../d.csv"])], None, "data files are plain names inside data/"),
    ([_record(), _record()], [5], "must be a list of 2 non-negative integers"),
    ([_record(), _record()], [5, 5], "gives the same upstream position to two records"),
    ([_record(), _record()], [5, -1], "non-negative integers"),
])
def test_a_folder_that_does_not_fit_is_refused_with_where(tmp_path, records, index, words):
    with pytest.raises(QRDataFormatError, match=words):
        read_qrdata(_folder(tmp_path, records, index=index))


def test_a_folder_without_questions_or_with_broken_json_is_refused(tmp_path):
    with pytest.raises(QRDataFormatError, match="has no QRData.json"):
        read_qrdata(tmp_path)
    root = _folder(tmp_path, [_record()])
    (root / "QRData.json").write_text("[{", encoding="utf-8")
    with pytest.raises(QRDataFormatError, match="QRData.json is not JSON"):
        read_qrdata(root)


def test_a_data_file_that_is_a_symlink_is_not_followed(tmp_path):
    root = _folder(tmp_path, [_record()], files=())
    outside = tmp_path / "secret.csv"
    outside.write_text("a\n1\n", encoding="utf-8")
    (root / "data" / "d.csv").symlink_to(outside)
    with pytest.raises(QRDataFormatError, match="not in"):
        read_qrdata(root)


def test_gold_numbers_and_names_follow_upstream():
    assert gold_number("5.36%") == pytest.approx(0.0536) and gold_number("-7.59") == -7.59
    assert gold_number("255051") == 255051.0
    with pytest.raises(ValueError):
        gold_number("inf")
    assert dataset_name(["pres08.csv", "polls08.csv"]) == "qrdata_pres08_polls08"
    assert dataset_name(["USGini.csv"]) == "qrdata_usgini"
    long = dataset_name([f"a_very_long_file_name_{i}.csv" for i in range(5)])
    assert len(long) <= 64 and long.startswith("qrdata_a_very_long")


def test_two_file_sets_that_fold_to_one_name_get_two_names(tmp_path):
    records = [_record(data_files=["a b.csv"]), _record(data_files=["a-b.csv"])]
    imported = read_qrdata(_folder(tmp_path, records, files=("a b.csv", "a-b.csv")))
    names = [d.name for d in imported.datasets]
    assert names[0] == "qrdata_a_b" and names[1].startswith("qrdata_a_b_") and len(set(names)) == 2
    shutil.rmtree(tmp_path / "qr")

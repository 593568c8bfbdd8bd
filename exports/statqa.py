"""StatQA (Zhu et al., NeurIPS 2024 D&B): the part a StatQA dataset keeps in a release, and the reader of the
layout AIRepr's ``download_data.sh`` builds (``../shared/statqa/README.md``).

A StatQA record asks which statistical method(s) and which columns answer a question over one table. Every table
(``processed_dataset/<Name_With_Underscores>.csv``) becomes one forkpaths dataset, whose part
(``DatasetRelease.parts["statqa"]``, :class:`StatQAPart`) holds the table's column metadata and its questions,
each with the id AIRepr uses (the record's index in upstream ``mini-StatQA.json``) and its gold (the columns and
methods, and the gold's text as upstream wrote it: upstream's scorer reads that text, quirks included).

:func:`read_statqa_folder` is a pure function: it reads the whole folder and checks every record before it returns
anything (a problem raises :class:`StatQAFormatError` naming the file, the record and the field), so a caller that
stores what it returns never stores half an import. Nothing here touches a database.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
import unicodedata
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from exports.errors import FormatError

__all__ = [
    "DIFFICULTIES",
    "LICENCE",
    "METHODS",
    "PART_FORMAT_VERSION",
    "SOURCE",
    "TASK_TYPES",
    "ImportedDataset",
    "ImportedFile",
    "StatQAColumn",
    "StatQAFormatError",
    "StatQAGold",
    "StatQAImport",
    "StatQAMethodResult",
    "StatQAPart",
    "StatQAQuestion",
    "StatQARelevantColumn",
    "StatQASource",
    "blind_part",
    "dataset_name_for",
    "part_counts",
    "part_hash_input",
    "read_statqa_folder",
]

PART_FORMAT_VERSION = "1.0"
LICENCE = "GPL-3.0"
SOURCE = {"repository": "https://github.com/HKUSTDial/StatQA",
          "commit": "31ca981b9d8dbf7423e5bfc07d7ba4374b3544cd", "file": "StatQA/mini-StatQA.json"}

TASK_TYPES: tuple[str, ...] = ("Correlation Analysis", "Contingency Table Test", "Distribution Compliance Test",
                               "Descriptive Statistics", "Variance Test")
DIFFICULTIES: tuple[str, ...] = ("easy", "hard")
#: the methods StatQA asks a model to choose from, by task type (the names its gold uses)
METHODS: dict[str, tuple[str, ...]] = {
    "Correlation Analysis": ("Pearson Correlation Coefficient", "Spearman Correlation Coefficient",
                             "Kendall Correlation Coefficient", "Partial Correlation Coefficient"),
    "Distribution Compliance Test": ("Anderson-Darling Test", "Shapiro-Wilk Test of Normality",
                                     "Kolmogorov-Smirnov Test for Normality", "Lilliefors Test",
                                     "Kolmogorov-Smirnov Test", "Kolmogorov-Smirnov Test for Uniform distribution",
                                     "Kolmogorov-Smirnov Test for Gamma distribution",
                                     "Kolmogorov-Smirnov Test for Exponential distribution"),
    "Contingency Table Test": ("Chi-square Independence Test", "Fisher Exact Test", "Mantel-Haenszel Test"),
    "Descriptive Statistics": ("Mean", "Median", "Mode", "Range", "Quartile", "Standard Deviation", "Skewness",
                               "Kurtosis"),
    "Variance Test": ("Mood Variance Test", "Levene Test", "Bartlett Test", "F-Test for Variance"),
}

RECORDS_FILE = "mini-StatQA.json"
INDEX_FILE = "upstream_index.json"
TABLES_DIR = "processed_dataset"
COLUMNS_DIR = "column_metadata"
DATASETS_FILE = "dataset_metadata.csv"
LICENCE_FILE = "LICENSE"
RECORD_FIELDS = ("dataset", "refined_question", "relevant_column", "results", "ground_truth", "task", "difficulty")
COLUMN_FIELDS = ("column_header", "column_description", "data_type", "num_of_rows", "is_normality")


class StatQAFormatError(FormatError):
    """A StatQA folder that cannot be read: the sentence names the file, the record (its upstream id) and the
    field."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


# ------------------------------------------------------------------------------------ the part


class StatQAColumn(_Strict):
    """One column of the table, from ``column_metadata/<dataset>_col_meta.csv`` (verbatim)."""

    column_header: str
    column_description: str = ""
    data_type: str = Field(default="", description="StatQA's type: quant, cate, id, other")
    num_of_rows: int | None = None
    is_normality: bool | None = None


class StatQARelevantColumn(_Strict):
    column_header: str
    is_strata: bool = False
    is_control: bool = False


class StatQAMethodResult(_Strict):
    """One applicable method of a record, with its computed result and conclusion (verbatim text)."""

    method: str
    result: str
    conclusion: str


class StatQAGold(_Strict):
    """The expected selection. ``text`` is the record's ``ground_truth`` as upstream wrote it: upstream's scorer
    reads this text (turning every ``'`` into ``"`` first), so scoring reads it too."""

    columns: list[str]
    methods: list[str]
    text: str


class StatQAQuestion(_Strict):
    """One StatQA record. ``relevant_columns`` and ``results`` reveal the gold: a blind reader gets neither."""

    id: str = Field(pattern=r"^[0-9]+$", description="the record's index in upstream mini-StatQA.json (AIRepr's id)")
    question: str = Field(min_length=1, description="refined_question")
    task: Literal["Correlation Analysis", "Contingency Table Test", "Distribution Compliance Test",
                  "Descriptive Statistics", "Variance Test"]
    difficulty: Literal["easy", "hard"]
    relevant_columns: list[StatQARelevantColumn] | None = None
    results: list[StatQAMethodResult] | None = None
    gold: StatQAGold | None = None


class StatQASource(_Strict):
    repository: str = SOURCE["repository"]
    commit: str = SOURCE["commit"]
    file: str = SOURCE["file"]
    licence: str = LICENCE


class StatQAPart(_Strict):
    """What a StatQA dataset keeps in a release (``DatasetRelease.parts["statqa"]``)."""

    format_version: Literal["1.0"] = "1.0"
    dataset: str = Field(min_length=1, description="StatQA's name of the table, e.g. 'Crop Production Dataset'")
    data_file: str = Field(min_length=1, description="the table's file name among the dataset's files")
    description: str = ""
    columns: list[StatQAColumn] = Field(default_factory=list)
    source: StatQASource = Field(default_factory=StatQASource)
    questions: list[StatQAQuestion]


def part_counts(part: StatQAPart) -> dict[str, int]:
    """Its summary counts: questions (first: the number of items), then those with gold."""
    return {"questions": len(part.questions), "with gold": sum(q.gold is not None for q in part.questions)}


def part_hash_input(part: StatQAPart) -> Any:
    """What the kind's scores depend on: each question's id, task type, difficulty and gold text (the text, not
    the lists: upstream's scorer reads the text)."""
    return [{"id": q.id, "task": q.task, "difficulty": q.difficulty,
             "gold": None if q.gold is None else q.gold.text} for q in part.questions]


def blind_part(part: StatQAPart) -> StatQAPart:
    """What a reader blind to the dataset keeps: the table's metadata and the questions, without their gold,
    relevant columns or method results (each of them gives the answer away)."""
    return part.model_copy(update={"questions": [q.model_copy(update={"gold": None, "relevant_columns": None,
                                                                       "results": None})
                                                 for q in part.questions]})


# ------------------------------------------------------------------------------------ the import


class ImportedFile(_Strict):
    """One file of an imported dataset: its name in the dataset folder and where it is read from."""

    name: str
    source: Path
    sha256: str
    size: int
    role: str = "data"
    format: str = ""
    columns: list[dict[str, Any]] = Field(default_factory=list)


class ImportedDataset(_Strict):
    """One dataset an import registers: its files and the kind's part."""

    name: str
    title: str
    description: str
    research_question: str
    data_file: str = Field(description="the name of its main table among ``files``")
    files: list[ImportedFile]
    part: StatQAPart


class StatQAImport(_Strict):
    """What :func:`read_statqa_folder` read: one dataset per StatQA table, in the order of the records."""

    folder: str
    licence: str = LICENCE
    datasets: list[ImportedDataset]

    @property
    def questions(self) -> int:
        return sum(len(d.part.questions) for d in self.datasets)


def dataset_name_for(statqa_name: str) -> str:
    """The forkpaths dataset name of a StatQA table: ``statqa_`` and its name in lower-case ASCII letters and
    digits joined by ``_`` (``Crop Production Dataset`` → ``statqa_crop_production_dataset``), at most 64
    characters."""
    ascii_name = unicodedata.normalize("NFKD", statqa_name).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "_", ascii_name.lower()).strip("_")
    return f"statqa_{slug}"[:64].rstrip("_")


def table_file_name(statqa_name: str) -> str:
    """The file of a table as AIRepr's download_data.sh names it (spaces → ``_``)."""
    return statqa_name.replace(" ", "_") + ".csv"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _read_json(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise StatQAFormatError(f"{path} is missing: a StatQA folder holds {what}.") from None
    except UnicodeDecodeError as exc:
        raise StatQAFormatError(f"{path} is not UTF-8 text (byte {exc.start + 1}).") from None
    except ValueError as exc:
        raise StatQAFormatError(f"{path} is not JSON: {exc}.") from None


def _read_csv(path: Path, needed: tuple[str, ...]) -> list[dict[str, str]]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise StatQAFormatError(f"{path} is not UTF-8 text (byte {exc.start + 1}).") from None
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in needed if c not in (reader.fieldnames or [])]
    if missing:
        raise StatQAFormatError(f"{path} has no column {', '.join(repr(m) for m in missing)} (its header: "
                                f"{', '.join(reader.fieldnames or []) or 'none'}).")
    return list(reader)


def _bool(value: str) -> bool | None:
    v = value.strip().lower()
    return True if v == "true" else False if v == "false" else None


def _int(value: str) -> int | None:
    try:
        return int(value.strip())
    except ValueError:
        return None


def _columns(folder: Path, name: str) -> list[StatQAColumn]:
    path = folder / COLUMNS_DIR / f"{name}_col_meta.csv"
    if not path.is_file():
        raise StatQAFormatError(f"The column metadata of dataset {name!r} is missing: expected {path}.")
    rows = _read_csv(path, ("column_header", "column_description", "data_type"))
    return [StatQAColumn(column_header=r["column_header"], column_description=r.get("column_description") or "",
                         data_type=r.get("data_type") or "", num_of_rows=_int(r.get("num_of_rows") or ""),
                         is_normality=_bool(r.get("is_normality") or "")) for r in rows]


def _field_json(record: dict[str, Any], field: str, where: str) -> Any:
    try:
        return json.loads(record[field])
    except ValueError as exc:
        raise StatQAFormatError(f"{where}: its field {field!r} is not JSON text ({exc}).") from None


def _question(record: Any, upstream_id: int, where: str) -> tuple[str, StatQAQuestion]:
    if not isinstance(record, dict):
        raise StatQAFormatError(f"{where} is not a JSON object.")
    for field in RECORD_FIELDS:
        if not isinstance(record.get(field), str):
            what = "is missing" if field not in record else "is not a string"
            raise StatQAFormatError(f"{where}: its field {field!r} {what} (a StatQA record holds "
                                    f"{', '.join(RECORD_FIELDS)}, each as text).")
    extra = sorted(set(record) - set(RECORD_FIELDS))
    if extra:
        raise StatQAFormatError(f"{where} has field(s) StatQA records do not have: {', '.join(extra)}.")
    if record["task"] not in TASK_TYPES:
        raise StatQAFormatError(f"{where}: its task {record['task']!r} is none of StatQA's five "
                                f"({', '.join(TASK_TYPES)}).")
    if record["difficulty"] not in DIFFICULTIES:
        raise StatQAFormatError(f"{where}: its difficulty {record['difficulty']!r} is neither easy nor hard.")
    gold = _field_json(record, "ground_truth", where)
    if not (isinstance(gold, dict) and all(isinstance(gold.get(k), list) and all(isinstance(x, str)
                                                                                 for x in gold[k])
                                           for k in ("columns", "methods"))):
        raise StatQAFormatError(f"{where}: its ground_truth is not an object with the lists of text 'columns' "
                                "and 'methods'.")
    relevant = _field_json(record, "relevant_column", where)
    results = _field_json(record, "results", where)
    try:
        question = StatQAQuestion(
            id=str(upstream_id), question=record["refined_question"], task=record["task"],
            difficulty=record["difficulty"], relevant_columns=relevant, results=results,
            gold=StatQAGold(columns=gold["columns"], methods=gold["methods"], text=record["ground_truth"]))
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(x) for x in first.get("loc", ()))
        field = {"relevant_columns": "relevant_column", "question": "refined_question"}.get(loc.split(".")[0], loc)
        raise StatQAFormatError(f"{where}: its field {field or 'record'!r} does not fit ({loc}: "
                                f"{first.get('msg')}).") from None
    return record["dataset"], question


def read_statqa_folder(folder: Path) -> StatQAImport:
    """Read a StatQA folder (the layout of ``../shared/statqa``: ``mini-StatQA.json``, ``upstream_index.json``,
    ``processed_dataset/``, ``column_metadata/``, ``dataset_metadata.csv``, ``LICENSE``) into one dataset per
    table, each with its table, the licence and its questions with their gold.

    Without ``upstream_index.json`` the file is taken for upstream's whole ``mini-StatQA.json``: a record's id is
    its position in it.

    Raises:
        StatQAFormatError: a missing file, a record or field that does not fit, two records with one id (the
            sentence names the file, the record and the field); nothing is returned then.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise StatQAFormatError(f"{folder} is not a folder; give the folder that holds {RECORDS_FILE}.")
    records_path = folder / RECORDS_FILE
    records = _read_json(records_path, f"{RECORDS_FILE}, the list of records")
    if not isinstance(records, list) or not records:
        raise StatQAFormatError(f"{records_path} is not a non-empty list of StatQA records.")
    index_path = folder / INDEX_FILE
    if index_path.is_file():
        ids = _read_json(index_path, "")
        if not (isinstance(ids, list) and all(isinstance(i, int) and not isinstance(i, bool) and i >= 0
                                               for i in ids)):
            raise StatQAFormatError(f"{index_path} is not a list of record indexes (whole numbers, 0 or more).")
        if len(ids) != len(records):
            raise StatQAFormatError(f"{index_path} gives {len(ids)} indexes for the {len(records)} records of "
                                    f"{records_path}: one per record, in order.")
        seen: dict[int, int] = {}
        for n, i in enumerate(ids, 1):
            if i in seen:
                raise StatQAFormatError(f"{index_path} gives index {i} to records {seen[i]} and {n}; each record "
                                        "has its own.")
            seen[i] = n
    else:
        ids = list(range(len(records)))
    licence_path = folder / LICENCE_FILE
    if not licence_path.is_file():
        raise StatQAFormatError(f"{licence_path} is missing: StatQA is GPL-3.0, and its licence goes with every "
                                "copy of its data.")
    meta_path = folder / DATASETS_FILE
    if not meta_path.is_file():
        raise StatQAFormatError(f"{meta_path} is missing: it describes each dataset the records name.")
    descriptions = {r["dataset"]: r.get("dataset_description") or "" for r in _read_csv(meta_path, ("dataset",))}

    by_table: dict[str, list[StatQAQuestion]] = {}
    for n, (record, upstream_id) in enumerate(zip(records, ids, strict=True), 1):
        where = f"{records_path}, record {n} (upstream id {upstream_id})"
        table, question = _question(record, upstream_id, where)
        by_table.setdefault(table, []).append(question)

    licence = ImportedFile(name=LICENCE_FILE, source=licence_path, sha256=_sha256(licence_path),
                           size=licence_path.stat().st_size, role="other", format="text")
    datasets = []
    names: dict[str, str] = {}
    for table, questions in by_table.items():
        name = dataset_name_for(table)
        if name in names:
            raise StatQAFormatError(f"The datasets {names[name]!r} and {table!r} of {records_path} would both be "
                                    f"registered as {name!r}.")
        names[name] = table
        if table not in descriptions:
            raise StatQAFormatError(f"{meta_path} has no row for dataset {table!r}, which records of "
                                    f"{records_path} name (ids {', '.join(q.id for q in questions[:5])}).")
        data_name = table_file_name(table)
        data_path = folder / TABLES_DIR / data_name
        if not data_path.is_file():
            raise StatQAFormatError(f"The table of dataset {table!r} is missing: expected {data_path} (records "
                                    f"{', '.join(q.id for q in questions[:5])} ask about it).")
        columns = _columns(folder, table)
        data = ImportedFile(name=data_name, source=data_path, sha256=_sha256(data_path),
                            size=data_path.stat().st_size, role="data", format="csv",
                            columns=[{"name": c.column_header, "description": c.column_description,
                                      "data_type": c.data_type} for c in columns])
        part = StatQAPart(dataset=table, data_file=data_name, description=descriptions[table], columns=columns,
                          questions=questions)
        datasets.append(ImportedDataset(
            name=name, title=table, description=descriptions[table],
            research_question=f"StatQA: which columns and statistical methods answer each of {len(questions)} "
                              f"question{'s' if len(questions) != 1 else ''} about the {table}?",
            data_file=data_name, files=[data, licence], part=part))
    return StatQAImport(folder=str(folder), datasets=datasets)

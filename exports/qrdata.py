"""QRData (Liu et al., "Are LLMs Capable of Data-based Statistical and Causal Reasoning?", Findings of ACL 2024):
upstream's benchmark folder read into forkpaths datasets, and the part a QRData dataset keeps in a release
(``DatasetRelease.parts["qrdata"]``, validated by :class:`QRDataPart`).

Upstream's layout (github.com/xxxiaol/QRData ``benchmark/``, with ``data.zip`` unzipped as ``data/``)::

    QRData.json            a list of question records (no ids)
    upstream_index.json    optional: each record's position in upstream's full QRData.json, for a subset; the
                           position is the question's id (the id AIRepr uses). Without it, the position in
                           QRData.json is the id.
    data/<file>            every file a record names in ``data_files``
    LICENSE                QRData's licence (CC BY-NC 4.0); ``licenses/`` and ``data_sources.json`` optional

A record is ``{data_description, question, answer, data_files, meta_data: {reference, keywords, question_type,
multiple_choices?}}``. The questions over the same set of data files become one dataset (``qrdata-<files>``),
so an agent answering one of them is handed exactly that dataset's files.

Nothing here scores: the kind (:mod:`evaluation.tasks.qrdata`) applies upstream's rules to the gold kept here.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from exports.errors import FormatError

__all__ = [
    "ATTRIBUTION",
    "PART_VERSION",
    "QUESTION_TYPES",
    "QRDataDataset",
    "QRDataFile",
    "QRDataFormatError",
    "QRDataImport",
    "QRDataPart",
    "QRDataQuestion",
    "blind_part",
    "dataset_name",
    "gold_number",
    "read_qrdata",
]

PART_VERSION: Literal["1.0"] = "1.0"
QUESTION_TYPES = ("numerical", "multiple_choice")
ATTRIBUTION = ("QRData: Liu, Wu, Wu, Lu, Chang and Feng, \"Are LLMs Capable of Data-based Statistical and Causal "
               "Reasoning? Benchmarking Advanced Quantitative Reasoning with Data\", Findings of ACL 2024 "
               "(github.com/xxxiaol/QRData, CC BY-NC 4.0).")
MAX_RECORDS = 100_000
MAX_FILE_BYTES = 512 * 1024 * 1024
_NAME_CHARS = re.compile(r"[^a-z0-9]+")
QUESTIONS_LICENCE = "CC BY-NC 4.0"


class QRDataFormatError(FormatError):
    """A QRData folder that cannot be imported: the sentence names the file, the record and the field."""


def gold_number(text: str) -> float:
    """A numerical gold as upstream reads it: lower-cased, a trailing ``%`` divides by 100, then ``float``.

    Raises:
        ValueError: not a number Python's ``float`` reads, or not finite.
    """
    g = text.lower()
    value = float(g[:-1]) / 100 if g.endswith("%") else float(g)
    if not math.isfinite(value):
        raise ValueError(f"{text!r} is not a finite number")
    return value


class QRDataQuestion(BaseModel):
    """One QRData question with its gold (``answer``; None where it was withheld from a blind reader)."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^[0-9]+$", description="the record's position in upstream's QRData.json (AIRepr's id)")
    question: str = Field(min_length=1)
    data_description: str = ""
    data_files: list[str] = Field(min_length=1, description="file names, each a file of the dataset")
    question_type: Literal["numerical", "multiple_choice"]
    choices: list[str] = Field(default_factory=list, description="the lower-case option labels (upstream's "
                                                                 "meta_data.multiple_choices); multiple choice only")
    answer: str | None = Field(default=None, description="the gold answer as upstream writes it: a number, maybe "
                                                         "with %, or a choice label; None: withheld")
    reference: str = Field(default="", description="the textbook or dataset the question comes from")
    keywords: list[str] = Field(default_factory=list)

    @field_validator("choices")
    @classmethod
    def _labels(cls, choices: list[str]) -> list[str]:
        if any(c != c.lower() or not c for c in choices):
            raise ValueError(f"choices must be non-empty lower-case labels, not {choices!r}")
        return choices

    @field_validator("answer")
    @classmethod
    def _gold_fits(cls, answer: str | None, info: ValidationInfo) -> str | None:
        if answer is None:
            return answer
        if info.data.get("question_type") == "multiple_choice":
            choices = info.data.get("choices") or []
            if choices and answer.lower() not in choices:
                raise ValueError(f"the gold answer {answer!r} is none of the choices {choices!r}")
        elif info.data.get("question_type") == "numerical":
            try:
                gold_number(answer)
            except ValueError:
                raise ValueError(f"the gold answer {answer!r} of a numerical question is not a number "
                                 "(a trailing % is allowed)") from None
        return answer

    @model_validator(mode="after")
    def _has_choices(self) -> QRDataQuestion:
        if self.question_type == "multiple_choice" and not self.choices:
            raise ValueError("a multiple-choice question needs its choices (meta_data.multiple_choices)")
        return self

    @property
    def reasoning(self) -> str:
        """``causal`` or ``statistical``: upstream's keywords carry ``Causality`` on its causal-reasoning
        questions, the paper's split of QRData."""
        return "causal" if "Causality" in self.keywords else "statistical"


class QRDataPart(BaseModel):
    """A dataset's QRData questions: ``DatasetRelease.parts["qrdata"]``."""

    model_config = ConfigDict(extra="forbid")

    format_version: Literal["1.0"] = PART_VERSION
    questions: list[QRDataQuestion] = Field(default_factory=list)

    @field_validator("questions")
    @classmethod
    def _unique_ids(cls, questions: list[QRDataQuestion]) -> list[QRDataQuestion]:
        seen: set[str] = set()
        for q in questions:
            if q.id in seen:
                raise ValueError(f"question id {q.id} appears twice")
            seen.add(q.id)
        return questions


def blind_part(part: QRDataPart) -> QRDataPart:
    """What a reader blind to the dataset may keep: the questions without their gold."""
    return part.model_copy(update={"questions": [q.model_copy(update={"answer": None}) for q in part.questions]})


class QRDataFile(BaseModel):
    """One data file of an imported dataset, read from the folder (its bytes are hashed as they were read)."""

    name: str = Field(description="its name, as the questions' data_files name it")
    source: Path = Field(description="where it was read")
    sha256: str
    size: int
    origin: dict[str, Any] = Field(default_factory=dict, description="data_sources.json's entry (repo, path)")
    licence: str = Field(default="", description="the data file's licence, where licenses/ names it")


class QRDataDataset(BaseModel):
    """The questions over one set of data files, with those files."""

    name: str
    title: str
    description: str
    research_question: str
    files: list[QRDataFile]
    part: QRDataPart
    licence: str = Field(description="the questions' licence, and each data file's where it is known")


class QRDataImport(BaseModel):
    """What :func:`read_qrdata` found: its datasets (in the order of their first question), the licence text and
    the attribution."""

    datasets: list[QRDataDataset]
    licence: str = ""
    attribution: str = ATTRIBUTION


def dataset_name(files: list[str]) -> str:
    """``qrdata_<file stems>`` for a set of data files (lower-case letters and digits joined by ``_``, as the
    registry names datasets)."""
    stems = [_NAME_CHARS.sub("_", Path(f).stem.lower()).strip("_") for f in files]
    name = "qrdata_" + "_".join(s for s in stems if s)
    if len(name) > 64:
        name = name[:55].rstrip("_") + "_" + hashlib.sha256("\n".join(files).encode()).hexdigest()[:8]
    return name


def _load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_bytes())
    except OSError as exc:
        raise QRDataFormatError(f"Cannot read {path}: {exc.strerror or exc}.") from exc
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise QRDataFormatError(f"{path} is not JSON: {exc}.") from exc


def _question(record: Any, qid: str, where: str) -> QRDataQuestion:
    if not isinstance(record, dict):
        raise QRDataFormatError(f"{where} is a JSON {type(record).__name__}, not a question record.")
    meta = record.get("meta_data")
    if not isinstance(meta, dict):
        raise QRDataFormatError(f"{where} has no meta_data object (it holds question_type, keywords, reference).")
    answer = record.get("answer")
    try:
        return QRDataQuestion.model_validate({
            "id": qid, "question": record.get("question"), "data_description": record.get("data_description") or "",
            "data_files": record.get("data_files"), "question_type": meta.get("question_type"),
            "choices": meta.get("multiple_choices") or [], "answer": answer, "reference": meta.get("reference") or "",
            "keywords": meta.get("keywords") or []})
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first.get("loc", ())) or "the record"
        field = {"choices": "meta_data.multiple_choices", "question_type": "meta_data.question_type",
                 "keywords": "meta_data.keywords", "reference": "meta_data.reference"}.get(field, field)
        msg = str(first.get("msg", "invalid")).removeprefix("Value error, ")
        raise QRDataFormatError(f"{where}, field {field}: {msg}.") from exc


def _licences(folder: Path) -> dict[str, str]:
    """``licenses/<repo name>-<licence>.txt`` → {repo name: licence} (the shared subset's layout)."""
    found = {}
    for path in sorted((folder / "licenses").glob("*.txt")) if (folder / "licenses").is_dir() else []:
        repo, _, licence = path.stem.rpartition("-")
        if repo and licence:
            # "python-causality-handbook-MIT", "qss-GPL-2.0": the licence is the last part that is not a version
            if licence[:1].isdigit() and "-" in repo:
                repo, _, first = repo.rpartition("-")
                licence = f"{first}-{licence}"
            found[repo] = licence
    return found


def _file(folder: Path, name: str, origins: dict[str, Any], where: str) -> QRDataFile:
    if Path(name).name != name or name in ("", ".", ".."):
        raise QRDataFormatError(f"{where} names the data file {name!r}; data files are plain names inside data/.")
    path = folder / "data" / name
    if path.is_symlink() or not path.is_file():
        raise QRDataFormatError(f"{where} names the data file {name}, which is not in {folder / 'data'} (unzip "
                                "upstream's benchmark/data.zip there).")
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise QRDataFormatError(f"{path} is {size:,} bytes; the largest data file taken is {MAX_FILE_BYTES:,}.")
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    origin = origins.get(name)
    origin = origin if isinstance(origin, dict) else {}
    repo = str(origin.get("repo") or "")
    licence = _licences(folder).get(repo.rpartition("/")[2], "") if repo else ""
    return QRDataFile(name=name, source=path, sha256=digest.hexdigest(), size=size, origin=origin,
                      licence=f"{licence} ({repo})" if licence else "")


def _licence(files: list[QRDataFile]) -> str:
    data = "; ".join(f"{f.name}: {f.licence}" for f in files if f.licence)
    return f"Questions: {QUESTIONS_LICENCE} (QRData)." + (f" Data: {data}." if data else "")


def read_qrdata(folder: Path) -> QRDataImport:
    """Read a QRData folder (see the module docstring) into datasets, one per set of data files.

    Raises:
        QRDataFormatError: a missing or malformed file, a record that does not fit (which record, which field), a
            data file that is missing, or ids that repeat; nothing is returned half-read.
    """
    folder = Path(folder)
    questions_file = folder / "QRData.json"
    if not questions_file.is_file():
        raise QRDataFormatError(f"{folder} has no QRData.json: point at upstream's benchmark folder (QRData.json, "
                                "data/ with the data files, LICENSE).")
    records = _load_json(questions_file)
    if not isinstance(records, list) or not records:
        raise QRDataFormatError(f"{questions_file} holds no list of question records.")
    if len(records) > MAX_RECORDS:
        raise QRDataFormatError(f"{questions_file} holds {len(records):,} records; at most {MAX_RECORDS:,} are taken.")
    index_file = folder / "upstream_index.json"
    if index_file.exists():
        index = _load_json(index_file)
        if (not isinstance(index, list) or len(index) != len(records)
                or not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in index)):
            raise QRDataFormatError(f"{index_file} must be a list of {len(records)} non-negative integers, one "
                                    "upstream position per record of QRData.json.")
        if len(set(index)) != len(index):
            raise QRDataFormatError(f"{index_file} gives the same upstream position to two records.")
        ids = [str(i) for i in index]
    else:
        ids = [str(i) for i in range(len(records))]
    origins_file = folder / "data_sources.json"
    origins = _load_json(origins_file) if origins_file.is_file() else {}
    origins = origins if isinstance(origins, dict) else {}

    groups: dict[tuple[str, ...], list[QRDataQuestion]] = {}
    files: dict[str, QRDataFile] = {}
    for n, (record, qid) in enumerate(zip(records, ids, strict=True)):
        where = f"{questions_file.name} record {n + 1} (id {qid})"
        q = _question(record, qid, where)
        for name in q.data_files:
            if name not in files:
                files[name] = _file(folder, name, origins, where)
        groups.setdefault(tuple(q.data_files), []).append(q)

    licence_file = folder / "LICENSE"
    licence = licence_file.read_text(encoding="utf-8", errors="replace") if licence_file.is_file() else ""
    datasets = []
    names: dict[str, tuple[str, ...]] = {}
    for key, qs in groups.items():
        name = dataset_name(list(key))
        if name in names:  # two file sets whose names fold to the same slug
            name = f"{name[:55]}_{hashlib.sha256(chr(10).join(key).encode()).hexdigest()[:8]}"
        names[name] = key
        descriptions = list(dict.fromkeys(q.data_description for q in qs if q.data_description))
        datasets.append(QRDataDataset(
            name=name, title=f"QRData: {' + '.join(key)}", description="\n\n".join(descriptions),
            research_question=f"QRData's {len(qs)} question{'s' if len(qs) != 1 else ''} over {', '.join(key)}",
            files=[files[f] for f in key], part=QRDataPart(questions=qs), licence=_licence([files[f] for f in key])))
    return QRDataImport(datasets=datasets, licence=licence)

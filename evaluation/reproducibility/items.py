"""Which submitted items qualify for the reproducibility facet, read from the files of a run:

* a BLADE submission (single or multi run): each analysis that carries ``workflow`` (see
  :class:`evaluation.submissions.EntireAnalysis`); its code is the transform then the model, on ``data.csv``;
* a hypotheses submission (``forkpaths-hypotheses``, COMMON contract; the agent runs with ``--workflow`` write the
  same fields): each answer that carries ``code``; its files are the task's data files;
* AIRepr's published files (:mod:`.airepr`): each evaluated sample; its data is the release's hypothesis task
  whose gold hypothesis is the sample's ground-truth answer, when the release has one.

Every item names the files both codes get; a file the release does not hold is left out, so code that needs it
fails with a sentence naming it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from evaluation.errors import EvaluationError
from evaluation.reproducibility.airepr import AIReprError, is_airepr_name, read_airepr_files
from evaluation.reproducibility.models import DataFile, ReproItem
from evaluation.submissions import parse_submission, printable
from exports.hypotheses_part import HypothesesPart, HypothesisTaskRelease
from exports.jsontext import JsonTextError, RepeatedKey, load_json, refuse_repeated_keys
from exports.schema import DatasetRelease, Release

__all__ = ["FileItems", "ItemsError", "blade_script", "items_of_file", "items_of_files"]

HYPOTHESES_FORMAT = "forkpaths-hypotheses"


class ItemsError(EvaluationError):
    """A file the facet cannot read (which file, where, what is wrong)."""


class FileItems(BaseModel):
    name: str
    format: str
    dataset: str | None = None
    items: list[ReproItem]
    skipped: list[str] = []


def blade_script(transform_source: str, model_source: str, data_file: str = "data.csv") -> str:
    """A BLADE analysis as one script: read the data, transform it, fit the model, print what was fitted."""
    return (f"import pandas as pd\nimport numpy as np\n\ndf = pd.read_csv({data_file!r})\n\n{transform_source}\n"
            f"df = transform(df)\n\n{model_source}\nresult = model(df)\n"
            "print(result.summary() if hasattr(result, 'summary') else result)\n")


def _blade(name: str, data: bytes, release: Release, max_items: int | None) -> FileItems:
    sub = parse_submission(data, label=name, known_datasets=[d.name for d in release.datasets],
                           max_analyses=max_items)
    ds = next((d for d in release.datasets if d.name == sub.dataset_name), None)
    if ds is None:
        raise ItemsError(f"{printable(name)} is a submission for dataset '{printable(sub.dataset_name)}', which "
                         f"release {release.version} does not have.")
    items, skipped = [], []
    for a in sub.analyses:
        if a.analysis is None or a.analysis.workflow is None:
            skipped.append(f"{ds.name}/{a.key}: " + (a.message or "no workflow"))
            continue
        problem = ""
        if a.transform is None or a.model is None or a.transform_status != "ok" or a.model_status != "ok":
            problem = a.message or "its transform or model code cannot be read"
        code = blade_script(a.transform.source if a.transform else "", a.model.source if a.model else "")
        items.append(ReproItem(
            key=f"{ds.name}/{a.key}", source="blade", dataset=ds.name, question=ds.research_question,
            dictionary=[{k: c.get(k) for k in ("column", "name", "description", "info") if k in c}
                        for c in ds.dictionary],
            files=[DataFile(name="data.csv", path=ds.data_file)], workflow=a.analysis.workflow,
            code=code if not problem else (a.analysis.transform_code + "\n\n" + a.analysis.m_code),
            answer="", problem=problem))
    return FileItems(name=name, format=sub.format, dataset=ds.name, items=items, skipped=skipped)


def _task_files(ds: DatasetRelease, task: HypothesisTaskRelease) -> tuple[list[DataFile], list[dict[str, Any]]]:
    files, dictionary = [], []
    for wanted in task.data_files:
        rf = next((f for f in ds.files if f.name == wanted or f.name.endswith("/" + wanted)
                   or Path(f.name).name == wanted), None)
        if rf is None:
            continue  # the code that reads it says which file is missing
        files.append(DataFile(name=wanted, path=rf.path))
        dictionary += [{"file": wanted, **{k: c.get(k) for k in ("name", "description") if k in c}}
                       for c in rf.columns]
    return files, dictionary


def _task_item(key: str, source: str, ds: DatasetRelease, task: HypothesisTaskRelease, **fields: Any) -> ReproItem:
    files, dictionary = _task_files(ds, task)
    gold = task.gold.hypothesis if task.gold else None
    question = task.question + (f"\nDomain knowledge: {task.domain_knowledge}" if task.domain_knowledge else "")
    return ReproItem(key=key, source=source, dataset=ds.name, question=question,  # type: ignore[arg-type]
                     dictionary=dictionary, files=files, gold=gold, **fields)


def _tasks(release: Release) -> dict[str, tuple[DatasetRelease, HypothesisTaskRelease]]:
    return {t.key: (d, t) for d in release.datasets for t in HypothesesPart.of(d).tasks}


def _df_preamble(files: list[DataFile]) -> str:
    """The hypotheses kind's convention: ``df`` is the query's first data file (read here when it is a CSV)."""
    if files and files[0].name.lower().endswith(".csv"):
        return f"import pandas as pd\ndf = pd.read_csv({files[0].name!r})  # the query's first data file\n\n"
    return ""


def _hypotheses(name: str, data: bytes, release: Release, max_items: int | None) -> FileItems:
    """The answers that carry code, read by the hypotheses kind's own reader (one reader for one format)."""
    from evaluation.tasks.hypotheses import read_answers

    answers = read_answers(data, label=name, release=release)
    if max_items is not None and len(answers) > max_items:
        raise ItemsError(f"{printable(name)} holds {len(answers):,} answers; a submission may hold at most "
                         f"{max_items:,}.")
    tasks = _tasks(release)
    items, skipped = [], []
    for a in answers:
        if not (a.code or "").strip():
            skipped.append(f"{a.task}: no code")
            continue
        ds, task = tasks[a.task]
        item = _task_item(a.task, "hypotheses", ds, task, workflow=a.workflow or "", answer=a.hypothesis)
        item.code = _df_preamble(item.files) + (a.code or "")
        items.append(item)
    return FileItems(name=name, format=HYPOTHESES_FORMAT, items=items, skipped=skipped)


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def _airepr(files: Sequence[tuple[str, bytes]], release: Release) -> list[FileItems]:
    try:
        runs = read_airepr_files(files)
    except AIReprError as exc:
        raise ItemsError(str(exc)) from exc
    by_gold: dict[str, list[tuple[DatasetRelease, HypothesisTaskRelease]]] = {}
    for d, t in _tasks(release).values():
        if t.gold:
            by_gold.setdefault(_norm(t.gold.hypothesis), []).append((d, t))
    out = []
    for run in runs:
        items = []
        for s in run.samples:
            key = f"{run.dataset}/{s.index}"
            fields: dict[str, Any] = {"workflow": s.workflow, "code": s.code, "answer": s.final_answer,
                                      "published": {**s.published, "output": s.output}}
            found = by_gold.get(_norm(s.gold or ""), [])
            if len(found) == 1:
                item = _task_item(key, "airepr", *found[0], **fields)
                item.gold = s.gold
            else:
                why = ("several hypothesis tasks of the release have its gold answer" if found else
                       f"no hypothesis task of release {release.version} has its gold answer")
                item = ReproItem(key=key, source="airepr", gold=s.gold, problem=f"Its data is unknown here: {why}.",
                                 **fields)
            items.append(item)
        out.append(FileItems(name=f"{run.stem}.json", format="airepr", items=items))
    return out


def items_of_file(name: str, data: bytes, release: Release, *, max_items: int | None = None) -> FileItems:
    """The qualifying items of one BLADE or hypotheses file.

    Raises:
        ItemsError / SubmissionError: the file cannot be read (which file, where).
    """
    try:
        parsed = load_json(data, label=printable(name), object_pairs_hook=refuse_repeated_keys)
    except JsonTextError as exc:
        raise ItemsError(f"{printable(name)} {exc.reason}.") from exc
    except RepeatedKey as exc:
        raise ItemsError(f"{printable(name)}: the key '{printable(str(exc.args[0]))}' appears twice.") from exc
    if isinstance(parsed, dict) and parsed.get("format") == HYPOTHESES_FORMAT:
        return _hypotheses(name, data, release, max_items)
    if isinstance(parsed, dict) and "dataset_name" in parsed:
        return _blade(name, data, release, max_items)
    raise ItemsError(f"{printable(name)} is neither a BLADE submission (dataset_name, analyses), a "
                     f"{HYPOTHESES_FORMAT} file, nor one of AIRepr's result files "
                     "({model}_{dataset}_{agent}*.json).")


def items_of_files(files: Sequence[tuple[str, bytes]], release: Release, *,
                   max_items: int | None = None) -> list[FileItems]:
    """Every file's qualifying items; AIRepr's files (recognised by name) are read together, one run each.

    Raises:
        ItemsError / SubmissionError: a file cannot be read; two items with one key.
    """
    airepr = [(n, d) for n, d in files if is_airepr_name(n) and not _looks_blade(d)]
    out = [items_of_file(n, d, release, max_items=max_items) for n, d in files if (n, d) not in airepr]
    if airepr:
        out += _airepr(airepr, release)
    seen: dict[str, str] = {}
    for f in out:
        for item in f.items:
            if item.key in seen:
                raise ItemsError(f"{printable(f.name)} and {printable(seen[item.key])} both hold item "
                                 f"'{printable(item.key)}'; a run holds each item once.")
            seen[item.key] = f.name
    return out


def _looks_blade(data: bytes) -> bool:
    head = data[:4096]
    return b'"dataset_name"' in head or b'"forkpaths-hypotheses"' in head


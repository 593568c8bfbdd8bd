"""AIRepr's result files (evaluation-seeds-reference §3.4), read so that published runs can be viewed and
re-judged in forkpaths.

One run is one ``(model, dataset, agent)``: the analyst file ``{model}_{dataset}_{agent}.json`` (keyed by sample
index: ``{steps: [{workflow, action, action_input, observation, content, ...}], final_answer, answer?}``; a sample
left out says ``"final_answer": "Sample not included"``), the evaluation ``…_results_{YYYYmmdd_HHMMSS}.json``
(``reproducibility_scores`` 1 / 0 / -1, ``reproducibility_reasons``, ``accuracy_scores``: one value per evaluated
sample, in the order of their indices) and, when present, ``…_converted_codes.json`` (the inspector's code, per
sample index or as a list in the same order). Every problem names the file and the field.

AIRepr's -1 means "the analyst's code did not run" but is also what an unparseable inspector reply got (§3.5);
the import says so on every such item rather than guessing which it was.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from evaluation.errors import EvaluationError
from exports.jsontext import JsonTextError, RepeatedKey, load_json, refuse_repeated_keys

__all__ = ["AIReprError", "AIReprRun", "AIReprSample", "code_of", "is_airepr_name", "read_airepr_files", "run_name"]

_NAME = re.compile(r"^(?P<stem>.+?)(?P<suffix>_results_\d{8}_\d{6}|_converted_codes|_human_prompts)?\.json$")
_FENCE = re.compile(r"```(?:python|py)?\s*\n(.*?)```", re.DOTALL)
NOT_INCLUDED = "Sample not included"
#: Largest AIRepr file read: each is parsed whole, and a JSON text takes several times its size in memory
#: (issue 26 point 7: imports are bounded).
MAX_FILE_BYTES = 32 * 2**20


class AIReprError(EvaluationError):
    """An AIRepr file that cannot be read (which file, which field, what is wrong)."""


@dataclass
class AIReprSample:
    index: int
    workflow: str
    code: str
    output: str
    final_answer: str
    gold: str | None
    published: dict[str, Any] = field(default_factory=dict)


@dataclass
class AIReprRun:
    stem: str  # {model}_{dataset}_{agent}
    model: str
    dataset: str
    agent: str
    samples: list[AIReprSample]
    evaluated: bool  # a results file came with it


def is_airepr_name(name: str) -> bool:
    """Whether ``name`` is one of AIRepr's result file names (``{model}_{dataset}_{agent}*.json``)."""
    m = _NAME.match(name.rsplit("/", 1)[-1])
    return bool(m) and m.group("stem").count("_") >= 2  # type: ignore[union-attr]


def run_name(name: str) -> tuple[str, str]:
    """(``{model}_{dataset}_{agent}``, the file's role: analyst, results, converted_codes or human_prompts)."""
    m = _NAME.match(name.rsplit("/", 1)[-1])
    if not m:
        raise AIReprError(f"{name}: not an AIRepr result file name ({{model}}_{{dataset}}_{{agent}}*.json).")
    suffix = m.group("suffix") or ""
    role = "results" if suffix.startswith("_results_") else (suffix.lstrip("_") or "analyst")
    return m.group("stem"), role


def code_of(action_input: str) -> str:
    """The Python of an ``Action Input``: its fenced block(s), or the text itself when it has no fence."""
    blocks = _FENCE.findall(action_input)
    return "\n".join(b.strip("\n") for b in blocks) if blocks else action_input.strip()


def _load(name: str, data: bytes) -> Any:
    try:
        return load_json(data, label=name, object_pairs_hook=refuse_repeated_keys)
    except JsonTextError as exc:
        raise AIReprError(f"{name} {exc.reason}.") from exc
    except RepeatedKey as exc:
        raise AIReprError(f"{name}: the key '{exc.args[0]}' appears twice in one object.") from exc


def _text(value: Any, where: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise AIReprError(f"{where} is a {type(value).__name__}, not text.")
    return value


def _samples(name: str, data: Any) -> list[AIReprSample]:
    if not isinstance(data, dict):
        raise AIReprError(f"{name} holds a JSON {type(data).__name__}; an AIRepr analyst file is an object keyed "
                          "by sample index.")
    out = []
    for key, entry in data.items():
        where = f"{name}: sample '{key}'"
        if not str(key).isdigit():
            raise AIReprError(f"{where}: the keys of an analyst file are sample indices (0, 1, ...).")
        if not isinstance(entry, dict):
            raise AIReprError(f"{where} is a {type(entry).__name__}, not an object.")
        if entry.get("final_answer") == NOT_INCLUDED:
            continue
        steps = entry.get("steps")
        if not isinstance(steps, list):
            raise AIReprError(f"{where}: steps is {'missing' if steps is None else 'not a list'}.")
        workflows, codes, outputs = [], [], []
        for i, step in enumerate(steps):
            if not isinstance(step, dict):
                raise AIReprError(f"{where}: steps[{i}] is not an object.")
            workflows.append(_text(step.get("workflow"), f"{where}: steps[{i}].workflow"))
            action_input = _text(step.get("action_input"), f"{where}: steps[{i}].action_input")
            if action_input.strip():
                codes.append(code_of(action_input))
            outputs.append(_text(step.get("observation"), f"{where}: steps[{i}].observation"))
        gold = entry.get("answer")
        out.append(AIReprSample(
            index=int(key), workflow="\n".join(w for w in workflows if w.strip()),
            code="\n\n".join(codes), output="\n".join(o for o in outputs if o),
            final_answer=_text(entry.get("final_answer"), f"{where}: final_answer"),
            gold=None if gold is None else str(gold)))
    return sorted(out, key=lambda s: s.index)


def _per_sample(name: str, data: dict[str, Any], key: str, n: int, kinds: tuple[type, ...]) -> list[Any] | None:
    values = data.get(key)
    if values is None:
        return None
    if not isinstance(values, list):
        raise AIReprError(f"{name}: {key} is not a list.")
    if len(values) != n:
        raise AIReprError(f"{name}: {key} has {len(values)} values but the analyst file has {n} evaluated samples; "
                          "they must be one per sample, in the order of the sample indices.")
    for i, v in enumerate(values):
        if v is not None and (not isinstance(v, kinds) or isinstance(v, bool) and bool not in kinds):
            raise AIReprError(f"{name}: {key}[{i}] is {v!r}, not a {' or '.join(k.__name__ for k in kinds)}.")
    return values


def _converted(name: str, data: Any, samples: Sequence[AIReprSample]) -> dict[int, dict[str, str]]:
    def one(value: Any, where: str) -> dict[str, str]:
        if isinstance(value, str):
            return {"code": value}
        if not isinstance(value, dict):
            raise AIReprError(f"{where} is a {type(value).__name__}, not the inspector's code or an object.")
        code = next((value[k] for k in ("converted_code", "inspector_code", "code") if k in value), None)
        return {"code": _text(code, f"{where}.converted_code"), "reason": _text(value.get("reason"), f"{where}.reason")}

    if isinstance(data, list):
        if len(data) != len(samples):
            raise AIReprError(f"{name} has {len(data)} entries but the analyst file has {len(samples)} evaluated "
                              "samples.")
        return {s.index: one(v, f"{name}: [{i}]") for i, (s, v) in enumerate(zip(samples, data, strict=True))}
    if isinstance(data, dict):
        return {int(k): one(v, f"{name}: '{k}'") for k, v in data.items() if str(k).isdigit()}
    raise AIReprError(f"{name} holds a JSON {type(data).__name__}; expected a list or an object keyed by sample index.")


def read_airepr_files(files: Sequence[tuple[str, bytes]]) -> list[AIReprRun]:
    """The runs in a set of AIRepr files (several results files of one run: the newest, by its time stamp).

    Raises:
        AIReprError: a file name or content that is not AIRepr's layout, with the file and field.
    """
    groups: dict[str, dict[str, tuple[str, bytes]]] = {}
    for name, data in files:
        if len(data) > MAX_FILE_BYTES:
            raise AIReprError(f"{name} is {len(data):,} bytes; an AIRepr file may be at most {MAX_FILE_BYTES:,} bytes "
                              "(it is read whole). Split the run's samples into several runs.")
        stem, role = run_name(name)
        slot = groups.setdefault(stem, {})
        if role == "results" and "results" in slot and slot["results"][0] > name:
            continue  # an older evaluation of the same run
        slot[role] = (name, data)
    runs = []
    for stem, slot in sorted(groups.items()):
        if "analyst" not in slot:
            have = ", ".join(n for n, _ in slot.values())
            raise AIReprError(f"{have}: the analyst file {stem}.json is missing (it holds the workflows and code).")
        parts = stem.split("_")
        model, dataset, agent = "_".join(parts[:-2]), parts[-2], parts[-1]
        name, data = slot["analyst"]
        samples = _samples(name, _load(name, data))
        if "results" in slot:
            rname, rdata = slot["results"]
            res = _load(rname, rdata)
            if not isinstance(res, dict):
                raise AIReprError(f"{rname} holds a JSON {type(res).__name__}, not an object.")
            scores = _per_sample(rname, res, "reproducibility_scores", len(samples), (int, float))
            if scores is None:
                raise AIReprError(f"{rname}: reproducibility_scores is missing.")
            for i, v in enumerate(scores):
                if v not in (1, 0, -1):
                    raise AIReprError(f"{rname}: reproducibility_scores[{i}] is {v!r}; AIRepr scores are 1, 0 or -1.")
            reasons = _per_sample(rname, res, "reproducibility_reasons", len(samples), (str,)) or [None] * len(samples)
            accuracy = _per_sample(rname, res, "accuracy_scores", len(samples), (int, float)) or [None] * len(samples)
            for s, score, reason, acc in zip(samples, scores, reasons, accuracy, strict=True):
                s.published.update({"reproducibility_score": int(score), "reason": reason or "",
                                    "accuracy_score": acc, "results_file": rname})
        if "converted_codes" in slot:
            cname, cdata = slot["converted_codes"]
            for index, conv in _converted(cname, _load(cname, cdata), samples).items():
                sample = next((s for s in samples if s.index == index), None)
                if sample is None:
                    raise AIReprError(f"{cname}: sample '{index}' is not in the analyst file {name}.")
                sample.published.update({"inspector_code": conv["code"]}
                                        | ({"reason": conv["reason"]} if conv.get("reason") and
                                           not sample.published.get("reason") else {}))
        runs.append(AIReprRun(stem=stem, model=model, dataset=dataset, agent=agent, samples=samples,
                              evaluated="results" in slot))
    return runs

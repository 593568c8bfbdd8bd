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

Which step AIRepr judged (:func:`select_step`, after Anonymous-2025-Repr/LLM-DS-Reproducibility
``eval/run_reproducibility.py`` lines 74-103 and ``eval/reproducibility.py`` lines 79-82): for the agents REACT and
REFLEXION, the last step whose ``action_input`` is non-empty gives the code and the last step whose ``workflow``
is non-empty the workflow; for every other agent (COT, ROT) the first such steps. For the model ``deepseek-r1``
the workflow is instead the text of a step's ``content`` before its first ```` ```python ````: for REACT and
REFLEXION of the last step whose content has one, for the others of the first step whatever it holds (where it
has none, upstream's slice ``content[:-1]`` drops its last character, and so does this). The code run is the
first ```` ```python ```` block of that ``action_input``, or the whole of it when it has none
(``utils/output_parser.py`` lines 17-23). That step is the sample's workflow, code and output (what the import
shows first and what ``forkpaths reproduce`` re-runs); every step is kept in ``published["steps"]`` for the
drill-down, with the selection in ``published["selection"]``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from evaluation.errors import EvaluationError
from exports.jsontext import JsonTextError, RepeatedKey, load_json, refuse_repeated_keys

__all__ = ["AIReprError", "AIReprRun", "AIReprSample", "Selection", "code_of", "is_airepr_name", "read_airepr_files",
           "run_name", "select_step", "upstream_code"]

_NAME = re.compile(r"^(?P<stem>.+?)(?P<suffix>_results_\d{8}_\d{6}|_converted_codes|_human_prompts)?\.json$")
_FENCE = re.compile(r"```(?:python|py)?\s*\n(.*?)```", re.DOTALL)
_UPSTREAM_FENCE = re.compile(r"```python\n(.*?)```", re.DOTALL)  # utils/output_parser.py line 17
LAST_STEP_AGENTS = ("REACT", "REFLEXION")  # run_reproducibility.py line 74; any other agent: the first step
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


def upstream_code(action_input: str) -> str:
    """The code AIRepr runs for an ``action_input``: its first ```` ```python ```` block, else all of it
    (``eval/reproducibility.py`` lines 79-82, ``utils/output_parser.py`` lines 17-23)."""
    found = _UPSTREAM_FENCE.findall(action_input)
    return found[0] if found else action_input


@dataclass(frozen=True)
class Selection:
    """The step AIRepr judged: its index for the code (None: no step has code) and for the workflow (None: no
    workflow, or for deepseek-r1 the content it was cut from), the code and workflow, and the rule in words."""

    code_step: int | None
    workflow_step: int | None
    code: str
    workflow: str
    rule: str


def select_step(steps: Sequence[dict[str, Any]], *, agent: str, model: str) -> Selection:
    """Which step's code and workflow AIRepr judged for a sample of ``agent`` by ``model`` (see the module)."""
    last = agent in LAST_STEP_AGENTS
    order = list(range(len(steps)))[::-1] if last else list(range(len(steps)))
    which = "last" if last else "first"
    code_step = next((i for i in order if steps[i].get("action_input")), None)
    workflow_step = next((i for i in order if steps[i].get("workflow", "")), None)
    workflow = str(steps[workflow_step]["workflow"]) if workflow_step is not None else ""
    rule = (f"{agent}: the {which} step with code (run_reproducibility.py lines {'74-78' if last else '83-87'}) and "
            f"the {which} step with a workflow (lines {'79-82' if last else '88-91'})")
    if model == "deepseek-r1":
        def content(i: int) -> str:
            return str(steps[i].get("content") or "")

        if last:
            workflow_step = next((i for i in order if "```python" in content(i)), None)
            where = "the last step whose content has a ```python block"
        else:
            workflow_step = 0 if steps else None
            where = "the first step's content"
        workflow = content(workflow_step)[:content(workflow_step).find("```python")] if workflow_step is not None \
            else ""
        rule += f"; deepseek-r1: the workflow is {where}, cut before its ```python (lines 93-103)"
    action_input = str(steps[code_step]["action_input"]) if code_step is not None else ""
    return Selection(code_step=code_step, workflow_step=workflow_step, code=upstream_code(action_input),
                     workflow=workflow, rule=rule)


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


def _content(value: Any) -> str:
    """A step's raw model answer (a list of blocks for some models): only deepseek-r1's workflow is cut from it."""
    return value if isinstance(value, str) else "" if value is None else json.dumps(value, ensure_ascii=False)


def _samples(name: str, data: Any, *, agent: str, model: str) -> list[AIReprSample]:
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
        kept: list[dict[str, Any]] = []
        for i, step in enumerate(steps):
            if not isinstance(step, dict):
                raise AIReprError(f"{where}: steps[{i}] is not an object.")
            action_input = _text(step.get("action_input"), f"{where}: steps[{i}].action_input")
            kept.append({"workflow": _text(step.get("workflow"), f"{where}: steps[{i}].workflow"),
                         "action_input": action_input, "code": upstream_code(action_input) if action_input else "",
                         "observation": _text(step.get("observation"), f"{where}: steps[{i}].observation"),
                         "content": _content(step.get("content"))})
        chosen = select_step(kept, agent=agent, model=model)
        gold = entry.get("answer")
        out.append(AIReprSample(
            index=int(key), workflow=chosen.workflow, code=chosen.code,
            output=kept[chosen.code_step]["observation"] if chosen.code_step is not None else "",
            final_answer=_text(entry.get("final_answer"), f"{where}: final_answer"),
            gold=None if gold is None else str(gold),
            published={"steps": [{k: st[k] for k in ("workflow", "code", "observation")} for st in kept],
                       "selection": {"code_step": chosen.code_step, "workflow_step": chosen.workflow_step,
                                     "rule": chosen.rule}}))
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
        samples = _samples(name, _load(name, data), agent=agent, model=model)
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

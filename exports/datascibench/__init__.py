"""DataSciBench's task layout, read and written (evaluation-seeds-reference §2.3, read from the deeppavlov fork).

A DataSciBench tree::

    metric/<task>/metric.yaml     prompt + TMC-list: [{task_name, function, metric, code, ground_truth?, rule?}]
    data/<task>/prompt.json       {"prompt": ..., "data_source_type": ...}
    data/<task>/<input files>     what the task reads (CSV, Excel, ...)
    data/<task>/gt/               ground-truth artifacts (and test_gt.py, the reference solution)

Where this reading differs from, or adds to, the fork (the upstream repository was not reachable):

* ``task_name`` is matched to the six task types loosely (case, "&" vs "and", punctuation; a name that contains
  "clean", "explor", "visual", "predict", "mining" or "report"/"interpret"); a name that matches none is an
  error naming the file and line, where upstream keeps any string.
* ``ground_truth`` is a path *relative to* ``gt/`` (upstream's own field holds a path that the evaluators join
  with the gt folder); an absolute path or one with ``..`` is refused.
* Agent-run folders (``data/<task>/<model>_<run>/``) and the raw ``metric/*_prompt_metric.csv`` candidates are not
  read: runs are scored from an outputs zip, and candidates are proposed in forkpaths itself.
* ``rule`` is kept as text and applied in the sandbox; upstream's threshold evaluators (``test_bool``,
  ``test_int``) are not separate kinds here: write them as a rule (``lambda x: 0.8 <= x <= 1``).
* Written back, ``metric.yaml`` holds the accepted checks only, each with ``id`` as an extra key (upstream
  readers ignore unknown keys), and ``prompt.json`` keeps any extra fields it was read with.

Nothing here touches a database; :func:`read_tree` returns release-format tasks and their input files.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from exports.control_chars import ESCAPED_CONTROL, describe_control, first_control, line_of
from exports.errors import FormatError
from exports.schema import (
    PROGRAMMATIC_TASK_TYPES,
    ProgrammaticArtifact,
    ProgrammaticCheck,
    ProgrammaticTaskRelease,
)

__all__ = ["DataSciBenchError", "DataSciBenchTask", "normalise_task_type", "read_task", "read_tree",
           "write_task", "write_tree"]

MAX_ARTIFACT_BYTES = 20 * 1024 * 1024
# Bounds on what one read holds in memory (issue 26 point 7): every input and artifact is read whole.
MAX_TEXT_FILE_BYTES = 2 * 1024 * 1024  # metric.yaml, prompt.json
MAX_INPUT_BYTES = MAX_ARTIFACT_BYTES  # one input file
MAX_TASK_BYTES = 64 * 1024 * 1024  # a task's inputs and artifacts together
MAX_TREE_BYTES = 256 * 1024 * 1024  # a tree's, read by read_tree
REFERENCE_SOLUTION = "test_gt.py"  # the reference solution DataSciBench keeps in gt/: not an artifact
REFERENCE_NAMES = (REFERENCE_SOLUTION, REFERENCE_SOLUTION + ".txt")  # .txt where Python files may not be (datasets/)
_KEYWORDS = (("clean", 0), ("preprocess", 0), ("explor", 1), ("statistic", 1), ("visual", 2), ("plot", 2),
             ("predict", 3), ("model", 3), ("mining", 4), ("pattern", 4), ("interpret", 5), ("report", 5))
_TASK_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}$")


class DataSciBenchError(FormatError):
    """A DataSciBench folder that cannot be read (which file, which line, what is wrong)."""


@dataclass
class DataSciBenchTask:
    """One task as read: the release-format task and the bytes of its input files (by name)."""

    task: ProgrammaticTaskRelease
    inputs: dict[str, bytes] = field(default_factory=dict)


def normalise_task_type(name: str) -> str | None:
    """One of the six task types for a ``task_name`` as DataSciBench spells it, or None."""
    text = re.sub(r"[^a-z ]+", " ", name.lower().replace("&", " and "))
    text = " ".join(text.split())
    for canonical in PROGRAMMATIC_TASK_TYPES:
        if text == " ".join(re.sub(r"[^a-z ]+", " ", canonical.replace("&", " and ")).split()):
            return canonical
    for word, index in _KEYWORDS:
        if word in text:
            return PROGRAMMATIC_TASK_TYPES[index]
    return None


def _yaml_error(path: str, exc: yaml.YAMLError) -> DataSciBenchError:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    where = f" line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    problem = getattr(exc, "problem", None) or str(exc)
    return DataSciBenchError(f"{path}{where}: the YAML does not parse ({problem}).")


def _entry_lines(text: str) -> list[int]:
    """The line (1-based) where each entry of the TMC-list starts, from the composed node tree."""
    node = yaml.compose(text, Loader=yaml.SafeLoader)
    if not isinstance(node, yaml.MappingNode):
        return []
    for key, value in node.value:
        if getattr(key, "value", None) == "TMC-list" and isinstance(value, yaml.SequenceNode):
            return [item.start_mark.line + 1 for item in value.value]
    return []


def _safe_rel(path: str, *, where: str) -> str:
    rel = PurePosixPath(path.replace("\\", "/"))
    if rel.is_absolute() or any(p == ".." for p in rel.parts):
        raise DataSciBenchError(f"{where}: the ground_truth path {path!r} must be relative to gt/ without '..'.")
    return "/".join(p for p in rel.parts if p not in ("", "."))


def _parse_metric(text: str, *, label: str) -> tuple[str, list[ProgrammaticCheck]]:
    try:
        data = yaml.safe_load(text)
        lines = _entry_lines(text)
    except yaml.YAMLError as exc:
        raise _yaml_error(label, exc) from None
    if not isinstance(data, dict):
        raise DataSciBenchError(f"{label} line 1: expected a mapping with 'prompt' and 'TMC-list'.")
    entries = data.get("TMC-list", data.get("TFC-list"))
    if not isinstance(entries, list):
        raise DataSciBenchError(f"{label}: it has no 'TMC-list' list of checks.")
    checks = []
    for i, entry in enumerate(entries):
        line = lines[i] if i < len(lines) else 0
        where = f"{label} line {line} (entry {i + 1} of TMC-list)"
        if not isinstance(entry, dict):
            raise DataSciBenchError(f"{where}: an entry must be a mapping with task_name, function, metric, code.")
        missing = [k for k in ("task_name", "function", "metric", "code") if not str(entry.get(k) or "").strip()]
        if missing:
            raise DataSciBenchError(f"{where}: the field{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
                                    f"{'are' if len(missing) > 1 else 'is'} missing or empty.")
        for key_name in ("task_name", "function", "metric", "code", "rule", "ground_truth", "id"):
            value = entry.get(key_name)
            at = first_control(value) if isinstance(value, str) else None
            if isinstance(value, str) and at is not None:
                raise DataSciBenchError(f"{where}: the field {key_name} holds {describe_control(value[at])}; "
                                        "control characters have no place in a check: remove it.")
        task_type = normalise_task_type(str(entry["task_name"]))
        if task_type is None:
            raise DataSciBenchError(f"{where}: task_name {entry['task_name']!r} is none of DataSciBench's six task "
                                    f"types ({'; '.join(PROGRAMMATIC_TASK_TYPES)}).")
        rule = entry.get("rule")
        gate = entry.get("gate")
        checks.append(ProgrammaticCheck(
            id=str(entry.get("id") or f"c{i + 1}"), task_type=task_type, function=str(entry["function"]),
            metric=str(entry["metric"]), code=str(entry["code"]), rule=str(rule) if rule not in (None, "") else None,
            ground_truth=_safe_rel(str(entry.get("ground_truth") or ""), where=where),
            gate=gate if isinstance(gate, dict) else {},
            provenance={"source": "datascibench", "task_name": str(entry["task_name"])}))
    ids = [c.id for c in checks]
    if len(set(ids)) != len(ids):
        raise DataSciBenchError(f"{label}: two checks share an id ({', '.join(sorted({i for i in ids if ids.count(i) > 1}))}).")
    return str(data.get("prompt") or ""), checks


def _parse_metric_prompt(text: str) -> str:
    data = yaml.safe_load(text)
    return str(data.get("prompt") or "") if isinstance(data, dict) else ""


def _refuse_large(path: Path, label: str, limit: int) -> None:
    size = path.stat().st_size
    if size > limit:  # before it is read: it is read whole
        raise DataSciBenchError(f"{label} is {size:,} bytes; such a file may be at most {limit:,} bytes.")


def _artifact(path: Path, rel: str) -> ProgrammaticArtifact:
    if path.stat().st_size > MAX_ARTIFACT_BYTES:  # before it is read
        raise DataSciBenchError(f"{path}: a ground-truth artifact larger than {MAX_ARTIFACT_BYTES // 2**20} MB.")
    data = path.read_bytes()
    return ProgrammaticArtifact(path=rel, sha256=hashlib.sha256(data).hexdigest(), size=len(data),
                                content_b64=base64.b64encode(data).decode("ascii"))


def read_task(root: Path, key: str) -> DataSciBenchTask:
    """Read task ``key`` of the tree at ``root`` (``metric/<key>/metric.yaml`` and ``data/<key>/``).

    Raises:
        DataSciBenchError: a file missing or malformed (with the file, and the line for YAML).
    """
    root = Path(root)
    if not _TASK_KEY.match(key):
        raise DataSciBenchError(f"{key!r} is not a task id DataSciBench uses (letters, digits, _ . -).")
    metric_path = root / "metric" / key / "metric.yaml"
    data_dir = root / "data" / key
    label = f"metric/{key}/metric.yaml"
    if not metric_path.is_file():
        raise DataSciBenchError(f"{label} is missing under {root}.")
    _refuse_large(metric_path, label, MAX_TEXT_FILE_BYTES)
    try:
        text = metric_path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise DataSciBenchError(f"{label} is not UTF-8 text (byte {exc.start}).") from None
    prompt, checks = _parse_metric(text, label=label)
    extra: dict[str, Any] = {}
    data_source_type = ""
    named_inputs: Any = None
    prompt_path = data_dir / "prompt.json"
    if prompt_path.is_file():
        _refuse_large(prompt_path, f"data/{key}/prompt.json", MAX_TEXT_FILE_BYTES)
        try:
            pj_text = prompt_path.read_text(encoding="utf-8")
            pj = json.loads(pj_text)
        except (ValueError, UnicodeDecodeError) as exc:
            raise DataSciBenchError(f"data/{key}/prompt.json is not valid JSON ({exc}).") from None
        if not isinstance(pj, dict):
            raise DataSciBenchError(f"data/{key}/prompt.json must be an object with 'prompt'.")
        prompt = str(pj.get("prompt") or prompt)
        at = first_control(prompt)
        if at is not None:
            escaped = ESCAPED_CONTROL.search(pj_text)
            line = f" line {line_of(pj_text, escaped.start())}" if escaped else ""
            raise DataSciBenchError(f"data/{key}/prompt.json{line}: the prompt holds {describe_control(prompt[at])}; "
                                    "control characters have no place in a prompt: remove it.")
        data_source_type = str(pj.get("data_source_type") or "")
        extra = {"prompt_json": {k: v for k, v in pj.items() if k not in ("prompt", "data_source_type")}}
        named_inputs = pj.get("input_files")
    metric_prompt = _parse_metric_prompt(text)
    if metric_prompt and metric_prompt != prompt:
        extra["metric_prompt"] = metric_prompt  # kept to write the file back as it was
    if not prompt.strip():
        raise DataSciBenchError(f"task {key}: neither data/{key}/prompt.json nor {label} has a prompt.")
    artifacts: list[ProgrammaticArtifact] = []
    inputs: dict[str, bytes] = {}
    gt_dir = data_dir / "gt"
    if gt_dir.is_dir():
        for path in sorted(gt_dir.rglob("*")):
            if path.is_symlink():
                raise DataSciBenchError(f"data/{key}/gt/{path.relative_to(gt_dir)} is a symbolic link.")
            if path.is_file() and path.name in REFERENCE_NAMES:
                extra["reference_solution"] = path.read_text(encoding="utf-8", errors="replace")
            elif path.is_file():
                artifacts.append(_artifact(path, path.relative_to(gt_dir).as_posix()))
    if data_dir.is_dir():
        for path in sorted(data_dir.iterdir()):
            if path.is_file() and path.name != "prompt.json" and not path.is_symlink():
                _refuse_large(path, f"data/{key}/{path.name}", MAX_INPUT_BYTES)
                held = sum(len(v) for v in inputs.values()) + sum(a.size for a in artifacts)
                if held + path.stat().st_size > MAX_TASK_BYTES:
                    raise DataSciBenchError(f"task {key}: its input files and ground-truth artifacts are over "
                                            f"{MAX_TASK_BYTES // 2**20} MB together (at data/{key}/{path.name}); a "
                                            "task is read whole, so keep its files smaller.")
                inputs[path.name] = path.read_bytes()
    for c in checks:
        if c.ground_truth and c.ground_truth not in {a.path for a in artifacts} and not (gt_dir / c.ground_truth).is_dir():
            raise DataSciBenchError(f"{label}: check {c.id} names ground_truth {c.ground_truth!r}, which data/{key}/gt/ "
                                    "does not have.")
    input_files = sorted(inputs)
    if isinstance(named_inputs, list):  # forkpaths: the task reads files of a registered dataset (not copied)
        input_files = [str(n) for n in named_inputs]
    task = ProgrammaticTaskRelease(key=key, prompt=prompt, input_files=input_files,
                                   data_source_type=data_source_type, artifacts=artifacts, checks=checks, extra=extra)
    return DataSciBenchTask(task=task, inputs=inputs)


def read_tree(root: Path) -> list[DataSciBenchTask]:
    """Every task of a DataSciBench tree (one per ``metric/<task>/metric.yaml``), in name order.

    Raises:
        DataSciBenchError: the folder is not such a tree, or a task cannot be read (which file, which line).
    """
    root = Path(root)
    metric = root / "metric"
    if not metric.is_dir():
        raise DataSciBenchError(f"{root} has no metric/ folder; a DataSciBench tree has metric/<task>/metric.yaml "
                                "and data/<task>/.")
    keys = sorted(p.parent.name for p in metric.glob("*/metric.yaml"))
    if not keys:
        raise DataSciBenchError(f"{metric} holds no <task>/metric.yaml.")
    tasks, held = [], 0
    for k in keys:
        task = read_task(root, k)
        held += sum(len(v) for v in task.inputs.values()) + sum(a.size for a in task.task.artifacts)
        if held > MAX_TREE_BYTES:
            raise DataSciBenchError(f"{root}: the tasks' files are over {MAX_TREE_BYTES // 2**20} MB together (at "
                                    f"task {k}); read the tree in parts.")
        tasks.append(task)
    return tasks


class _Literal(str):
    """Code written as a YAML block literal (``|``), readable as it is."""


def _literal(dumper: yaml.SafeDumper, value: _Literal) -> yaml.Node:
    return dumper.represent_scalar("tag:yaml.org,2002:str", str(value), style="|" if "\n" in value else None)


class _Dumper(yaml.SafeDumper):
    pass


_Dumper.add_representer(_Literal, _literal)


def write_task(root: Path, task: ProgrammaticTaskRelease, inputs: dict[str, bytes] | None = None, *,
               reference_name: str = REFERENCE_SOLUTION) -> None:
    """Write one task into a DataSciBench tree at ``root`` (accepted checks only); the reference solution, when
    the task has one, as ``gt/<reference_name>``."""
    root = Path(root)
    if not _TASK_KEY.match(task.key):
        raise DataSciBenchError(f"{task.key!r} cannot be a DataSciBench task folder name.")
    metric_dir, data_dir = root / "metric" / task.key, root / "data" / task.key
    metric_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / "gt").mkdir(parents=True, exist_ok=True)
    entries = []
    for c in task.checks:
        if c.status != "accepted":
            continue
        entry: dict[str, Any] = {"id": c.id, "task_name": str(c.provenance.get("task_name") or c.task_type), "function": c.function, "metric": c.metric,
                                 "code": _Literal(c.code.rstrip("\n") + "\n")}
        if c.ground_truth:
            entry["ground_truth"] = c.ground_truth
        if c.rule:
            entry["rule"] = c.rule
        if c.gate:
            entry["gate"] = c.gate
        entries.append(entry)
    doc = {"prompt": _Literal(str(task.extra.get("metric_prompt") or task.prompt)), "TMC-list": entries}
    (metric_dir / "metric.yaml").write_text(yaml.dump(doc, Dumper=_Dumper, sort_keys=False, allow_unicode=True,
                                                      width=120), encoding="utf-8")
    pj = {"prompt": task.prompt, "data_source_type": task.data_source_type,
          **(task.extra.get("prompt_json") or {})}
    if task.extra.get("reference_solution"):
        if reference_name not in REFERENCE_NAMES:
            raise DataSciBenchError(f"the reference solution is named one of {', '.join(REFERENCE_NAMES)}")
        (data_dir / "gt" / reference_name).write_text(task.extra["reference_solution"], encoding="utf-8")
    (data_dir / "prompt.json").write_text(json.dumps(pj, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    for a in task.artifacts:
        target = data_dir / "gt" / _safe_rel(a.path, where=f"task {task.key}")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(base64.b64decode(a.content_b64))
    for name, data in (inputs or {}).items():
        (data_dir / Path(name).name).write_bytes(data)


def write_tree(root: Path, tasks: list[DataSciBenchTask]) -> None:
    """Write every task (with its input files) into a DataSciBench tree at ``root``."""
    for t in tasks:
        write_task(root, t.task, t.inputs)

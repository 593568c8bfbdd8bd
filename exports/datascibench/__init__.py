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
* Input files are every file under ``data/<task>/`` at any depth (``data/dl_0/data/data_1.xlsx`` is the input
  ``data/data_1.xlsx``), except ``prompt.json``, ``gt/`` and agent-run folders (a top-level folder holding a
  ``logs.txt``, upstream's ``data/<task>/<model>_<run>/``). A symbolic link, a file larger than the upload limit,
  or a path that leads outside the task's folder is refused. A check whose code names a file by ``../<path>``
  (upstream runs checks in the run folder, so that is the task's folder) that neither the inputs nor ``gt/`` have
  is refused with the file, line and path.
* Agent-run folders and the raw ``metric/*_prompt_metric.csv`` candidates are not read: runs are scored from an
  outputs zip, and candidates are proposed in forkpaths itself.
* ``rule`` is kept as text and applied in the sandbox; upstream's threshold evaluators (``test_bool``,
  ``test_int``) are not separate kinds here: write them as a rule (``lambda x: 0.8 <= x <= 1``).
* Written back: ``metric.yaml`` and ``prompt.json`` are the very files that were read (kept in ``extra``) while the
  task's checks and prompt are still the ones read from them, so a round trip is byte for byte; otherwise
  ``metric.yaml`` holds the accepted checks, each with ``id`` as an extra key (upstream readers ignore unknown
  keys), and ``prompt.json`` keeps any extra fields it was read with. Input files are written at their paths.

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
from exports.programmatic_part import (
    PROGRAMMATIC_TASK_TYPES,
    ProgrammaticArtifact,
    ProgrammaticCheck,
    ProgrammaticTaskRelease,
)

__all__ = ["DataSciBenchError", "DataSciBenchTask", "normalise_task_type", "read_task", "read_tree",
           "write_task", "write_tree"]

MAX_ARTIFACT_BYTES = 20 * 1024 * 1024
MAX_INPUT_BYTES = 200 * 1024 * 1024  # the default upload limit (FORKPATHS_MAX_UPLOAD_MB); callers pass theirs
# Bounds on what one read holds in memory (issue 26 point 7): every input and artifact is read whole.
MAX_TEXT_FILE_BYTES = 2 * 1024 * 1024  # metric.yaml, prompt.json
MAX_TASK_BYTES = 256 * 1024 * 1024  # a task's inputs and artifacts together
MAX_TREE_BYTES = 512 * 1024 * 1024  # a tree's, read by read_tree
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


def _node_position(text: str, key: str | None) -> tuple[int, int]:
    """(line, column), 1-based, of ``key``'s value in the top-level mapping, or of the document when ``key`` is
    None or absent."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return 1, 1
    if node is None:
        return 1, 1
    if key is not None and isinstance(node, yaml.MappingNode):
        for k, value in node.value:
            if getattr(k, "value", None) == key:
                return value.start_mark.line + 1, value.start_mark.column + 1
    return node.start_mark.line + 1, node.start_mark.column + 1


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
        line, column = _node_position(text, None)
        raise DataSciBenchError(f"{label} line {line}, column {column}: expected a mapping with 'prompt' and "
                                "'TMC-list'.")
    entries = data.get("TMC-list", data.get("TFC-list"))
    if not isinstance(entries, list):
        key = "TMC-list" if "TMC-list" in data else "TFC-list" if "TFC-list" in data else None
        line, column = _node_position(text, key)
        what = f"its {key} is not a list of checks" if key else "it has no 'TMC-list' (the list of checks)"
        raise DataSciBenchError(f"{label} line {line}, column {column}: {what}.")
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


def _read_inputs(data_dir: Path, *, key: str, max_bytes: int) -> dict[str, bytes]:
    """Every input file under ``data/<key>/`` by its path there (POSIX), walked without following links."""
    import os

    top = data_dir.resolve()
    inputs: dict[str, bytes] = {}
    for dirpath, dirnames, filenames in os.walk(data_dir, followlinks=False):
        here = Path(dirpath)
        rel_dir = here.relative_to(data_dir)
        for name in sorted(dirnames + filenames):
            path = here / name
            rel = (rel_dir / name).as_posix()
            if path.is_symlink():
                raise DataSciBenchError(f"data/{key}/{rel} is a symbolic link; a task's inputs are plain files "
                                        "inside its folder. Nothing was read.")
            if not path.resolve().is_relative_to(top):
                raise DataSciBenchError(f"data/{key}/{rel} leads outside the task's folder; nothing was read.")
        if rel_dir == Path("."):
            # gt/ holds the ground truth; a folder with a logs.txt is an agent's run (upstream's layout)
            dirnames[:] = [d for d in dirnames if d != "gt" and not (here / d / "logs.txt").is_file()]
        for name in sorted(filenames):
            rel = (rel_dir / name).as_posix()
            if rel == "prompt.json":
                continue
            path = here / name
            if not path.is_file():
                raise DataSciBenchError(f"data/{key}/{rel} is not a regular file (a device or a pipe); nothing "
                                        "was read.")
            size = path.stat().st_size
            if size > max_bytes:
                raise DataSciBenchError(f"data/{key}/{rel} is {size:,} bytes, over the upload limit of "
                                        f"{max_bytes:,} bytes; nothing was read.")
            inputs[rel] = path.read_bytes()
    return dict(sorted(inputs.items()))


def _check_named_files(text: str, checks: list[ProgrammaticCheck], *, lines_of: str, key: str, inputs: set[str],
                       artifacts: set[str]) -> None:
    """Refuse a check whose code names ``../<path>`` (a file of the task's folder, seen from the run folder where
    upstream runs checks) that neither the inputs nor gt/ have (a glob must match one)."""
    import ast
    import fnmatch
    import posixpath

    lines = _entry_lines(text)
    have = inputs | {f"gt/{a}" for a in artifacts}
    for i, c in enumerate(checks):
        try:
            tree = ast.parse(c.code)
        except SyntaxError:
            continue  # scored as an error; not this reader's to refuse
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and node.value.startswith("../") and "\n" not in node.value):
                continue
            rel = posixpath.normpath(node.value[3:])
            if rel.startswith("..") or rel in (".", "gt") or rel.endswith("/"):
                continue
            if any(ch in rel for ch in "*?["):
                found = any(fnmatch.fnmatchcase(h, rel) for h in have)
            else:
                found = rel in have or any(h.startswith(rel + "/") for h in have)
            if not found:
                line = lines[i] if i < len(lines) else 0
                raise DataSciBenchError(
                    f"{lines_of} line {line} (entry {i + 1} of TMC-list, metric {c.metric!r}): the check reads "
                    f"{node.value!r}, which data/{key}/ does not have (it has: {', '.join(sorted(have)) or 'nothing'}).")


def read_task(root: Path, key: str, *, max_input_bytes: int = MAX_INPUT_BYTES) -> DataSciBenchTask:
    """Read task ``key`` of the tree at ``root`` (``metric/<key>/metric.yaml`` and ``data/<key>/``, its input
    files at any depth).

    Raises:
        DataSciBenchError: a file missing or malformed (with the file, and the line for YAML); an input that is a
            symbolic link, larger than ``max_input_bytes`` or outside the task's folder; a check naming a file
            the task does not have.
    """
    root = Path(root)
    if not _TASK_KEY.match(key):
        raise DataSciBenchError(f"{key!r} is not a task id DataSciBench uses (letters, digits, _ . -).")
    metric_path = root / "metric" / key / "metric.yaml"
    data_dir = root / "data" / key
    label = f"metric/{key}/metric.yaml"
    if not metric_path.is_file():
        raise DataSciBenchError(f"{label} is missing under {root}.")
    if metric_path.is_symlink() or (data_dir / "prompt.json").is_symlink():
        raise DataSciBenchError(f"task {key}: {label} or data/{key}/prompt.json is a symbolic link; the tree must "
                                "hold plain files.")
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
    if gt_dir.is_symlink():
        raise DataSciBenchError(f"data/{key}/gt is a symbolic link; the tree must hold plain files.")
    if gt_dir.is_dir():
        for path in sorted(gt_dir.rglob("*")):
            if path.is_symlink():
                raise DataSciBenchError(f"data/{key}/gt/{path.relative_to(gt_dir)} is a symbolic link.")
            if path.is_file() and path.name in REFERENCE_NAMES:
                extra["reference_solution"] = path.read_text(encoding="utf-8", errors="replace")
            elif path.is_file():
                artifacts.append(_artifact(path, path.relative_to(gt_dir).as_posix()))
    if data_dir.is_dir():
        inputs = _read_inputs(data_dir, key=key, max_bytes=max_input_bytes)
        held = sum(len(v) for v in inputs.values()) + sum(a.size for a in artifacts)
        if held > MAX_TASK_BYTES:
            raise DataSciBenchError(f"task {key}: its input files and ground-truth artifacts are over "
                                    f"{MAX_TASK_BYTES // 2**20} MB together; a task is read whole, so keep its files "
                                    "smaller.")
    for c in checks:
        if c.ground_truth and c.ground_truth not in {a.path for a in artifacts} and not (gt_dir / c.ground_truth).is_dir():
            raise DataSciBenchError(f"{label}: check {c.id} names ground_truth {c.ground_truth!r}, which data/{key}/gt/ "
                                    "does not have.")
    input_files = sorted(inputs)
    if isinstance(named_inputs, list):  # forkpaths: the task reads files of a registered dataset (not copied)
        input_files = [str(n) for n in named_inputs]
    else:
        _check_named_files(text, checks, lines_of=label, key=key, inputs=set(inputs),
                           artifacts={a.path for a in artifacts})
    extra["metric_yaml"] = text  # written back as it is while the checks are still these
    if prompt_path.is_file():
        extra["prompt_json_text"] = prompt_path.read_text(encoding="utf-8")
    task = ProgrammaticTaskRelease(key=key, prompt=prompt, input_files=input_files,
                                   data_source_type=data_source_type, artifacts=artifacts, checks=checks, extra=extra)
    return DataSciBenchTask(task=task, inputs=inputs)


def read_tree(root: Path, *, max_input_bytes: int = MAX_INPUT_BYTES) -> list[DataSciBenchTask]:
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
        task = read_task(root, k, max_input_bytes=max_input_bytes)
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
    original = task.extra.get("metric_yaml")
    if isinstance(original, str) and _same_checks(original, [c for c in task.checks if c.status == "accepted"],
                                                  task.key):
        (metric_dir / "metric.yaml").write_bytes(original.encode("utf-8"))
    else:
        (metric_dir / "metric.yaml").write_text(yaml.dump(doc, Dumper=_Dumper, sort_keys=False, allow_unicode=True,
                                                          width=120), encoding="utf-8")
    pj = {"prompt": task.prompt, "data_source_type": task.data_source_type,
          **(task.extra.get("prompt_json") or {})}
    pj_text = task.extra.get("prompt_json_text")
    if task.extra.get("reference_solution"):
        if reference_name not in REFERENCE_NAMES:
            raise DataSciBenchError(f"the reference solution is named one of {', '.join(REFERENCE_NAMES)}")
        (data_dir / "gt" / reference_name).write_text(task.extra["reference_solution"], encoding="utf-8")
    if isinstance(pj_text, str) and _same_prompt(pj_text, pj):
        (data_dir / "prompt.json").write_bytes(pj_text.encode("utf-8"))
    else:
        (data_dir / "prompt.json").write_text(json.dumps(pj, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    for a in task.artifacts:
        target = data_dir / "gt" / _safe_rel(a.path, where=f"task {task.key}")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(base64.b64decode(a.content_b64))
    for name, data in (inputs or {}).items():
        rel = _safe_rel(name, where=f"task {task.key}: the input")
        if not rel or rel == "prompt.json" or rel.split("/")[0] == "gt":
            raise DataSciBenchError(f"task {task.key}: the input file {name!r} cannot be written into its folder.")
        target = data_dir / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def _same_checks(text: str, checks: list[ProgrammaticCheck], key: str) -> bool:
    """Are ``checks`` (in order) the ones ``text`` (a metric.yaml as read) holds, up to their ids?"""
    try:
        _prompt, read = _parse_metric(text, label=f"metric/{key}/metric.yaml")
    except DataSciBenchError:
        return False

    def fields(c: ProgrammaticCheck) -> tuple[Any, ...]:
        return (c.task_type, c.function, c.metric, c.code, c.rule or None, c.ground_truth or "")

    return [fields(c) for c in read] == [fields(c) for c in checks]


def _same_prompt(text: str, wanted: dict[str, Any]) -> bool:
    try:
        data = json.loads(text)
    except ValueError:
        return False
    return isinstance(data, dict) and {k: data.get(k) for k in ("prompt", "data_source_type")} == {
        "prompt": wanted["prompt"], "data_source_type": wanted["data_source_type"] or data.get("data_source_type")}


def write_tree(root: Path, tasks: list[DataSciBenchTask]) -> None:
    """Write every task (with its input files) into a DataSciBench tree at ``root``."""
    for t in tasks:
        write_task(root, t.task, t.inputs)

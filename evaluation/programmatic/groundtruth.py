"""Ground truth for programmatic tasks, the DataSciBench way with experts in the loop.

1. An LLM writes N candidate solutions (:func:`ask_solutions`); each runs in the sandbox on the task's input
   files (:func:`run_solution`), giving one output folder per sample.
2. **Self-consistency** (:func:`agree`): outputs that agree across samples become candidate artifacts.
3. The LLM proposes checks (:func:`ask_checks`).
4. Analysts verify, edit and vote on the candidate artifacts and checks (stages 2 and 3, in ``curation``).
5. **The release gate** (:func:`gate`): a check is released only once it passes on the accepted artifacts and
   fails on a known wrong output; a check that passes on everything is refused.

The agreement rule
------------------
For every output path that at least one sample wrote, each sample's file is reduced to a *fingerprint*:

* tables (``.csv``, ``.tsv``): read with pandas; columns sorted by name, rows sorted, numbers rounded to
  6 significant digits, missing values as one token — two tables that differ only in row or column order or in
  float noise agree;
* JSON: parsed, keys sorted, numbers rounded to 6 significant digits;
* text (``.txt``, ``.md``): whitespace collapsed, numbers rounded to 6 significant digits;
* anything else (images, models): its bytes' sha256 (two plots agree only when byte-identical).

A path's fingerprint *agrees* when a strict majority of the samples that ran without error share it, and at
least two do: ``count > ok_samples / 2 and count >= 2``. The file of the first such sample becomes the candidate
artifact, with the agreement (``count`` of ``ok_samples``) recorded. Paths without such a majority are listed as
disagreeing with their groups, for the analysts to judge (they may still pick one).
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from evaluation.llm import DATA_NOTICE, LLMClient, ParseError, quote
from evaluation.llm.parsing import extract_json
from evaluation.programmatic.runner import (
    DEFAULT_CHECK_LIMITS,
    CheckLimits,
    TaskOutcome,
    check_code_problem,
    clean_ground_truth,
    run_checks,
)
from exports.programmatic_part import PROGRAMMATIC_TASK_TYPES, ProgrammaticCheck, ProgrammaticTaskRelease

__all__ = ["Agreement", "GateResult", "ProposedCheck", "SolutionRun", "agree", "ask_checks", "ask_solution", "ask_solutions",
           "fingerprint", "gate", "run_solution", "wrong_outputs"]

SOLUTIONS_TEMPLATE = "programmatic-solutions@1"
CHECKS_TEMPLATE = "programmatic-checks@2"  # 2: ground_truth is the path inside gt/ (not gt/…)


def _round(x: float) -> float | str:
    if isinstance(x, bool):
        return x
    if isinstance(x, float) and (math.isnan(x) or math.isinf(x)):
        return str(x)
    return float(f"{x:.6g}")


_NUMBER = re.compile(r"-?\d+\.\d+(?:[eE][-+]?\d+)?")


def _json_canon(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _json_canon(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, list):
        return [_json_canon(v) for v in value]
    if isinstance(value, float):
        return _round(value)
    return value


def fingerprint(path: str, data: bytes) -> str:
    """The file's fingerprint under the agreement rule (see the module's docstring)."""
    lower = path.lower()
    try:
        if lower.endswith((".csv", ".tsv")):
            import pandas as pd

            frame = pd.read_csv(io.BytesIO(data), sep="\t" if lower.endswith(".tsv") else ",")
            frame = frame.reindex(sorted(frame.columns, key=str), axis=1)
            rows = sorted(json.dumps([None if (isinstance(v, float) and math.isnan(v)) else
                                      (_round(v) if isinstance(v, float) else v)
                                      for v in row], default=str) for row in frame.itertuples(index=False))
            canon = json.dumps({"columns": [str(c) for c in frame.columns], "rows": rows})
        elif lower.endswith(".json"):
            canon = json.dumps(_json_canon(json.loads(data)), sort_keys=True)
        elif lower.endswith((".txt", ".md")):
            text = " ".join(data.decode("utf-8").split())
            canon = _NUMBER.sub(lambda m: str(_round(float(m.group()))), text)
        else:
            canon = "bytes:" + hashlib.sha256(data).hexdigest()
    except (ValueError, UnicodeDecodeError, LookupError, TypeError):
        canon = "bytes:" + hashlib.sha256(data).hexdigest()
    except Exception:  # noqa: BLE001 - pandas' parser errors: the bytes stand for themselves
        canon = "bytes:" + hashlib.sha256(data).hexdigest()
    return hashlib.sha256(canon.encode("utf-8")).hexdigest()


@dataclass
class SolutionRun:
    """One candidate solution and what it produced in the sandbox."""

    code: str
    ok: bool
    files: dict[str, bytes] = field(default_factory=dict)
    error: str = ""


class Agreement(BaseModel):
    """What self-consistency made of N samples."""

    samples: int
    ok_samples: int
    artifacts: dict[str, str] = Field(default_factory=dict, description="path → base64 of the agreed file")
    support: dict[str, int] = Field(default_factory=dict, description="path → samples agreeing")
    disagreeing: dict[str, list[int]] = Field(default_factory=dict,
                                              description="path → sizes of its fingerprint groups, largest first")
    rule: str = "strict majority of the samples that ran (and at least two) share the fingerprint"

    def artifact_bytes(self) -> dict[str, bytes]:
        return {p: base64.b64decode(b) for p, b in self.artifacts.items()}


def agree(runs: Sequence[SolutionRun]) -> Agreement:
    """Apply the agreement rule to the samples' outputs (see the module's docstring)."""
    ok = [r for r in runs if r.ok]
    paths = sorted({p for r in ok for p in r.files})
    out = Agreement(samples=len(runs), ok_samples=len(ok))
    for path in paths:
        groups: dict[str, list[bytes]] = {}
        for r in ok:
            if path in r.files:
                groups.setdefault(fingerprint(path, r.files[path]), []).append(r.files[path])
        best = max(groups.values(), key=len)
        if len(best) >= 2 and len(best) * 2 > len(ok):
            out.artifacts[path] = base64.b64encode(best[0]).decode("ascii")
            out.support[path] = len(best)
        else:
            out.disagreeing[path] = sorted((len(g) for g in groups.values()), reverse=True)
    return out


def run_solution(code: str, inputs: Mapping[str, bytes], *, timeout_s: float = 60.0,
                 memory_mb: int = 2048) -> SolutionRun:
    """Run one candidate solution in the sandbox, in a folder holding the task's input files.

    Raises:
        SandboxError: the sandbox itself could not run.
    """
    from evaluation.programmatic.job import SOLUTION_JOB
    from evaluation.sandbox import SandboxLimits, run_job

    payload = {"code": code, "timeout_s": timeout_s,
               "inputs": {n: base64.b64encode(b).decode("ascii") for n, b in inputs.items()}}
    raw = run_job(SOLUTION_JOB, payload, data_path=None,
                  limits=SandboxLimits(timeout_s=timeout_s + 15, memory_mb=memory_mb))
    if not raw.get("ok"):
        return SolutionRun(code=code, ok=False, error=str(raw.get("error") or "the sandbox job failed"))
    run = raw.get("run") or {}
    if run.get("status") != "value":
        return SolutionRun(code=code, ok=False, error=str(run.get("error") or run.get("status")))
    if raw.get("too_large"):
        return SolutionRun(code=code, ok=False, error="the solution wrote more than 50 MB")
    return SolutionRun(code=code, ok=True, files={p: base64.b64decode(b) for p, b in (raw.get("files") or {}).items()})


# ------------------------------------------------------------------------------------ the LLM's part


def _said(exc: Exception) -> str:
    """One sentence for what is wrong with the model's answer (a pydantic error's own text is a multi-line dump
    with the input repeated and a web address)."""
    if not isinstance(exc, ValidationError):
        return str(exc)
    parts = []
    for error in exc.errors()[:3]:
        where = "/".join(str(p) for p in error["loc"]) or "the answer"
        if error["type"] == "missing":
            parts.append(f"'{where}' is missing")
        elif error["type"] in ("model_type", "dict_type"):
            parts.append(f"'{where}' must be an object" if error["loc"] else "the answer must be a JSON object")
        else:
            parts.append(f"'{where}' is wrong ({str(error['msg']).rstrip('.').lower()})")
    more = exc.error_count() - len(parts)
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


class _SolutionAnswer(BaseModel):
    code: str
    outputs: list[str] = Field(default_factory=list)


def _parse_solution(text: str) -> _SolutionAnswer:
    try:
        value, _ = extract_json(text)
        answer = _SolutionAnswer.model_validate(value)
    except (ValidationError, ParseError, ValueError) as exc:
        raise ParseError(f"expected {{\"code\": <python>, \"outputs\": [file names]}}: {_said(exc)}") from None
    if not answer.code.strip():
        raise ParseError("the answer's code is empty")
    try:
        compile(answer.code, "<solution>", "exec")
    except SyntaxError as exc:
        raise ParseError(f"the solution's code does not parse (line {exc.lineno}: {exc.msg})") from None
    return answer


def _solution_messages(task: ProgrammaticTaskRelease, i: int, n: int,
                       columns: Mapping[str, Sequence[str]] | None) -> list[dict[str, str]]:
    files = ", ".join(f"{name} (columns: {', '.join(cols)})" for name, cols in (columns or {}).items()) or \
        ", ".join(task.input_files)
    system = ("You write a Python script that solves a data-science task. The input files are in the working "
              "directory; write every output file the task asks for into the working directory. Use pandas, numpy, "
              "scikit-learn, scipy or matplotlib (Agg backend). No network, no subprocesses. Answer with JSON: "
              '{"code": "<the script>", "outputs": ["<file names it writes>"]}. ' + DATA_NOTICE)
    user = f"Task: {quote(task.prompt)}\nInput files: {quote(files)}\nCandidate {i + 1} of {n}."
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def ask_solution(client: LLMClient, task: ProgrammaticTaskRelease, i: int, n: int,
                 columns: Mapping[str, Sequence[str]] | None = None) -> str:
    """Candidate solution ``i`` (0-based) of ``n``: its own request and cache entry, so a generation asked again
    (after a cancel, say) sends only what it has not asked yet.

    Raises:
        LLMCallError / LLMAnswerError: the endpoint failed, or answered something that is not a solution.
    """
    return client.ask(template=SOLUTIONS_TEMPLATE, messages=_solution_messages(task, i, n, columns),
                      parse=_parse_solution).value.code


def ask_solutions(client: LLMClient, task: ProgrammaticTaskRelease, n: int,
                  columns: Mapping[str, Sequence[str]] | None = None) -> list[str]:
    """N candidate solutions (Python code) for the task (:func:`ask_solution` each)."""
    return [ask_solution(client, task, i, n, columns) for i in range(n)]


class ProposedCheck(BaseModel):
    task_type: str
    function: str
    metric: str
    code: str
    rule: str | None = None
    ground_truth: str = ""


class _ChecksAnswer(BaseModel):
    checks: list[ProposedCheck]


def _parse_checks(text: str) -> list[ProposedCheck]:
    try:
        value, _ = extract_json(text)
        answer = _ChecksAnswer.model_validate(value)
    except (ValidationError, ParseError, ValueError) as exc:
        raise ParseError(f"expected {{\"checks\": [{{task_type, function, metric, code, rule?, ground_truth?}}]}}: "
                         f"{_said(exc)}") from None
    if not answer.checks:
        raise ParseError("the answer proposes no check")
    for i, c in enumerate(answer.checks, 1):
        if c.task_type not in PROGRAMMATIC_TASK_TYPES:
            from exports.datascibench import normalise_task_type

            normal = normalise_task_type(c.task_type)
            if normal is None:
                raise ParseError(f"check {i}: task_type {c.task_type!r} is none of the six task types")
            c.task_type = normal
        problem = check_code_problem(c.code)
        if problem:
            raise ParseError(f"check {i}: {problem}")
        c.ground_truth = clean_ground_truth(c.ground_truth)
        if c.rule:
            try:
                compile(c.rule, "<rule>", "eval")
            except SyntaxError as exc:
                raise ParseError(f"check {i}: the rule does not parse ({exc.msg})") from None
    return answer.checks


def ask_checks(client: LLMClient, task: ProgrammaticTaskRelease, artifacts: Sequence[str]) -> list[ProposedCheck]:
    """Checks the LLM proposes for the task, given the names of its candidate artifacts.

    Raises:
        LLMCallError / LLMAnswerError: the endpoint failed, or its answer is not a list of usable checks.
    """
    system = ("You write checks for a data-science task, DataSciBench style. Each check is the source of ONE Python "
              "function f(ground_truth) that runs in the folder of an agent's output files (read them by name from "
              "the working directory) and receives the path of the ground-truth artifact (a file in gt/, or gt/ "
              "itself); it returns True or False. Task types: " + "; ".join(PROGRAMMATIC_TASK_TYPES) + ". Answer "
              'with JSON: {"checks": [{"task_type", "function", "metric", "code", "rule": null, "ground_truth": '
              '"<the artifact\'s path inside gt/, e.g. summary.csv (not gt/summary.csv), or empty>"}]}. '
              + DATA_NOTICE)
    user = f"Task: {quote(task.prompt)}\nGround-truth artifacts: {quote(', '.join(artifacts) or 'none')}"
    return client.ask(template=CHECKS_TEMPLATE, messages=[{"role": "system", "content": system},
                                                          {"role": "user", "content": user}],
                      parse=_parse_checks).value


# ------------------------------------------------------------------------------------ the release gate


def wrong_outputs(artifacts: Mapping[str, bytes]) -> dict[str, dict[str, bytes]]:
    """Known wrong outputs made from the accepted artifacts: each table with its first row duplicated, with its
    last row dropped, with its
    numbers shifted by 10 %, with a missing value in its first cell; each JSON/text with its numbers shifted;
    each image replaced by a blank one. Labelled by what was changed."""
    out: dict[str, dict[str, bytes]] = {}
    for path, data in artifacts.items():
        lower = path.lower()
        if lower.endswith((".csv", ".tsv")):
            try:
                import pandas as pd

                sep = "\t" if lower.endswith(".tsv") else ","
                frame = pd.read_csv(io.BytesIO(data), sep=sep)
            except Exception:  # noqa: BLE001 - not a table pandas reads: no table mutation
                continue
            if len(frame):
                doubled = pd.concat([frame, frame.iloc[:1]], ignore_index=True)
                out[f"{path}: first row duplicated"] = {**artifacts, path: doubled.to_csv(index=False, sep=sep).encode()}
            if len(frame) > 1:
                out[f"{path}: last row dropped"] = {**artifacts, path: frame.iloc[:-1].to_csv(index=False, sep=sep).encode()}
            shifted = frame.copy()
            numeric = shifted.select_dtypes("number").columns
            if len(numeric):
                shifted[numeric] = shifted[numeric] * 1.1 + 1
                out[f"{path}: numbers shifted by 10 %"] = {**artifacts, path: shifted.to_csv(index=False, sep=sep).encode()}
            if len(frame) and len(frame.columns):
                holed = frame.copy().astype(object)
                holed.iloc[0, 0] = None
                out[f"{path}: a missing value"] = {**artifacts, path: holed.to_csv(index=False, sep=sep).encode()}
        elif lower.endswith((".json", ".txt", ".md")):
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                continue
            changed = re.sub(r"-?\d+(?:\.\d+)?", lambda m: repr(float(m.group()) * 1.1 + 1), text)
            if changed != text:
                out[f"{path}: numbers shifted by 10 %"] = {**artifacts, path: changed.encode()}
        elif lower.endswith((".png", ".jpg", ".jpeg")):
            out[f"{path}: a blank image"] = {**artifacts, path: _blank_png()}
    return out


def _blank_png() -> bytes:
    import struct
    import zlib

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    raw = b"".join(b"\x00" + b"\xff\xff\xff" * 8 for _ in range(8))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 8, 8, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


class GateResult(BaseModel):
    """The release gate's evidence for one check: its outcome on the accepted artifacts and on each wrong output."""

    released: bool
    sentence: str
    on_accepted: dict[str, Any]
    on_wrong: list[dict[str, Any]] = Field(default_factory=list)


def _brief(outcome: TaskOutcome) -> dict[str, Any]:
    c = outcome.checks[0]
    return {"status": c.status, "score": c.score, "sentence": c.sentence, "detail": c.detail[-600:]}


def gate(task: ProgrammaticTaskRelease, check: ProgrammaticCheck, accepted: Mapping[str, bytes], *,
         gt: Mapping[str, bytes] | None = None, wrong: Mapping[str, Mapping[str, bytes]] | None = None,
         limits: CheckLimits = DEFAULT_CHECK_LIMITS, inputs: Mapping[str, bytes] | None = None) -> GateResult:
    """Run ``check`` on the accepted artifacts (as the output folder) and on known wrong outputs (default:
    :func:`wrong_outputs` of the accepted ones, plus any given). Released only when it passes on the accepted
    artifacts and fails (anything but True) on at least one wrong output; a check that passes on everything is
    refused.

    Raises:
        SandboxError: the sandbox itself could not run.
    """
    problem = check_code_problem(check.code)
    if problem:
        return GateResult(released=False, sentence=f"Refused: {problem}", on_accepted={"status": "syntax"})
    gt_files = dict(gt if gt is not None else accepted)
    on_accepted = _brief(run_checks(task, accepted, checks=[check], gt=gt_files, limits=limits, inputs=inputs))
    wrongs = {**wrong_outputs(accepted), **(wrong or {})}
    on_wrong = [{"label": label, **_brief(run_checks(task, files, checks=[check], gt=gt_files, limits=limits,
                                                     inputs=inputs))}
                for label, files in wrongs.items()]
    if on_accepted["status"] != "true":
        return GateResult(released=False, on_accepted=on_accepted, on_wrong=on_wrong,
                          sentence=f"Refused: on the accepted artifacts the check did not pass ({on_accepted['sentence']})")
    if not on_wrong:
        return GateResult(released=False, on_accepted=on_accepted, on_wrong=on_wrong,
                          sentence="Refused: there is no known wrong output to show that the check can fail; add one.")
    failing = [w for w in on_wrong if w["status"] != "true"]
    if not failing:
        return GateResult(released=False, on_accepted=on_accepted, on_wrong=on_wrong,
                          sentence=f"Refused: the check passes on every output, including all {len(on_wrong)} known "
                                   "wrong ones, so it tells nothing apart.")
    return GateResult(released=True, on_accepted=on_accepted, on_wrong=on_wrong,
                      sentence=f"Released: it passes on the accepted artifacts and fails on {len(failing)} of "
                               f"{len(on_wrong)} known wrong outputs (e.g. {failing[0]['label']}).")

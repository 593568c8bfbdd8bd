"""Agent submissions in BLADE's two formats (blade-reference 4.1), validated one analysis at a time.

* single run: ``{"dataset_name": str, "analyses": [EntireAnalysis, ...]}`` (``submission_schema.json``);
* multi run: ``{"dataset_name": str, "n": int, "analyses": {"0": EntireAnalysis | [status, message], ...}}``
  as BLADE's generation script writes it; a ``[status, message]`` pair is a generation that failed.

An ``EntireAnalysis`` is ``{cvars: {ivs, dv, controls}, transform_code, m_code}``. A file that is not JSON or
has no ``dataset_name``/``analyses`` cannot be scored at all and raises :class:`SubmissionError`; everything
else is judged per analysis: a missing field, a dataset the release lacks or code that does not parse gives that
analysis a status and a sentence naming the analysis and the field, and the other analyses proceed.

Function bodies are extracted as BLADE's evaluator does (blade-reference 4.1, last paragraph): the first function
whose name contains ``transform`` (``model`` for the model code) is taken, its statements up to the first
top-level ``return`` are kept, and its parameter is renamed to ``df`` when it has another name. Code without such
a function is used as it is. Unlike BLADE, the returned expression is kept too (:attr:`ExtractedFunction.returned`)
and :attr:`ExtractedFunction.source` rebuilds a clean ``def <kind>(df): ... return <expr>`` that can run in a
fresh sandbox per analysis.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterable, Mapping
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evaluation.errors import EvaluationError

__all__ = [
    "BLADE_RUN_STATUS",
    "AgentControl",
    "AgentVariable",
    "AgentVariables",
    "AnalysisStatus",
    "CodeStatus",
    "EntireAnalysis",
    "ExtractedFunction",
    "Submission",
    "SubmissionError",
    "SubmittedAnalysis",
    "extract_function",
    "parse_submission",
    "read_submission",
]

# BLADE's RunResultModes (blade-reference 4.2), used for the [status, message] pairs of a multi-run file.
BLADE_RUN_STATUS: dict[int, str] = {
    0: "LM_SUBMISSION_EXECUTION_FAILED",
    1: "LM_SUBMISSION_CONVERSION_FAILED",
    2: "LM_GENERATION_FAILED",
    3: "LOAD_GT_FAILED",
    4: "LM_SUBMISSION_TRANSFORM_CODE_EMPTY",
    5: "FINISHED_SUCCESSFULLY",
    6: "MATCHING_FAILED",
    7: "GETTING_METRICS_FAILED",
}


class SubmissionError(EvaluationError):
    """The submission file as a whole cannot be read (not JSON, no ``dataset_name``, no ``analyses``)."""


class _Model(BaseModel):
    # BLADE's pydantic models ignore unknown keys; so do we (agents add notes, ids, ...).
    model_config = ConfigDict(extra="ignore")


class AgentVariable(_Model):
    """An IV or the DV: a description and the columns of the *final* frame that the model uses."""

    description: str
    columns: list[str]


class AgentControl(AgentVariable):
    """A control variable; ``is_moderator`` marks an interaction (BLADE's Moderator bucket)."""

    is_moderator: bool
    moderator_on: str | None = ""


Role = Literal["IV", "DV", "Control", "Moderator"]


class AgentVariables(_Model):
    ivs: list[AgentVariable]
    dv: AgentVariable
    controls: list[AgentControl]

    def flat(self) -> list[tuple[Role, AgentVariable]]:
        """Every variable with its role, in a fixed order: IVs, the DV, controls (moderators as Moderator)."""
        out: list[tuple[Role, AgentVariable]] = [("IV", v) for v in self.ivs]
        out.append(("DV", self.dv))
        out += [("Moderator" if c.is_moderator else "Control", c) for c in self.controls]
        return out


class EntireAnalysis(_Model):
    cvars: AgentVariables
    transform_code: str
    m_code: str


class ExtractedFunction(BaseModel):
    """One function of an analysis as BLADE extracts it.

    Attributes:
        kind: ``transform`` or ``model``.
        function: the name of the function found, or ``None`` when the code had none and is used raw.
        parameter: the function's first parameter as written (renamed to ``df`` in ``body``).
        body: the statements before the first top-level ``return``, parameter renamed to ``df``.
        returned: the source of the returned expression (``None``: no top-level return).
        preamble: the module-level imports, helper functions/classes and literal constants next to the
            function (BLADE drops them, so a transform calling its own helper fails there; here it runs).
    """

    kind: Literal["transform", "model"]
    function: str | None = None
    parameter: str | None = None
    body: str = ""
    returned: str | None = None
    preamble: str = ""

    @property
    def source(self) -> str:
        """A self-contained ``def <kind>(df): ...`` that returns what the agent's function returned."""
        lines = [self.preamble] if self.preamble else []
        body = self.body.strip("\n") or "pass"
        lines.append(f"def {self.kind}(df):")
        lines += ["    " + line for line in body.splitlines()]
        if self.function is None:
            # raw code: the frame is whatever ``df`` (transform) or ``results``/``model`` name holds at the end
            fallback = "df" if self.kind == "transform" else "locals().get('results', locals().get('model'))"
            lines.append(f"    return {self.returned or fallback}")
        else:
            lines.append(f"    return {self.returned or 'None'}")
        return "\n".join(lines) + "\n"


class AnalysisStatus(StrEnum):
    """Where an analysis stands after reading; only ``ok`` analyses (and ``code_problem`` ones, partly) score."""

    OK = "ok"
    CODE_PROBLEM = "code_problem"  # a stage's code is empty or does not parse; the other stages still score
    INVALID = "invalid"  # missing or mistyped fields
    GENERATION_FAILED = "generation_failed"  # a [status, message] pair in a multi-run file
    UNKNOWN_DATASET = "unknown_dataset"


class CodeStatus(StrEnum):
    OK = "ok"
    EMPTY = "empty"
    SYNTAX_ERROR = "syntax_error"


class SubmittedAnalysis(BaseModel):
    """One analysis of a submission with its reading status.

    Attributes:
        key: its position (single run) or its key (multi run), as a string.
        status: see :class:`AnalysisStatus`; ``message`` says what is wrong and where.
        analysis: the validated analysis (``None`` when invalid or a failed generation).
        transform / model: the extracted functions when their code parses.
        transform_status / model_status: per stage, so a broken transform still lets variables and model score.
        blade_status: for a failed generation, BLADE's status number and name.
    """

    key: str
    status: AnalysisStatus
    message: str = ""
    analysis: EntireAnalysis | None = None
    transform: ExtractedFunction | None = None
    model: ExtractedFunction | None = None
    transform_status: CodeStatus | None = None
    transform_message: str = ""
    model_status: CodeStatus | None = None
    model_message: str = ""
    blade_status: int | None = None
    blade_status_name: str = ""


class Submission(BaseModel):
    dataset_name: str
    format: Literal["single_run", "multi_run"]
    n: int | None = None
    label: str = "submission"
    analyses: list[SubmittedAnalysis] = Field(default_factory=list)

    @property
    def scorable(self) -> list[SubmittedAnalysis]:
        """Analyses with validated content (``ok`` or ``code_problem``)."""
        return [a for a in self.analyses if a.analysis is not None and a.status != AnalysisStatus.UNKNOWN_DATASET]


# ------------------------------------------------------------------------------------------ extraction


class _Rename(ast.NodeTransformer):
    def __init__(self, old: str, new: str) -> None:
        self.old, self.new = old, new

    def visit_Name(self, node: ast.Name) -> ast.Name:
        if node.id == self.old:
            node.id = self.new
        return node


def _supporting(node: ast.stmt) -> bool:
    """Module-level statements a function may rely on and that are safe to keep (no calls that do work)."""
    if isinstance(node, ast.Import | ast.ImportFrom | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return True
    if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
        try:
            ast.literal_eval(node.value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return False
        return True
    return False


def extract_function(code: str, kind: Literal["transform", "model"]) -> ExtractedFunction:
    """BLADE's extraction of the ``transform``/``model`` function body (see the module docstring).

    Raises:
        SyntaxError: the code does not parse.
    """
    tree = ast.parse(code)
    func = next((n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and kind in n.name),
                None)
    if func is None:
        # also look one level down (a function nested in a class or an if-block is rare but legal)
        func = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and kind in n.name), None)
    if func is None:
        return ExtractedFunction(kind=kind, body=code.strip("\n"))
    preamble = "\n".join(ast.unparse(n) for n in tree.body if n is not func and _supporting(n))
    args = func.args.posonlyargs + func.args.args
    parameter = args[0].arg if args else None
    statements: list[ast.stmt] = []
    returned: str | None = None
    for stmt in func.body:
        if isinstance(stmt, ast.Return):
            returned = ast.unparse(stmt.value) if stmt.value is not None else None
            break
        statements.append(stmt)
    if statements and isinstance(statements[0], ast.Expr) and isinstance(statements[0].value, ast.Constant) \
            and isinstance(statements[0].value.value, str):
        statements = statements[1:]  # the docstring
    module = ast.Module(body=statements, type_ignores=[])
    if parameter and parameter != "df":
        module = _Rename(parameter, "df").visit(module)
        if returned is not None:
            returned = ast.unparse(_Rename(parameter, "df").visit(ast.parse(returned, mode="eval")))
    body = ast.unparse(module) if statements else ""
    return ExtractedFunction(kind=kind, function=func.name, parameter=parameter, body=body, returned=returned,
                             preamble=preamble)


def _check_code(code: str, kind: Literal["transform", "model"], where: str,
                ) -> tuple[ExtractedFunction | None, CodeStatus, str]:
    field = "transform_code" if kind == "transform" else "m_code"
    if not code.strip():
        return None, CodeStatus.EMPTY, f"{where}: {field} is empty."
    try:
        extracted = extract_function(code, kind)
    except SyntaxError as exc:
        return None, CodeStatus.SYNTAX_ERROR, (
            f"{where}: {field} does not parse: {exc.msg} at line {exc.lineno}"
            + (f", column {exc.offset}" if exc.offset else "") + ".")
    if not extracted.body.strip() and extracted.returned is None:
        return extracted, CodeStatus.EMPTY, f"{where}: the {kind} function in {field} has no statements."
    return extracted, CodeStatus.OK, ""


# ------------------------------------------------------------------------------------------ validation


def _loc(loc: Iterable[int | str]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "the analysis"


def _describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        where = _loc(err.get("loc", ()))
        kind = err.get("type", "")
        if kind == "missing":
            parts.append(f"{where} is missing")
        else:
            parts.append(f"{where}: {err.get('msg', 'invalid')}")
    more = len(exc.errors()) - 5
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


def _analysis(key: str, raw: Any, where: str) -> SubmittedAnalysis:
    if not isinstance(raw, dict):
        return SubmittedAnalysis(key=key, status=AnalysisStatus.INVALID,
                                 message=f"{where} is a {type(raw).__name__}, not an object with cvars, "
                                         "transform_code and m_code.")
    try:
        analysis = EntireAnalysis.model_validate(raw)
    except ValidationError as exc:
        return SubmittedAnalysis(key=key, status=AnalysisStatus.INVALID, message=f"{where}: {_describe(exc)}.")
    t, t_status, t_msg = _check_code(analysis.transform_code, "transform", where)
    m, m_status, m_msg = _check_code(analysis.m_code, "model", where)
    problems = [msg for msg in (t_msg, m_msg) if msg]
    return SubmittedAnalysis(
        key=key, status=AnalysisStatus.CODE_PROBLEM if problems else AnalysisStatus.OK, message=" ".join(problems),
        analysis=analysis, transform=t, model=m, transform_status=t_status, transform_message=t_msg,
        model_status=m_status, model_message=m_msg)


def _failed_generation(key: str, raw: list[Any], where: str) -> SubmittedAnalysis:
    code = raw[0] if raw and isinstance(raw[0], int) and not isinstance(raw[0], bool) else None
    text = str(raw[1]) if len(raw) > 1 else ""
    name = BLADE_RUN_STATUS.get(code, "unknown status") if code is not None else "unknown status"
    return SubmittedAnalysis(
        key=key, status=AnalysisStatus.GENERATION_FAILED, blade_status=code, blade_status_name=name,
        message=f"{where}: the agent's run failed before producing an analysis ({name}"
                + (f": {text.strip()[:300]}" if text.strip() else "") + ").")


def parse_submission(content: bytes | str | Mapping[str, Any], *, label: str = "submission",
                     known_datasets: Iterable[str] | None = None) -> Submission:
    """Read a single-run or multi-run submission, one status per analysis.

    Args:
        content: the file's bytes or text, or an already-decoded JSON object.
        label: how to name the file in messages.
        known_datasets: the release's dataset names; a submission for another dataset marks every analysis
            ``unknown_dataset``. ``None`` skips the check.

    Raises:
        SubmissionError: the file as a whole is unreadable (not JSON, not an object, no dataset_name/analyses).
    """
    if isinstance(content, Mapping):
        data: Any = dict(content)
    else:
        try:
            data = json.loads(content.decode("utf-8-sig") if isinstance(content, bytes) else content)
        except json.JSONDecodeError as exc:
            raise SubmissionError(f"{label} is not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
                                  "expected BLADE's submission format.") from exc
        except UnicodeDecodeError as exc:
            raise SubmissionError(f"{label} is not UTF-8 text (byte {exc.start}); expected BLADE's "
                                  "JSON submission format.") from exc
    if not isinstance(data, dict):
        raise SubmissionError(f"{label} holds a JSON {type(data).__name__}, not an object with dataset_name "
                              "and analyses.")
    name = data.get("dataset_name")
    if not isinstance(name, str) or not name.strip():
        raise SubmissionError(f"{label}: dataset_name is missing or not a string.")
    if "analyses" not in data:
        raise SubmissionError(f"{label}: analyses is missing.")
    raw = data["analyses"]
    analyses: list[SubmittedAnalysis] = []
    if isinstance(raw, list):
        fmt: Literal["single_run", "multi_run"] = "single_run"
        for i, item in enumerate(raw):
            analyses.append(_analysis(str(i), item, f"analysis {i}"))
    elif isinstance(raw, dict):
        fmt = "multi_run"
        for key, item in raw.items():
            where = f"analysis {key!r}"
            if isinstance(item, list):
                analyses.append(_failed_generation(str(key), item, where))
            else:
                analyses.append(_analysis(str(key), item, where))
    else:
        raise SubmissionError(f"{label}: analyses is a {type(raw).__name__}; expected a list (single run) or an "
                              "object keyed by run number (multi run).")
    n = data.get("n")
    if fmt == "multi_run" and not (isinstance(n, int) and not isinstance(n, bool)):
        n = len(analyses)
    if known_datasets is not None:
        known = sorted(set(known_datasets))
        if name not in known:
            message = (f"dataset {name!r} is not in the release (it has: {', '.join(known) or 'no datasets'}); "
                       "the analysis cannot be scored.")
            for a in analyses:
                if a.status != AnalysisStatus.GENERATION_FAILED:
                    a.status = AnalysisStatus.UNKNOWN_DATASET
                    a.message = f"analysis {a.key}: {message}" + (f" {a.message}" if a.message else "")
    return Submission(dataset_name=name, format=fmt, n=n if fmt == "multi_run" else None, label=label,
                      analyses=analyses)


def read_submission(path: Path, *, known_datasets: Iterable[str] | None = None) -> Submission:
    """:func:`parse_submission` on a file; an unreadable file raises :class:`SubmissionError`."""
    try:
        content = Path(path).read_bytes()
    except OSError as exc:
        raise SubmissionError(f"cannot read the submission {path}: {exc.strerror or exc}.") from exc
    return parse_submission(content, label=str(path), known_datasets=known_datasets)

"""Agent submissions in BLADE's two formats (blade-reference 4.1), validated one analysis at a time.

* single run: ``{"dataset_name": str, "analyses": [EntireAnalysis, ...]}`` (``submission_schema.json``);
* multi run: ``{"dataset_name": str, "n": int, "analyses": {"0": EntireAnalysis | [status, message], ...}}``
  as BLADE's generation script writes it; a ``[status, message]`` pair is a generation that failed.

An ``EntireAnalysis`` is ``{cvars: {ivs, dv, controls}, transform_code, m_code}`` plus, optionally,
``workflow``: the analysis told as steps a person could rewrite the code from (see :class:`EntireAnalysis`). A file that is not JSON or
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
import sys
from collections.abc import Iterable, Mapping
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evaluation.errors import EvaluationError
from exports.jsontext import JsonTextError, RepeatedKey, load_json, refuse_repeated_keys

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
    "TooManyAnalyses",
    "extract_function",
    "parse_submission",
    "printable",
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


#: Longest transform_code or m_code read (far above any real analysis; bounds the parser's work in the app).
MAX_CODE_CHARS = 200_000


class SubmissionError(EvaluationError):
    """The submission file as a whole cannot be read (not JSON, no ``dataset_name``, no ``analyses``)."""


class TooManyAnalyses(SubmissionError):
    """The submission holds more analyses than the per-submission cap."""


def printable(text: str, limit: int = 120) -> str:
    """``text`` as it may be echoed in a message, a terminal or a page: control, formatting (bidi overrides)
    and lone-surrogate characters escaped (``\\x1b``, ``\\u202e``, ``\\ud800``), and cut at ``limit``
    characters. Agents' and uploaders' names are hostile text."""
    out = "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text[:limit])
    return out + ("…" if len(text) > limit else "")


def _surrogate_at(text: str) -> int | None:
    """Index of the first lone surrogate (text that cannot be encoded as UTF-8), or None."""
    for i, ch in enumerate(text):
        if "\ud800" <= ch <= "\udfff":
            return i
    return None


def _line_col(text: str, index: int) -> str:
    line = text.count("\n", 0, index) + 1
    return f"line {line}, column {index - (text.rfind(chr(10), 0, index) + 1) + 1}"


def _first_surrogate(value: Any, path: str) -> str | None:
    """JSON path of the first string (or key) under ``value`` holding a lone surrogate (iterative)."""
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        node, where = stack.pop()
        if isinstance(node, str):
            if _surrogate_at(node) is not None:
                return where
        elif isinstance(node, dict):
            for k, v in reversed(list(node.items())):
                if isinstance(k, str) and _surrogate_at(k) is not None:
                    return f"{where} (a key)"
                stack.append((v, f"{where}.{k}" if where else str(k)))
        elif isinstance(node, list):
            stack.extend((v, f"{where}[{i}]") for i, v in reversed(list(enumerate(node))))
    return None



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
    """One analysis: its variables, its transform and model code and, optionally, its workflow.

    ``workflow`` (optional, forkpaths' addition to BLADE's schema): a narrative of the analysis from which a
    person could rewrite the code without seeing it (AIRepr's "reproducibility of thought"). Analyses that carry
    one qualify for the reproducibility facet (:mod:`evaluation.reproducibility`); the BLADE scores ignore it. It
    must be text when given (``null`` means the same as leaving it out)."""

    cvars: AgentVariables
    transform_code: str
    m_code: str
    workflow: str | None = None


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
    yields: bool = False

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
    # set while scoring (evaluation.scoring), never by reading:
    TIMEOUT = "timeout"  # the transform code ran past the per-analysis limit; variables and model still score
    BUDGET_EXHAUSTED = "budget_exhausted"  # the run's time budget ran out before this analysis was scored


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
    yields = _yields(func)
    module = ast.Module(body=statements, type_ignores=[])
    if parameter and parameter != "df":
        module = _Rename(parameter, "df").visit(module)
        if returned is not None:
            returned = ast.unparse(_Rename(parameter, "df").visit(ast.parse(returned, mode="eval")))
    body = ast.unparse(module) if statements else ""
    return ExtractedFunction(kind=kind, function=func.name, parameter=parameter, body=body, returned=returned,
                             preamble=preamble, yields=yields)


def _yields(func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether the function itself (not a function or class nested in it) yields: calling it gives a generator."""
    stack: list[ast.AST] = list(func.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Yield | ast.YieldFrom):
            return True
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue
        stack.extend(ast.iter_child_nodes(node))
    return False


def _check_code(code: str, kind: Literal["transform", "model"], where: str,
                ) -> tuple[ExtractedFunction | None, CodeStatus, str]:
    field = "transform_code" if kind == "transform" else "m_code"
    if not code.strip():
        return None, CodeStatus.EMPTY, f"{where}: {field} is empty."
    bad = _surrogate_at(code)
    if bad is not None:
        return None, CodeStatus.SYNTAX_ERROR, (
            f"{where}: {field} holds a lone surrogate ({ascii(code[bad])[1:-1]}) at {_line_col(code, bad)}; "
            "code must be valid Unicode text, so it was not run.")
    if len(code) > MAX_CODE_CHARS:
        return None, CodeStatus.SYNTAX_ERROR, (
            f"{where}: {field} is {len(code):,} characters long; code longer than {MAX_CODE_CHARS:,} characters "
            "is not run.")
    try:
        extracted = extract_function(code, kind)
    except SyntaxError as exc:
        if "integer string conversion" in str(exc.msg):
            return None, CodeStatus.SYNTAX_ERROR, f"{where}: {field} {_LONG_INTEGER} (line {exc.lineno})."
        return None, CodeStatus.SYNTAX_ERROR, (
            f"{where}: {field} does not parse: {printable(exc.msg, 300)} at line {exc.lineno}"
            + (f", column {exc.offset}" if exc.offset else "") + ".")
    except (RecursionError, MemoryError):
        return None, CodeStatus.SYNTAX_ERROR, (
            f"{where}: {field} nests too deeply or holds too long an expression for Python to compile "
            "(for example thousands of terms joined by operators); split it into shorter statements.")
    except ValueError as exc:  # e.g. ast.unparse of a hexadecimal literal past Python's digit limit
        if "integer string conversion" in str(exc):
            return None, CodeStatus.SYNTAX_ERROR, f"{where}: {field} {_LONG_INTEGER}."
        return None, CodeStatus.SYNTAX_ERROR, f"{where}: {field} cannot be read: {printable(str(exc), 300)}."
    if extracted.yields:
        return None, CodeStatus.SYNTAX_ERROR, (
            f"{where}: the {kind} function in {field} yields values, so calling it gives a generator, not "
            + ("a data frame" if kind == "transform" else "a fitted model") + "; it must return one.")
    if kind == "transform" and extracted.returned is not None:
        returned = _returned_kind(extracted.returned)
        if returned:
            return None, CodeStatus.SYNTAX_ERROR, (
                f"{where}: the transform function in {field} returns {returned}, not a data frame; it must "
                "return the data frame it made.")
    if not extracted.body.strip() and extracted.returned is None:
        return extracted, CodeStatus.EMPTY, f"{where}: the {kind} function in {field} has no statements."
    return extracted, CodeStatus.OK, ""


_LONG_INTEGER = (f"holds an integer of more than {sys.get_int_max_str_digits():,} digits, which Python refuses to "
                 "read, so it was not run")


def _returned_kind(source: str) -> str | None:
    """What a returned expression is, when it is plainly not a frame: None, a number, a string, a generator."""
    try:
        node = ast.parse(source, mode="eval").body
    except (SyntaxError, RecursionError, MemoryError, ValueError):
        return None
    if isinstance(node, ast.GeneratorExp):
        return "a generator"
    if isinstance(node, ast.Constant):
        value = node.value
        if value is None:
            return "None"
        if isinstance(value, bool):
            return f"a boolean ({value})"
        if isinstance(value, int | float | complex):
            return "a number"
        if isinstance(value, str | bytes):
            return "a string"
    return None


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
    # a lone surrogate in the code is that stage's problem (_check_code); anywhere else the analysis is invalid
    bad = _first_surrogate({k: v for k, v in raw.items() if k not in ("transform_code", "m_code")}, "")
    if bad is not None:
        return SubmittedAnalysis(key=key, status=AnalysisStatus.INVALID,
                                 message=f"{where}: {printable(bad)} holds a lone surrogate (half of a UTF-16 pair), "
                                         "which is not valid Unicode text.")
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
                + (f": {printable(text.strip(), 300)}" if text.strip() else "") + ").")


def parse_submission(content: bytes | str | Mapping[str, Any], *, label: str = "submission",
                     known_datasets: Iterable[str] | None = None, max_analyses: int | None = None) -> Submission:
    """Read a single-run or multi-run submission, one status per analysis.

    Args:
        content: the file's bytes or text, or an already-decoded JSON object.
        label: how to name the file in messages.
        known_datasets: the release's dataset names; a submission for another dataset marks every analysis
            ``unknown_dataset``. ``None`` skips the check.
        max_analyses: refuse a file holding more analyses than this (:class:`TooManyAnalyses`); ``None``: no cap.

    Raises:
        SubmissionError: the file as a whole is unreadable (not JSON or nested too deeply, a key given twice, not
            an object, no dataset_name/analyses, more analyses than ``max_analyses``). Names in messages are
            escaped (:func:`printable`).
    """
    shown = printable(label)
    if isinstance(content, Mapping):
        data: Any = dict(content)
    else:
        try:
            data = load_json(content, label=shown, object_pairs_hook=refuse_repeated_keys)
        except JsonTextError as exc:
            raise SubmissionError(f"{shown} {exc.reason}; expected BLADE's submission format.") from exc
        except RepeatedKey as exc:
            raise SubmissionError(f"{shown}: the key '{printable(str(exc.args[0]))}' appears twice in one object; "
                                  "a submission names each field once. Nothing was read.") from exc
    if not isinstance(data, dict):
        raise SubmissionError(f"{shown} holds a JSON {type(data).__name__}, not an object with dataset_name "
                              "and analyses.")
    name = data.get("dataset_name")
    if not isinstance(name, str) or not name.strip():
        raise SubmissionError(f"{shown}: dataset_name is missing or not a string.")
    if _surrogate_at(name) is not None:
        raise SubmissionError(f"{shown}: dataset_name '{printable(name)}' holds a lone surrogate, which is not "
                              "valid Unicode text.")
    if "analyses" not in data:
        raise SubmissionError(f"{shown}: analyses is missing.")
    raw = data["analyses"]
    if isinstance(raw, list | dict) and max_analyses is not None and len(raw) > max_analyses:
        raise TooManyAnalyses(
            f"{shown} holds {len(raw):,} analyses; a submission may hold at most {max_analyses:,}.")
    analyses: list[SubmittedAnalysis] = []
    if isinstance(raw, list):
        fmt: Literal["single_run", "multi_run"] = "single_run"
        for i, item in enumerate(raw):
            analyses.append(_analysis(str(i), item, f"analysis {i}"))
    elif isinstance(raw, dict):
        fmt = "multi_run"
        for key, item in raw.items():
            if _surrogate_at(str(key)) is not None:
                raise SubmissionError(f"{shown}: the analysis key '{printable(str(key))}' holds a lone surrogate, "
                                      "which is not valid Unicode text.")
            where = f"analysis '{printable(str(key))}'"
            if isinstance(item, list):
                analyses.append(_failed_generation(str(key), item, where))
            else:
                analyses.append(_analysis(str(key), item, where))
    else:
        raise SubmissionError(f"{shown}: analyses is a {type(raw).__name__}; expected a list (single run) or an "
                              "object keyed by run number (multi run).")
    n = data.get("n")
    if fmt == "multi_run" and not (isinstance(n, int) and not isinstance(n, bool)):
        n = len(analyses)
    if known_datasets is not None:
        known = sorted(set(known_datasets))
        if name not in known:
            message = (f"dataset '{printable(name)}' is not in the release (it has: "
                       f"{', '.join(known) or 'no datasets'}); "
                       "the analysis cannot be scored.")
            for a in analyses:
                if a.status != AnalysisStatus.GENERATION_FAILED:
                    a.status = AnalysisStatus.UNKNOWN_DATASET
                    a.message = f"analysis {printable(a.key)}: {message}" + (f" {a.message}" if a.message else "")
    return Submission(dataset_name=name, format=fmt, n=n if fmt == "multi_run" else None, label=label,
                      analyses=analyses)


def read_submission(path: Path, *, known_datasets: Iterable[str] | None = None,
                    max_analyses: int | None = None) -> Submission:
    """:func:`parse_submission` on a file; an unreadable file raises :class:`SubmissionError`."""
    try:
        content = Path(path).read_bytes()
    except OSError as exc:
        raise SubmissionError(f"cannot read the submission {printable(str(path))}: {exc.strerror or exc}.") from exc
    return parse_submission(content, label=str(path), known_datasets=known_datasets, max_analyses=max_analyses)

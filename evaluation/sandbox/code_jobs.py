"""The two sanity-check jobs: run a transform's or a model's code after its parents, describe what it did.

Registered as ``transform_check`` and ``model_check`` (see :mod:`evaluation.sandbox.registry`); the parent side
is :mod:`evaluation.sandbox.checks`. The data is read into ``df``; each code runs as statements with ``pd``,
``np`` and ``df`` bound, after BLADE's group-by rewrite. This module imports nothing heavy at import time.
"""

from __future__ import annotations

import ast
import builtins
import difflib
import linecache
import math
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from typing import Any

from evaluation.sandbox.guard import Guard, Refusal, truncate
from evaluation.sandbox.libraries import missing_library, missing_library_sentence
from evaluation.sandbox.registry import sandbox_job
from evaluation.sandbox.runtime import JobContext

__all__ = ["describe_result", "find_model_result", "json_safe", "preview_rows", "rewrite_groupby_targets"]

PREFERRED_RESULT_NAMES = ("model", "results", "result", "res", "fit", "fitted", "m")
LAST_VALUE_NAME = "_forkpaths_last_value"
PREVIEW_ROWS = 5
MAX_CELL_CHARS = 200
MAX_MESSAGE_CHARS = 1000
BALLAST_BYTES = 16 * 1024 * 1024
MEMORY_ERROR_MARKERS = ("MemoryError", "Cannot allocate memory", "bad_alloc", "out of memory")


def rewrite_groupby_targets(tree: ast.Module) -> ast.Module:
    """BLADE's ``process_groupby_code``: ``dfX = <...>.groupby(...)`` becomes ``dfX_grp = ...``.

    Only a direct ``.groupby(...)`` call is rewritten (not ``df.groupby(...).sum()``), and only plain names
    that start with ``df`` and do not already end with ``_grp``. The tree is changed in place and compiled as
    it is, so line numbers stay those of the analyst's code.
    """
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Attribute)
            and node.value.func.attr == "groupby"
        ):
            for target in node.targets:
                if (
                    isinstance(target, ast.Name)
                    and target.id.startswith("df")
                    and not target.id.endswith("_grp")
                ):
                    target.id += "_grp"
    return tree


def json_safe(value: Any) -> Any:
    """A preview cell as JSON: numbers, strings, booleans or null; anything else as short text."""
    import numpy as np
    import pandas as pd

    if value is None:
        return None
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        if math.isnan(value):
            return None
        return value if math.isfinite(value) else str(value)
    if isinstance(value, str):
        return truncate(value, MAX_CELL_CHARS)
    try:
        if pd.isna(value):
            return None
    except (TypeError, ValueError):
        pass
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    return truncate(str(value), MAX_CELL_CHARS)


def preview_rows(obj: Any, rows: int = PREVIEW_ROWS) -> list[dict[str, Any]]:
    """The first rows of a frame (or series) as JSON-safe records; ``[]`` for anything else."""
    import pandas as pd

    if isinstance(obj, pd.Series):
        obj = obj.to_frame()
    if not isinstance(obj, pd.DataFrame):
        return []
    names: list[str] = []
    for column in obj.columns:
        name = str(column)
        while name in names:
            name += "_"
        names.append(name)
    return [
        {name: json_safe(cell) for name, cell in zip(names, record, strict=True)}
        for record in obj.head(rows).itertuples(index=False, name=None)
    ]


def describe_result(
    code: str,
    before: Any,
    after: Any,
    *,
    infer: Callable[[str, Any, Any], Any] | None = None,
    describe: Callable[[Any, Any], Any] | None = None,
) -> dict[str, Any]:
    """Run the verb/mapping inference; a failure there leaves the change info out instead of failing."""
    from evaluation import inference

    infer = infer or inference.infer_transform
    describe = describe or inference.describe_change
    out: dict[str, Any] = {
        "change": None,
        "suggested_verb": None,
        "suggested_mapping": [],
        "inference_error": None,
    }
    try:
        inferred = infer(code, before, after)
        out["change"] = inferred.change.model_dump(mode="json")
        out["suggested_verb"] = inferred.verb
        out["suggested_mapping"] = [pair.model_dump(mode="json") for pair in inferred.mapping]
        return out
    except Exception as exc:  # the analyst's check must not fail because the suggestion did
        out["inference_error"] = truncate(f"infer_transform: {type(exc).__name__}: {exc}", MAX_MESSAGE_CHARS)
    try:
        out["change"] = describe(before, after).model_dump(mode="json")
    except Exception as exc:
        out["inference_error"] += truncate(
            f"; describe_change: {type(exc).__name__}: {exc}", MAX_MESSAGE_CHARS
        )
    return out


MAX_HASHED_COLUMNS = 8


def value_hashes(frame: Any, change: dict[str, Any] | None, wanted: Sequence[str]) -> dict[str, str]:
    """BLADE's value hash (blade-reference 2.4) of the columns a transform created or changed, and of ``wanted``
    ones: what tells two decisions apart by what they compute rather than how their code is written (duplicate
    alternatives, expert coverage). At most :data:`MAX_HASHED_COLUMNS` columns; a column that cannot be hashed
    is left out."""
    import pandas as pd

    from evaluation.groundtruth.hashing import blade_value_hash  # imported before the user's code ran

    if isinstance(frame, pd.Series):
        frame = frame.to_frame()
    if not isinstance(frame, pd.DataFrame):
        return {}
    names = [*wanted, *((change or {}).get("created") or []), *((change or {}).get("changed") or [])]
    present = {str(c): c for c in frame.columns}
    out: dict[str, str] = {}
    for name in dict.fromkeys(str(n) for n in names):
        if len(out) == MAX_HASHED_COLUMNS:
            break
        column = present.get(name)
        if column is None:
            continue
        try:
            series = frame[column]
            if isinstance(series, pd.Series):
                out[name] = blade_value_hash(series)
        except Exception:  # noqa: BLE001 - a hash is a bonus; the check's result stands without it
            continue
    return out


def _assigned_names(tree: ast.Module) -> list[str]:
    """Names the code assigns (anywhere outside function bodies), in source order."""
    found: list[tuple[int, int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            found.append((node.lineno, node.col_offset, node.id))
    found.sort()
    return [name for _, _, name in found]


def _capture_last_expression(tree: ast.Module) -> ast.Module:
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = tree.body[-1]
        assign = ast.Assign(targets=[ast.Name(id=LAST_VALUE_NAME, ctx=ast.Store())], value=last.value)
        tree.body[-1] = ast.copy_location(assign, last)
        ast.fix_missing_locations(tree)
    return tree


def _has_summary(obj: Any) -> bool:
    try:
        return callable(getattr(obj, "summary", None)) and not isinstance(obj, type)
    except Exception:
        return False


def _is_unfitted_model(obj: Any) -> bool:
    model_cls = getattr(sys.modules.get("statsmodels.base.model"), "Model", None)
    return model_cls is not None and isinstance(obj, model_cls)


def _type_name(obj: Any) -> str:
    cls = type(obj)
    return f"{cls.__module__}.{cls.__qualname__}" if cls.__module__ != "builtins" else cls.__qualname__


def find_model_result(namespace: dict[str, Any], assigned: Sequence[str]) -> tuple[str, Any] | None:
    """Pick the fitted result: preferred names with ``.summary()``, the last assignment with one, else the
    last expression's value, else a preferred name's value. Returns ``(how it was found, object)``."""
    for name in PREFERRED_RESULT_NAMES:
        if name in namespace and _has_summary(namespace[name]):
            return name, namespace[name]
    for name in reversed(assigned):
        if name in namespace and _has_summary(namespace[name]):
            return name, namespace[name]
    if namespace.get(LAST_VALUE_NAME) is not None:
        return "the last expression", namespace[LAST_VALUE_NAME]
    for name in PREFERRED_RESULT_NAMES:
        if namespace.get(name) is not None and not _is_unfitted_model(namespace[name]):
            return name, namespace[name]
    return None


def _unfitted_model_in(namespace: dict[str, Any], assigned: Sequence[str]) -> str | None:
    for name in [LAST_VALUE_NAME, *reversed(assigned)]:
        if _is_unfitted_model(namespace.get(name)):
            return type(namespace[name]).__name__
    return None


# --------------------------------------------------------------------------------------------------------------
# Running a job.
# --------------------------------------------------------------------------------------------------------------


class _StepFailure(Exception):
    def __init__(self, info: dict[str, Any]) -> None:
        super().__init__(info.get("error_kind"))
        self.info = info


def _user_traceback(
    exc: BaseException, filenames: set[str], limit: int
) -> tuple[str, int | None, str | None]:
    """Format only the frames of the user's code; return (text, deepest user line, its filename)."""
    frames = [frame for frame in traceback.extract_tb(exc.__traceback__) if frame.filename in filenames]
    lines = ["Traceback (most recent call last):\n", *traceback.StackSummary.from_list(frames).format()]
    lines += traceback.format_exception_only(type(exc), exc)
    text = truncate(
        "".join(lines) if frames else "".join(traceback.format_exception_only(type(exc), exc)), limit
    )
    if not frames:
        return text, None, None
    return text, frames[-1].lineno, frames[-1].filename


def _column_hint(exc: BaseException, frame: Any) -> str | None:
    import pandas as pd

    if not isinstance(exc, KeyError) or len(exc.args) != 1 or not isinstance(frame, pd.DataFrame):
        return None
    key = exc.args[0]
    if not isinstance(key, str) or key in frame.columns:
        return None
    columns = [str(c) for c in frame.columns]
    close = difflib.get_close_matches(key, columns, n=1)
    return f"no such column; did you mean '{close[0]}'?" if close else "no such column"


def _refusal_in(exc: BaseException, guard: Guard) -> Refusal | None:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, Refusal):
            return current
        reason = getattr(current, "reason", None)  # urllib.error.URLError wraps the socket error
        if isinstance(reason, Refusal):
            return reason
        current = current.__cause__ or current.__context__
    return guard.violations[-1] if guard.violations else None


def _memory_error_in(exc: BaseException) -> bool:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, MemoryError):
            return True
        current = current.__cause__ or current.__context__
    return False


def failure_info(
    exc: BaseException,
    step: int,
    filenames: dict[str, int],
    guard: Guard,
    namespace: dict[str, Any],
    limit: int,
) -> dict[str, Any]:
    """How the user's code failed at ``step`` (inside the sandboxed child): its traceback cut to the user's
    frames, the failing line of that step, and what the guard saw; sent to the measurer, which checks it with
    :func:`checked_failure`."""
    text, line, filename = _user_traceback(exc, set(filenames), limit)
    if filename is not None and filenames[filename] != step:
        # The deepest user frame is in an earlier step's function; report the line in the failing step.
        own = [f for f in traceback.extract_tb(exc.__traceback__) if filenames.get(f.filename) == step]
        line = own[-1].lineno if own else None
    info: dict[str, Any] = {
        "ok": False,
        "failed_step": step,
        "line": line,
        "traceback": text,
        "exc_type": type(exc).__name__,
        "exc_message": truncate(str(exc), MAX_MESSAGE_CHARS),
    }
    refusal = _refusal_in(exc, guard)
    if _memory_error_in(exc):
        info["error_kind"] = "memory"
    elif refusal is not None:
        info["error_kind"] = refusal.kind
        info["refusal"] = {"kind": refusal.kind, "action": refusal.action, "target": refusal.target}
    else:
        info["error_kind"] = "exception"
        info["hint"] = _column_hint(exc, namespace.get("df"))
        if (
            isinstance(exc, AttributeError)
            and getattr(exc, "name", None) == "summary"
            and _is_unfitted_model(getattr(exc, "obj", None))
        ):
            info["unfitted_model"] = type(exc.obj).__name__  # type: ignore[attr-defined]
        library = missing_library(exc)
        if library:
            info["hint"] = missing_library_sentence(library)
            info["missing_library"] = library
    return info


def _compile_steps(
    codes: Sequence[str], labels: Sequence[str], capture_last: bool, limit: int
) -> tuple[list[Any], list[ast.Module], dict[str, Any] | None]:
    compiled: list[Any] = []
    trees: list[ast.Module] = []
    for index, (code, label) in enumerate(zip(codes, labels, strict=True)):
        filename = f"<{label}>"
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
        try:
            tree = rewrite_groupby_targets(ast.parse(code, filename=filename))
            if capture_last and index == len(codes) - 1:
                tree = _capture_last_expression(tree)
            compiled.append(compile(tree, filename, "exec"))
            trees.append(tree)
        except (SyntaxError, ValueError) as exc:
            line = exc.lineno if isinstance(exc, SyntaxError) else None
            message = exc.msg if isinstance(exc, SyntaxError) else str(exc)
            return (
                compiled,
                trees,
                {
                    "ok": False,
                    "error_kind": "syntax",
                    "failed_step": index,
                    "line": line,
                    "exc_type": type(exc).__name__,
                    "exc_message": truncate(message, MAX_MESSAGE_CHARS),
                    "traceback": truncate("".join(traceback.format_exception_only(type(exc), exc)), limit),
                },
            )
    return compiled, trees, None


def _load_bundle(ctx: JobContext, spec: dict[str, Any]) -> Any:
    """Unpack the job's files into its working directory and read the one named ``table`` as ``df``."""
    from evaluation.sandbox.bundle import read_table, unpack_files

    if ctx.data is None:
        raise ValueError("this job has no data files")
    names = unpack_files(ctx.data, ctx.work)
    table = str(spec.get("table", ""))
    if table not in names:
        raise ValueError(f"the table '{table}' is not among the data files ({', '.join(names) or 'none'})")
    fmt, encoding = spec.get("format"), spec.get("encoding")
    return read_table(ctx.work / table, fmt=str(fmt) if fmt else None, encoding=str(encoding) if encoding else None)


def _run_steps(ctx: JobContext, kind: str) -> dict[str, Any]:
    """Run the chain of codes on the table; the result message of a transform or model check.

    The codes run in a child process (:mod:`evaluation.sandbox.handoff`) that hands over only data: the frame
    before and after the last transform, or the model's summary text, or how the code failed. This process
    checks it and computes the description, hashes and preview itself; the code cannot write the result.
    """
    from evaluation.sandbox.frames import Malformed, decode_object
    from evaluation.sandbox.handoff import Interference

    payload = ctx.payload
    out_limit = ctx.output_limit
    result: dict[str, Any] = {"ok": True, "code_seconds": 0.0, "data_seconds": 0.0}
    if kind == "transform":
        import evaluation.groundtruth.hashing  # noqa: F401 - loaded while imports are trusted (value_hashes)

    codes: list[str] = payload["codes"]
    labels: list[str] = payload["labels"]
    last = len(codes) - 1
    compiled, trees, syntax_failure = _compile_steps(codes, labels, kind == "model", out_limit)
    if syntax_failure is not None:
        return {**result, **syntax_failure}

    started = time.perf_counter()
    try:
        bundle = payload.get("bundle")
        frame = _load_bundle(ctx, bundle) if isinstance(bundle, dict) else ctx.load_table()
    except MemoryError:
        return {**result, "ok": False, "error_kind": "memory", "phase": "load"}
    except Exception as exc:
        return {**result, "ok": False, "error_kind": "load", "exc_message": f"{type(exc).__name__}: {exc}"}
    finally:
        ctx.close_data()
    result["data_seconds"] = time.perf_counter() - started
    # the child inherits the table as read (and keeps it as read: the code gets a copy)
    messages = ctx.split(lambda sender: _execute_steps(ctx, kind, compiled, trees, labels, frame, sender))

    before: Any = None
    after: Any = None
    seen_after = False
    try:
        for header, blobs in messages:
            what = header.get("type")
            if what == "before" and kind == "transform" and last > 0 and before is None and not seen_after:
                before = decode_object(header.get("value"), blobs, frame)
            elif what == "after" and kind == "transform" and not seen_after:
                after, seen_after = decode_object(header.get("value"), blobs, frame), True
            elif what == "model" and kind == "model" and not seen_after:
                result.update(_checked_model(header, out_limit))
                seen_after = True
            elif what == "failure" and not seen_after:
                result.update(checked_failure(header.get("info"), len(codes)))
                seen_after = True
            elif what == "done":
                seconds, violations = header.get("code_seconds"), header.get("violations")
                if isinstance(seconds, float | int) and not isinstance(seconds, bool) and math.isfinite(seconds):
                    result["code_seconds"] = float(seconds)
                result["violations"] = checked_violations(violations)
            else:
                raise Interference("it sent a message out of order")
        if not seen_after:
            raise Interference("it handed over no result")
        if kind == "transform" and result.get("ok", True) and "failed_step" not in result:
            if before is None and last == 0:
                before = frame  # no code ran before the transform's own: the table as read
            if before is None:
                raise Interference("it handed over no frame from before the transform")
            ballast: bytearray | None = bytearray(BALLAST_BYTES)
            try:
                result.update(_describe_transform(codes[last], before, after, payload))
            except MemoryError:
                ballast = None
                result.update({"ok": False, "error_kind": "memory", "failed_step": None, "phase": "after"})
            del ballast
    except Malformed as exc:
        return _interfered(result, f"it handed over a malformed frame: {exc}")
    except Interference as exc:
        return _interfered(result, exc.what)
    result.setdefault("violations", [])
    return result


def _interfered(result: dict[str, Any], what: str) -> dict[str, Any]:
    from evaluation.sandbox.handoff import INTERFERED

    return {"ok": False, "error_kind": "interfered", "error": INTERFERED.format(what=what),
            "code_seconds": result.get("code_seconds", 0.0), "data_seconds": result.get("data_seconds", 0.0),
            "violations": [], "failed_step": None}


def _describe_transform(code: str, before: Any, after: Any, payload: dict[str, Any]) -> dict[str, Any]:
    import pandas as pd

    out: dict[str, Any] = describe_result(code, before, after)
    out["value_hashes"] = value_hashes(after, out.get("change"), payload.get("hash_columns") or [])
    out["preview"] = preview_rows(after)
    declared = getattr(after, "type", None) if type(after).__name__ == "SimpleNamespace" else None
    out["result_type"] = truncate(declared, 200) if isinstance(declared, str) else _type_name(after)
    if isinstance(after, pd.Series):
        after = after.to_frame()
    if isinstance(after, pd.DataFrame):
        out["result_rows"] = int(after.shape[0])
        out["result_columns"] = [str(c) for c in after.columns]
    return out


_FAILURE_KINDS = ("exception", "memory", "network", "filesystem", "forbidden", "no_result")
_FAILURE_TEXT = ("traceback", "exc_type", "exc_message", "hint", "unfitted_model", "phase", "missing_library")


def checked_failure(info: Any, steps: int) -> dict[str, Any]:
    """How the code failed, as the child reported it: only the fields of a failure, of the right types."""
    from evaluation.sandbox.handoff import Interference

    if not isinstance(info, dict) or info.get("error_kind") not in _FAILURE_KINDS:
        raise Interference("it reported a failure the sandbox does not know")
    out: dict[str, Any] = {"ok": False, "error_kind": info["error_kind"]}
    for key in ("failed_step", "line"):
        value = info.get(key)
        out[key] = value if isinstance(value, int) and not isinstance(value, bool) else None
    if out["failed_step"] is not None and not 0 <= out["failed_step"] < steps:
        raise Interference("it reported a failure in a step that does not exist")
    for key in _FAILURE_TEXT:
        if isinstance(info.get(key), str):
            out[key] = truncate(info[key], 20_000)
    refusal = info.get("refusal")
    if isinstance(refusal, dict):
        out["refusal"] = {k: truncate(str(refusal.get(k, "")), MAX_MESSAGE_CHARS) for k in ("kind", "action", "target")}
    return out


def _checked_model(header: dict[str, Any], limit: int) -> dict[str, Any]:
    from evaluation.sandbox.handoff import Interference

    fields = [header.get(k) for k in ("summary", "result_type", "result_name")]
    if not all(isinstance(f, str) for f in fields):
        raise Interference("it handed over a model result that is not text")
    summary, result_type, result_name = (str(f) for f in fields)
    return {"summary": truncate(summary, limit), "result_type": truncate(result_type, 200),
            "result_name": truncate(result_name, 200)}


def checked_violations(violations: Any) -> list[dict[str, str]]:
    """The sandbox violations the child reported, as plain bounded strings (at most 100)."""
    if not isinstance(violations, list):
        return []
    return [{k: truncate(str(v.get(k, "")), MAX_MESSAGE_CHARS) for k in ("kind", "action", "target")}
            for v in violations[:100] if isinstance(v, dict)]


def _execute_steps(ctx: JobContext, kind: str, compiled: list[Any], trees: list[ast.Module], labels: list[str],
                   frame: Any, sender: Any) -> None:
    """The child: run the chain of codes and hand over what they left (never a verdict of its own)."""
    import numpy as np
    import pandas as pd

    from evaluation.sandbox.frames import encode_object

    out_limit = ctx.output_limit
    last = len(compiled) - 1
    filenames = {f"<{label}>": index for index, label in enumerate(labels)}
    namespace: dict[str, Any] = {
        "__name__": "__main__",
        "__builtins__": builtins,
        "pd": pd,
        "np": np,
        "df": frame.copy(deep=True),  # the table itself stays as read: what unchanged columns are sent as
    }
    guard = ctx.guard
    ballast: bytearray | None = bytearray(BALLAST_BYTES)  # room to report a MemoryError
    code_seconds = 0.0
    try:
        for index, code_obj in enumerate(compiled):
            sender.send({"type": "step", "index": index})
            if kind == "transform" and index == last and index > 0:  # with no parents, before is the table
                header, blobs = encode_object(namespace.get("df"), frame)
                sender.send({"type": "before", "value": header}, blobs)
                del header, blobs
            step_started = time.perf_counter()
            try:
                exec(code_obj, namespace)
            except BaseException as exc:  # noqa: BLE001 - SystemExit and KeyboardInterrupt are results too
                ballast = None
                raise _StepFailure(
                    failure_info(exc, index, filenames, guard, namespace, out_limit)
                ) from None
            finally:
                code_seconds += time.perf_counter() - step_started
        ballast = None
        if kind == "transform":
            header, blobs = encode_object(namespace.get("df"), frame)
            sender.send({"type": "after", "value": header}, blobs)
        else:
            found = _model_result(namespace, _assigned_names(trees[last]), guard, out_limit, last, filenames)
            if found.get("ok") is False:
                sender.send({"type": "failure", "info": found})
            else:
                sender.send({"type": "model", **found})
    except _StepFailure as failure:
        sender.send({"type": "failure", "info": failure.info})
    except MemoryError:
        sender.send({"type": "failure", "info": {"ok": False, "error_kind": "memory", "phase": "after"}})
    finally:
        del ballast
        ctx.output.flush()
    sender.send({"type": "done", "code_seconds": code_seconds, "violations": [
        {"kind": v.kind, "action": v.action, "target": v.target} for v in guard.violations]})


@sandbox_job("transform_check")
def transform_check(ctx: JobContext) -> dict[str, Any]:
    """Payload: ``codes`` (parents first, the transform's own code last) and their ``labels``."""
    return _run_steps(ctx, "transform")


@sandbox_job("model_check")
def model_check(ctx: JobContext) -> dict[str, Any]:
    """Payload: ``codes`` (the transforms, then the model code) and their ``labels``."""
    return _run_steps(ctx, "model")


def _model_result(
    namespace: dict[str, Any],
    assigned: list[str],
    guard: Guard,
    limit: int,
    last: int,
    filenames: dict[str, int],
) -> dict[str, Any]:
    found = find_model_result(namespace, assigned)
    if found is None:
        unfitted = _unfitted_model_in(namespace, assigned)
        return {"ok": False, "error_kind": "no_result", "failed_step": last, "unfitted_model": unfitted}
    how, obj = found
    text: str
    try:
        text = str(obj.summary()) if _has_summary(obj) else repr(obj)
    except BaseException as exc:  # noqa: BLE001 - a failing summary() is the user's result
        info = failure_info(exc, last, filenames, guard, namespace, limit)
        info["phase"] = "summary"
        return info
    return {"summary": truncate(text, limit), "result_type": _type_name(obj), "result_name": how}


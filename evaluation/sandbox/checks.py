"""The two sanity checks, seen from the caller: run a transform's or a model's code, get a check back."""

from __future__ import annotations

import ast
import logging
import os
import pickle
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evaluation.errors import SandboxError
from evaluation.inference import FrameChange
from evaluation.sandbox.bundle import DataFile, bundle_for, table_format
from evaluation.sandbox.code_jobs import rewrite_groupby_targets
from evaluation.sandbox.describe import Steps, crash_report, describe_death, describe_failure
from evaluation.sandbox.results import DEFAULT_LIMITS, ModelCheck, SandboxLimits, TransformCheck
from evaluation.sandbox.runtime import FAST_COPY_FORMAT, fast_copy_path
from evaluation.sandbox.server import JobHandle, Outcome, start_job
from evaluation.specs import ColumnMapping

__all__ = [
    "check_model",
    "check_transform",
    "prepare_fast_copy",
    "rewrite_groupby_code",
    "start_files_model_check",
    "start_model_check",
    "start_transform_check",
]

logger = logging.getLogger("evaluation.sandbox")


def prepare_fast_copy(data_path: Path) -> Path:
    """Write a pickled copy of the CSV next to it so sandbox jobs load it in milliseconds.

    The copy records the CSV's size and modification time; a job uses it only while they still match, and
    otherwise reads the CSV with pandas defaults (as BLADE does), so a stale copy is never used.

    Raises:
        SandboxError: the CSV cannot be read or the copy cannot be written.
    """
    import pandas as pd

    data_path = Path(data_path)
    target = fast_copy_path(data_path)
    try:
        stat = data_path.stat()
        frame = pd.read_csv(data_path)
        payload = {
            "format": FAST_COPY_FORMAT,
            "csv_size": stat.st_size,
            "csv_mtime_ns": stat.st_mtime_ns,
            "frame": frame,
        }
        fd, tmp_name = tempfile.mkstemp(prefix=target.name, dir=target.parent)
        try:
            with os.fdopen(fd, "wb") as handle:
                pickle.dump(payload, handle, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp_name, target)
        except BaseException:
            Path(tmp_name).unlink(missing_ok=True)
            raise
    except (OSError, ValueError, pd.errors.ParserError) as exc:
        raise SandboxError(f"Could not prepare a fast copy of {data_path}: {exc}") from exc
    return target


def rewrite_groupby_code(code: str) -> str:
    """BLADE's group-by rewrite as source text: ``dfX = <...>.groupby(...)`` becomes ``dfX_grp = ...``.

    The sandbox applies the same rewrite to the syntax tree (keeping line numbers); this text form is for
    showing or exporting code as BLADE would run it.
    """
    return ast.unparse(rewrite_groupby_targets(ast.parse(code)))


def _raise_for_sandbox_failure(outcome: Outcome, data_path: Path) -> None:
    result = outcome.result
    if result is not None and result.get("error_kind") in ("load", "internal"):
        message = result.get("exc_message") or "unknown error"
        if result.get("error_kind") == "load":
            raise SandboxError(f"The sandbox could not load the data table {data_path}: {message}")
        raise SandboxError(f"The sandbox failed while running the check: {message}")


def _common_fields(outcome: Outcome, steps: Steps, limits: SandboxLimits) -> dict[str, Any]:
    result = outcome.result
    output = outcome.output
    if result is None:
        kind, sentence = describe_death(outcome, steps, limits)
        return {
            "ok": False,
            "error": sentence,
            "error_kind": kind,
            "failed_step": outcome.last_step,
            "traceback": crash_report(outcome, limits.max_output_chars) if kind == "crashed" else None,
            "stdout": output,
        }
    ok = bool(result.get("ok"))
    fields: dict[str, Any] = {
        "ok": ok,
        "error": None if ok else describe_failure(result, steps, limits),
        "error_kind": None if ok else result.get("error_kind"),
        "failed_step": None if ok else result.get("failed_step"),
        "traceback": None if ok else result.get("traceback"),
        "stdout": output,
        "code_seconds": float(result.get("code_seconds") or 0.0),
        "data_seconds": float(result.get("data_seconds") or 0.0),
    }
    refused = result.get("violations") or []
    if ok and refused:
        # The code caught the refusal and went on; still tell the analyst.
        notes = "".join(f"[sandbox] refused: {v.get('action')} {v.get('target')}\n" for v in refused)
        fields["stdout"] = notes + output
    if result.get("inference_error"):
        logger.warning("transform inference failed in the sandbox: %s", result["inference_error"])
    return fields


def _payload(codes: Sequence[str], steps: Steps) -> dict[str, Any]:
    return {"codes": [str(code) for code in codes], "labels": list(steps.labels)}


def start_transform_check(
    *,
    data_path: Path,
    parent_codes: Sequence[str],
    code: str,
    limits: SandboxLimits = DEFAULT_LIMITS,
    parent_names: Sequence[str] | None = None,
    hash_columns: Sequence[str] = (),
) -> JobHandle[TransformCheck]:
    """Start :func:`check_transform` in the background; the handle can be polled and cancelled."""
    started = time.perf_counter()
    steps = Steps.for_transform(len(parent_codes), parent_names)
    data_path = Path(data_path).resolve()
    if not data_path.is_file():
        raise SandboxError(f"The data table {data_path} does not exist, so the code cannot be checked.")

    def finish(outcome: Outcome) -> TransformCheck:
        _raise_for_sandbox_failure(outcome, data_path)
        fields = _common_fields(outcome, steps, limits)
        result = outcome.result or {}
        if fields["ok"]:
            change = result.get("change")
            fields.update(
                change=FrameChange.model_validate(change) if change else None,
                suggested_verb=result.get("suggested_verb"),
                suggested_mapping=[ColumnMapping.model_validate(m) for m in result.get("suggested_mapping") or []],
                preview=result.get("preview") or [],
                result_rows=result.get("result_rows"),
                result_columns=result.get("result_columns") or [],
                result_type=result.get("result_type"),
                value_hashes=result.get("value_hashes") or {},
            )
        return TransformCheck(**fields, code=code, total_seconds=time.perf_counter() - started)

    payload = _payload([*parent_codes, code], steps) | {"hash_columns": [str(c) for c in hash_columns]}
    return start_job("transform_check", payload, data_path=data_path, limits=limits, finish=finish)


def check_transform(
    *,
    data_path: Path,
    parent_codes: Sequence[str],
    code: str,
    limits: SandboxLimits = DEFAULT_LIMITS,
    parent_names: Sequence[str] | None = None,
    hash_columns: Sequence[str] = (),
) -> TransformCheck:
    """Run a transform's parents and then its code on the data in the sandbox.

    The data is read into ``df``; each code runs as statements with ``pd``, ``np`` and ``df`` bound, after
    BLADE's group-by rewrite (:func:`rewrite_groupby_code`). The frame before this transform's code is compared
    with what the code left in ``df`` to describe the change and suggest a verb and mapping.

    Args:
        data_path: the dataset's CSV (its fast copy is used when current, see :func:`prepare_fast_copy`).
        parent_codes: the codes of the transforms that run before, in order.
        code: the transform's own code.
        limits: time, memory and output limits of the job.
        parent_names: optional spec names of the parents, used in error messages.
        hash_columns: columns whose value hash is wanted even if the code did not create or change them.

    Returns:
        The check; a failure of the user's code is a check with ``ok=False``, never an exception.

    Raises:
        SandboxError: the sandbox itself could not run (no isolation, no Python process, unreadable table).
    """
    return start_transform_check(data_path=data_path, parent_codes=parent_codes, code=code, limits=limits,
                                 parent_names=parent_names, hash_columns=hash_columns).result()


def start_model_check(
    *,
    data_path: Path,
    transform_codes: Sequence[str],
    code: str,
    limits: SandboxLimits = DEFAULT_LIMITS,
    transform_names: Sequence[str] | None = None,
) -> JobHandle[ModelCheck]:
    """Start :func:`check_model` in the background; the handle can be polled and cancelled."""
    started = time.perf_counter()
    steps = Steps.for_model(len(transform_codes), transform_names)
    data_path = Path(data_path).resolve()
    if not data_path.is_file():
        raise SandboxError(f"The data table {data_path} does not exist, so the code cannot be checked.")

    def finish(outcome: Outcome) -> ModelCheck:
        _raise_for_sandbox_failure(outcome, data_path)
        fields = _common_fields(outcome, steps, limits)
        result = outcome.result or {}
        if fields["ok"]:
            fields.update(summary=result.get("summary"), result_type=result.get("result_type"))
        return ModelCheck(**fields, code=code, total_seconds=time.perf_counter() - started)

    return start_job("model_check", _payload([*transform_codes, code], steps), data_path=data_path,
                     limits=limits, finish=finish)


def start_files_model_check(
    *,
    files: Sequence[DataFile],
    code: str,
    limits: SandboxLimits = DEFAULT_LIMITS,
    bundle_dir: Path | None = None,
    label: str = "the model code",
) -> JobHandle[ModelCheck]:
    """:func:`start_model_check` with several files: all of ``files`` are in the code's working directory by
    name, and ``df`` is the first of them, read as the import layer reads it (CSV in its encoding, or UTF-8 then
    cp1252; Stata ``.dta``). The files are packed once into a zip kept in ``bundle_dir``
    (:func:`evaluation.sandbox.bundle.bundle_for`). ``label`` is what the messages call the code (a hypothesis'
    supporting code is no model code).

    Raises:
        SandboxError: no file, a first file that is not a table, or a file that is not there (named).
    """
    started = time.perf_counter()
    if not files:
        raise SandboxError("There is no data file to run the code on.")
    for f in files:
        if not Path(f.path).is_file():
            raise SandboxError(f"The data file '{f.name}' does not exist at {f.path}, so the code cannot be checked.")
    first = files[0]
    fmt = table_format(first.name, first.format)
    if fmt is None:
        raise SandboxError(f"'{first.name}' is not a table (CSV or Stata .dta), so it cannot be read as df.")
    steps = Steps(labels=(label,), own=label)  # ``label`` names the code in its messages and tracebacks
    try:
        bundle = bundle_for([(f.name, Path(f.path)) for f in files], folder=bundle_dir)
    except OSError as exc:
        raise SandboxError(f"The data files could not be packed for the sandbox: {exc}") from exc

    def finish(outcome: Outcome) -> ModelCheck:
        _raise_for_sandbox_failure(outcome, Path(first.name))
        fields = _common_fields(outcome, steps, limits)
        result = outcome.result or {}
        if fields["ok"]:
            fields.update(summary=result.get("summary"), result_type=result.get("result_type"))
        return ModelCheck(**fields, code=code, total_seconds=time.perf_counter() - started)

    payload = {**_payload([code], steps), "bundle": {"table": first.name, "format": fmt, "encoding": first.encoding}}
    return start_job("model_check", payload, data_path=bundle, limits=limits, finish=finish)


def check_model(
    *,
    data_path: Path,
    transform_codes: Sequence[str],
    code: str,
    limits: SandboxLimits = DEFAULT_LIMITS,
    transform_names: Sequence[str] | None = None,
) -> ModelCheck:
    """Run the transforms and then a model's code in the sandbox and return the fitted result's summary.

    The result is the first of ``model``, ``results``, ``result``, ``res``, ``fit``, ``fitted``, ``m`` that has a
    ``.summary()``; else the last assigned variable with one; else the value of the code's last expression.
    An unfitted model (``smf.ols(...)`` without ``.fit()``) is reported as such.

    Returns:
        The check; a failure of the user's code is a check with ``ok=False``, never an exception.

    Raises:
        SandboxError: the sandbox itself could not run.
    """
    return start_model_check(data_path=data_path, transform_codes=transform_codes, code=code, limits=limits,
                             transform_names=transform_names).result()

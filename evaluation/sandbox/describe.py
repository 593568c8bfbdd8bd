"""Sentences for the analyst: what a job's result or its death means, where in the chain it happened."""

from __future__ import annotations

import re
import signal
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evaluation.sandbox.code_jobs import MEMORY_ERROR_MARKERS
from evaluation.sandbox.outcome import Outcome
from evaluation.sandbox.results import SandboxLimits

__all__ = ["Steps", "crash_report", "describe_death", "describe_failure"]



def _seconds(value: float) -> str:
    return f"{value:g} s"


def _signal_name(number: int) -> str:
    try:
        name = signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
    description = signal.strsignal(number)
    return f"{name} ({description.lower()})" if description else name


def _sentence(text: str) -> str:
    text = text.rstrip()
    return text if text.endswith((".", "?", "!")) else text + "."


@dataclass(frozen=True)
class Steps:
    """Human labels of the steps of one check."""

    labels: tuple[str, ...]
    own: str

    @classmethod
    def for_transform(cls, parent_count: int, names: Sequence[str] | None) -> Steps:
        total = parent_count + 1
        labels = tuple(_earlier_label("parent transform", i, total, names) for i in range(parent_count))
        return cls(labels=(*labels, "this transform's code"), own="this transform's code")

    @classmethod
    def for_model(cls, transform_count: int, names: Sequence[str] | None) -> Steps:
        total = transform_count + 1
        labels = tuple(_earlier_label("transform", i, total, names) for i in range(transform_count))
        return cls(labels=(*labels, "the model code"), own="the model code")

    def label(self, step: int | None) -> str | None:
        return self.labels[step] if step is not None and 0 <= step < len(self.labels) else None

    def where(self, step: int | None, line: int | None) -> str | None:
        """``line 2 of this transform's code`` / ``line 2 of parent transform 'x' (step 1 of 3)``."""
        label = self.label(step)
        if label is None:
            return None
        return f"line {line} of {label}" if line else label


def _earlier_label(kind: str, index: int, total: int, names: Sequence[str] | None) -> str:
    if names is not None and index < len(names) and names[index]:
        return f"{kind} '{names[index]}' (step {index + 1} of {total})"
    return f"{kind} {index + 1} (step {index + 1} of {total})"


def _capitalise(text: str) -> str:
    return text[:1].upper() + text[1:]


def describe_failure(result: dict[str, Any], steps: Steps, limits: SandboxLimits) -> str:
    kind = result.get("error_kind")
    step = result.get("failed_step")
    line = result.get("line")
    label = steps.label(step)
    where = steps.where(step, line)
    at = f" ({where})" if where else ""
    if kind == "interfered":
        return str(result.get("error") or "The code interfered with the measurement, so nothing it reported was "
                   "recorded.")
    if kind == "syntax":
        message = result.get("exc_message") or "invalid syntax"
        if step == len(steps.labels) - 1 or label is None:
            return _sentence(f"Line {line} of {label or 'the code'} has a syntax error: {message}")
        return _sentence(f"{_capitalise(label)} has a syntax error at line {line}: {message}")
    if kind == "memory":
        if result.get("phase") == "load":
            return (
                f"Loading the data table needed more than the {limits.memory_mb} MB memory limit; "
                "raise the sandbox's memory limit."
            )
        return f"The code tried to use more than {limits.memory_mb} MB of memory and was stopped{at}."
    if kind in ("network", "filesystem", "forbidden"):
        refusal = result.get("refusal") or {}
        action, target = refusal.get("action", "do something"), refusal.get("target", "?")
        if kind == "network":
            return f"The code tried to open a network connection (to {target}); the sandbox allows no network access{at}."
        if kind == "filesystem":
            return f"The code tried to {action} {target}, outside its working directory{at}."
        return (
            f"The code tried to {action} ({target}); the sandbox does not allow starting programs, signalling other "
            f"processes or loading native libraries{at}."
        )
    if kind == "no_result":
        if result.get("unfitted_model"):
            return _unfitted_sentence(result["unfitted_model"])
        return (
            "The model code ran but left no result: assign the fitted result to a variable, "
            "e.g. results = smf.ols('y ~ x', data=df).fit()."
        )
    # A plain exception (including SystemExit or KeyboardInterrupt raised by the code).
    if result.get("unfitted_model"):
        return _unfitted_sentence(result["unfitted_model"], where)
    exc_type = result.get("exc_type") or "an error"
    message = (result.get("exc_message") or "").strip()
    hint = result.get("hint")
    raised = f"{exc_type}: {message}" if message else exc_type
    if hint:
        raised += f" ({hint})"
    if result.get("phase") == "summary":
        return _sentence(f"Calling .summary() on the model result raised {raised}")
    if label is None:
        return _sentence(f"The code raised {raised}")
    if step == len(steps.labels) - 1:
        return _sentence(
            f"Line {line} of {label} raised {raised}" if line else f"{_capitalise(label)} raised {raised}"
        )
    return _sentence(f"{_capitalise(label)} raised {raised}" + (f" at line {line}" if line else ""))


def _unfitted_sentence(model_name: str, where: str | None = None) -> str:
    at = f" ({where})" if where else ""
    return (
        f"The code made a model ({model_name}) but did not fit it{at}: call .fit() and keep the fitted result, "
        "e.g. results = smf.ols('y ~ x', data=df).fit(); results.summary()."
    )


def describe_death(outcome: Outcome, steps: Steps, limits: SandboxLimits) -> tuple[str, str]:
    """(error_kind, sentence) for a child that left without a result."""
    label = steps.label(outcome.last_step)
    during = f" (it was running {label})" if label else ""
    if outcome.cancelled:
        return "cancelled", f"The check was cancelled after {outcome.seconds:.1f} s{during}."
    if outcome.timed_out and label is None and steps.labels:
        return "timeout", (
            f"Loading the data table took longer than the {_seconds(limits.timeout_s)} limit, so the code "
            "did not run; raise the sandbox's time limit or prepare the table's fast copy."
        )
    if outcome.timed_out:
        return (
            "timeout",
            f"The code ran longer than the {_seconds(limits.timeout_s)} limit and was stopped{during}.",
        )
    code = outcome.returncode
    if code is not None and code < 0 and -code == signal.SIGXCPU:
        return "timeout", (
            f"The code used more CPU time than the {_seconds(limits.timeout_s)} limit allows and was stopped{during}."
        )
    if any(marker in outcome.stderr for marker in MEMORY_ERROR_MARKERS):
        return (
            "memory",
            f"The code tried to use more than {limits.memory_mb} MB of memory and was stopped{during}.",
        )
    if code is not None and -code == signal.SIGKILL:
        # What the kernel's out-of-memory killer sends (and what nothing of the sandbox's own sends a job that
        # has not timed out or been cancelled, both handled above).
        return "memory", (
            f"The code's process was killed (SIGKILL), which is how the system stops a process that runs out of "
            f"memory: the code may have needed more than the {limits.memory_mb} MB memory limit, or killed "
            f"itself{during}."
        )
    if code is not None and code < 0:
        return "crashed", f"The sandbox process crashed with {_signal_name(-code)}{during}."
    return "crashed", (
        f"The sandbox process exited with status {code} before reporting a result{during}; "
        "the code may have called os._exit()."
    )


_MODULE_LIST = re.compile(r"(Extension modules: )?[\w.]*(, [\w.]+)+(, [\w.]*)?( \(total: \d+\))?|\(total: \d+\)")
"""faulthandler's line of the loaded extension modules, whole or only its end (the report is a tail)."""


def crash_report(outcome: Outcome, limit: int) -> str | None:
    """faulthandler's dump of a crashed job, keeping only the frames of the user's code."""
    lines = [
        line
        for line in outcome.stderr.strip().splitlines()
        if (not line.lstrip().startswith("File ") or 'File "<' in line)
        # faulthandler's list of every loaded extension module (179 of them) says nothing about the user's code
        and not _MODULE_LIST.fullmatch(line.strip())
    ]
    text = "\n".join(lines).strip()
    return text[-limit:] if text else None

"""Run code that forkpaths did not write (analysts' checks, agents' analyses) behind an operating-system boundary.

Every job runs in a process forked from a warm template (the *zygote*, which has imported pandas, numpy and
statsmodels once) and, in the default ``bwrap`` mode, behind two layers of Linux namespaces:

* the zygote runs under bubblewrap: its own user, PID, network, IPC, UTS and mount namespaces, a filesystem
  holding only the read-only Python runtime, its site-packages and the engine packages (``evaluation``,
  ``exports``; never the project folder or the data directory), an empty environment, no network, and it
  dies with the application;
* each job then enters new user, mount, PID, IPC and network namespaces of its own: a private ``tmpfs``
  scratch directory (its working directory, bounded), an empty ``/proc``, its mounts locked and every
  capability dropped; a seccomp filter forbids new processes, rlimits bound memory, CPU, file size and
  tasks, and the wall clock is enforced from outside. Killing the job kills its PID namespace, so nothing it
  started outlives it. Two jobs see neither each other's files nor each other's processes.

The job gets its one data file as a read-only descriptor (the table's fast copy alongside), closed before the
untrusted code runs; only JSON comes back, and ``print`` output is captured, bounded.

Every job runs code it did not write in a child process of its own (:mod:`evaluation.sandbox.handoff`): the child hands over only data (frames in a
plain encoding, :mod:`evaluation.sandbox.frames`; never pickle), and the job process, which never runs the code,
checks it and computes every hash, unit and description it reports. Code that forges messages, writes to other
descriptors or leaves early (``os._exit``) fails with "the code interfered with the measurement". An audit hook inside the
job *explains* what the code tried in a sentence ("the code tried to open a network connection (to ...)");
containment does not depend on it (the adversarial tests switch it off).

Where bubblewrap or user namespaces are missing, jobs are refused with a message unless the application chose
``process`` mode (weak isolation: a plain child process with rlimits, seccomp and the audit hook), see
:func:`configure` and :func:`isolation_status`.

Running a job
-------------
``run_job(name, payload, *, data_path, limits) -> dict`` runs a registered job function and returns its JSON
result (plus ``stdout`` and ``seconds``; a sentence in ``error`` when the job died). ``start_job`` returns a
:class:`JobHandle` to poll (``done()``, ``elapsed``) and ``cancel()``. The two sanity checks are such jobs:
:func:`check_transform` / :func:`check_model` (and ``start_*`` for a cancellable handle).

Registering a job (one line)
----------------------------
In a module of the engine, decorate a function of one :class:`~evaluation.sandbox.runtime.JobContext`
argument that returns a JSON-able dict, and declare its module in the kind's ``TaskKind.engine_modules`` (or, for
a job every kind shares, in :data:`evaluation.sandbox.registry.SHARED_ENGINE_MODULES`): the allowlist the zygote
imports before it forks, read from the registry of kinds::

    from evaluation.sandbox.registry import sandbox_job

    @sandbox_job("gt.execute_prefix")
    def execute_prefix(ctx):
        frame = ctx.load_table()          # the data file, read before any untrusted code runs
        def body(sender):                 # the child: no result channel, no data file, audit hook, seccomp
            ...                           # run the code of ctx.payload on a copy of frame
            sender.send({"type": "values"}, [blob])   # hand over data only (plain encoding, never pickle)
        for header, blobs in ctx.split(body):
            ...                           # check what was handed over; compute every verdict here
        return {"ok": True, ...}

Code it did not write runs only in the child of :meth:`JobContext.split` (:meth:`JobContext.untrusted` refuses
to run in the job process), and a new job needs a driver in the attack suite
(``tests/evaluation/test_boundary_suite.py``), which every registered job must pass.

Call :func:`prewarm` at application start so the first job does not pay for the imports.
"""

import importlib
from typing import TYPE_CHECKING, Any

from evaluation.errors import SandboxError
from evaluation.sandbox.bundle import DataFile
from evaluation.sandbox.isolation import (
    IsolationStatus,
    IsolationUnavailable,
    SandboxMode,
    configure,
    current_mode,
    isolation_status,
)
from evaluation.sandbox.registry import sandbox_job
from evaluation.sandbox.runtime import JobContext, fast_copy_path

if TYPE_CHECKING:
    from evaluation.sandbox.checks import (
        check_model,
        check_transform,
        prepare_fast_copy,
        rewrite_groupby_code,
        start_files_model_check,
        start_model_check,
        start_transform_check,
    )
    from evaluation.sandbox.limits import DEFAULT_LIMITS, SandboxLimits
    from evaluation.sandbox.results import ErrorKind, ModelCheck, TransformCheck
    from evaluation.sandbox.server import (
        JobHandle,
        MappedJobHandle,
        Outcome,
        prewarm,
        run_job,
        shutdown,
        start_job,
    )

# The checks and results modules import pandas (through the frame-change model): they load on first use, so
# that configuring the sandbox at start-up (every CLI command does) does not import pandas. The server and the
# limits do not, so that the sandbox's template process can start before the caller imports pandas.
_LAZY = {
    **dict.fromkeys(("check_model", "check_transform", "prepare_fast_copy", "rewrite_groupby_code",
                     "start_files_model_check", "start_model_check", "start_transform_check"),
                  "evaluation.sandbox.checks"),
    **dict.fromkeys(("DEFAULT_LIMITS", "SandboxLimits"), "evaluation.sandbox.limits"),
    **dict.fromkeys(("ErrorKind", "ModelCheck", "TransformCheck"), "evaluation.sandbox.results"),
    **dict.fromkeys(("JobHandle", "MappedJobHandle", "Outcome", "prewarm", "run_job", "shutdown", "start_job"),
                    "evaluation.sandbox.server"),
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value

__all__ = [
    "DEFAULT_LIMITS",
    "DataFile",
    "ErrorKind",
    "IsolationStatus",
    "IsolationUnavailable",
    "JobContext",
    "JobHandle",
    "MappedJobHandle",
    "ModelCheck",
    "Outcome",
    "SandboxError",
    "SandboxLimits",
    "SandboxMode",
    "TransformCheck",
    "check_model",
    "check_transform",
    "configure",
    "current_mode",
    "fast_copy_path",
    "isolation_status",
    "prepare_fast_copy",
    "prewarm",
    "rewrite_groupby_code",
    "run_job",
    "sandbox_job",
    "shutdown",
    "start_files_model_check",
    "start_job",
    "start_model_check",
    "start_transform_check",
]

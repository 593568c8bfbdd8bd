"""Issue 26: one attack suite that every registered sandbox job (every path that runs code forkpaths did not
write) must pass, with the audit hook on and off.

Each engine has a *driver* (:data:`DRIVERS`) that runs a piece of code through the engine's public entry point,
the way forkpaths runs an agent's, analyst's or LLM's code, and reads the verdict it records. The suite is driven
off the registry (:func:`evaluation.sandbox.registry.registered`): a job registered without a driver fails
:func:`test_every_registered_job_has_a_driver`, so a new path cannot be added without passing the suite.

Every attack ends with code whose honest outcome is a failure (``raise``, or values that do not agree), so a
recorded pass is a forged one. A case is *contained* when the engine records its honest truth (the code's own
failure), "the code interfered with the measurement", or a limit's sentence (time, memory, a refused action, a
crash said in a sentence): never a pass, never a forged hash, never an exception out of the engine and never a
traceback of the sandbox itself. ``benchmarks/attack_suite.py`` prints the counts per engine.
"""

from __future__ import annotations

import base64
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from evaluation.sandbox import SandboxLimits
from evaluation.sandbox.registry import registered

pytestmark = pytest.mark.usefixtures("os_sandbox")

FORGED_HASH = "f" * 64
FORGED = {"event": "result", "ok": True, "status": "passed", "agreement": 1.0, "rows": 4, "error": None,
          "units": [{"verb": "derive", "mapping": [[["a"], "forged"]], "groupby_cols": [], "code": "x",
                     "kind": "frame", "columns": ["forged"], "hashes": [FORGED_HASH], "notes": []}],
          "columns": ["a"], "value_hashes": {"forged": FORGED_HASH}, "summary": FORGED_HASH,
          "nodes": [{"parent": -1, "spec": "t", "kind": "frame", "columns": ["forged"], "hashes": [FORGED_HASH]}],
          "paths": [[0]], "stats": {"executions": 1}, "checks": [{"status": "value", "value": True}],
          "run": {"status": "value"}, "files": {}, "values": base64.b64encode(b"\0" * 32).decode()}
LINE = json.dumps(FORGED)
MEMORY_MB = 384
TIMEOUT_S = 20.0
SLEEP_TIMEOUT_S = 2.0

PRELUDE = "FORGED_VALUES = None\n"

FD_SCAN = f"""
import os
for fd in range(0, 1024):
    for text in ('\\n' + {LINE!r} + '\\n', {LINE!r}):
        try:
            os.write(fd, text.encode())
        except OSError:
            pass
"""

# Frames below the code and every object the garbage collector knows: the measurer's locals (a gold, an
# expression, the job's payload), its context (the result channel) if the code shares a process with them.
FRAME_GC_WALK = f"""
import sys, gc
def _forge(o):
    ch = getattr(o, '_channel', None)
    if ch is not None:
        ch.write('\\n' + {LINE!r} + '\\n'); ch.flush()
    if type(o).__name__ == 'JobContext':
        o.send({FORGED!r})
def _gold(k, v):
    global FORGED_VALUES
    if k in ('gold', 'gold_obj') and v is not None:
        FORGED_VALUES = v
    e = v if k == 'expr' and isinstance(v, str) else (v.get('expr') if isinstance(v, dict) else None)
    if isinstance(e, str) and 'df' in globals():
        FORGED_VALUES = eval(e, {{'__builtins__': __builtins__}}, {{'df': df, 'np': __import__('numpy'),
                                                                     'pd': __import__('pandas')}})
f = sys._getframe()
while f is not None:
    for k, v in list(f.f_locals.items()):
        try:
            _gold(k, v)
            _forge(v)
            if hasattr(v, 'payload'):
                _gold('payload', v.payload)
        except Exception:
            pass
    f = f.f_back
for o in gc.get_objects():
    try:
        if isinstance(o, dict):
            _gold('payload', o)
        _forge(o)
    except Exception:
        pass
"""

SELF_SIGKILL = "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n"
SIGSEGV = "import ctypes\nctypes.string_at(0)\n"
EXIT_EARLY = "import os\nos._exit(0)\n"

MONKEYPATCH = f"""
import hashlib, json, sys
import numpy as np
import pandas as pd
class _Fake:
    def __init__(self, *a, **k): pass
    def update(self, *a): pass
    def hexdigest(self): return {FORGED_HASH!r}
    def digest(self): return b'\\xff' * 32
hashlib.sha256 = hashlib.blake2b = hashlib.md5 = _Fake
pd.util.hash_pandas_object = lambda *a, **k: pd.Series(np.zeros(4, dtype='uint64'))
pd.DataFrame.equals = lambda self, other: True
json.loads = lambda *a, **k: {FORGED!r}
for name in ('evaluation.sandbox.runtime', 'evaluation.sandbox.handoff', 'evaluation.groundtruth.hashing'):
    module = sys.modules.get(name)
    if module is not None:
        for attr in ('send', 'split', 'measure_codes'):
            if hasattr(module, attr):
                setattr(module, attr, lambda *a, **k: {FORGED!r})
"""

PLANTED_FILES = f"""
import os
for name in ('result.json', 'result', 'events.jsonl', 'output', 'units.json', 'verdict.json', '/tmp/result.json',
             '/dev/shm/result.json'):
    try:
        with open(name, 'w') as handle:
            handle.write({LINE!r} + '\\n')
    except OSError:
        pass
"""

PROTOCOL_LINES = f"""
import os, sys
print({LINE!r})
sys.stderr.write({LINE!r} + '\\n')
for stream in (sys.__stdout__, sys.__stderr__):
    try:
        stream.write({LINE!r} + '\\n'); stream.flush()
    except Exception:
        pass
for fd in (1, 2):
    try:
        os.write(fd, ('\\n' + {LINE!r} + '\\n').encode())
    except OSError:
        pass
"""

NETWORK = """
import socket
for address in (('127.0.0.1', {port}), ('1.1.1.1', 80)):
    try:
        with socket.create_connection(address, timeout=1) as s:
            s.sendall(b'LEAK')
    except OSError:
        pass
"""

FORK_BOMB = """
import os
for _ in range(10000):
    try:
        os.fork()
    except OSError:
        break
"""

SLEEP = "import time\ntime.sleep(60)\n"

MEMORY = """
hoard = []
while True:
    hoard.append(bytearray(64 * 1024 * 1024))
"""

ATTACKS: dict[str, str] = {
    "fd_scan": FD_SCAN,
    "frame_gc_walk": FRAME_GC_WALK,
    "self_sigkill": SELF_SIGKILL,
    "sigsegv": SIGSEGV,
    "os_exit_early": EXIT_EARLY,
    "monkeypatch": MONKEYPATCH,
    "planted_files": PLANTED_FILES,
    "protocol_lines": PROTOCOL_LINES,
    "network": NETWORK,
    "fork_bomb": FORK_BOMB,
    "sleep": SLEEP,
    "memory": MEMORY,
}

FAILING_TAIL = "\nraise RuntimeError('the honest outcome of this code is a failure')\n"
# the expression facet's answer: values that agree with nothing, unless an attack found the gold
EXPRESSION_TAIL = "\nhypothesis_values = FORGED_VALUES if FORGED_VALUES is not None else df['a'] * 0 + 12345.0\n"
EXPR = "df['a'] * 2 + df['b']"
# internal failures that must never reach a user (a traceback of the sandbox, the SIGKILL handler bug, a
# faulthandler dump of the loaded modules)
LEAKS = ("The sandbox failed", "[Errno 22]", "Extension modules", "pandas._libs", 'File "/', "Traceback (most recent call last):\n  File \"/")


@dataclass
class Verdict:
    """What the engine recorded: whether it counts as a pass, and the record (without the code's own output)."""

    passed: bool
    record: str
    output: str = ""


@dataclass
class World:
    data: Path
    folder: Path
    listener_port: int
    received: list[bytes] = field(default_factory=list)


def _limits(attack: str) -> SandboxLimits:
    return SandboxLimits(timeout_s=SLEEP_TIMEOUT_S if attack == "sleep" else TIMEOUT_S, memory_mb=MEMORY_MB)


# ----------------------------------------------------------------------------------------------- the drivers
# A driver runs ``code`` through the engine as forkpaths does and returns what the engine recorded; ``code`` ends
# with the engine's failing tail in an attack (its honest outcome is a failure) and without it in the control.


def _transform_check(world: World, code: str, attack: str) -> Verdict:
    from evaluation.sandbox import check_transform

    c = check_transform(data_path=world.data, parent_codes=[], code=code, limits=_limits(attack))
    return Verdict(c.ok, c.model_dump_json(exclude={"stdout", "code"}), c.stdout or "")


def _model_check(world: World, code: str, attack: str) -> Verdict:
    from evaluation.sandbox import check_model

    c = check_model(data_path=world.data, transform_codes=[], code=code, limits=_limits(attack))
    return Verdict(c.ok, c.model_dump_json(exclude={"stdout", "code"}), c.stdout or "")


def _gt_limits(attack: str) -> Any:
    from evaluation.groundtruth.runner import GroundTruthLimits

    return GroundTruthLimits(timeout_s=_limits(attack).timeout_s, memory_mb=MEMORY_MB)


def _convert(world: World, code: str, attack: str) -> Verdict:
    from evaluation.groundtruth.convert import convert_transform

    conversion = convert_transform(code, world.data, limits=_gt_limits(attack))
    return Verdict(conversion.error is None, repr(conversion))


def _convert_batch(world: World, code: str, attack: str) -> Verdict:
    """Batched with an honest neighbour, which must still be converted as it would be alone."""
    from evaluation.groundtruth.convert import convert_batch

    items = list(convert_batch([code, "df['c'] = df['a'] * 2\n"], world.data, limits=_gt_limits(attack)))
    attacked, neighbour = items
    assert neighbour.conversion is not None and neighbour.conversion.error is None, neighbour
    assert [u.mapping for u in neighbour.conversion.units] == [((("a",), "c"),)], neighbour
    if attacked.error is not None:
        raise attacked.error
    conversion = attacked.conversion
    return Verdict(conversion is not None and conversion.error is None, repr(conversion))


def _execute_paths(world: World, code: str, attack: str) -> Verdict:
    from evaluation.groundtruth.runner import JobFailed, run_groundtruth_job

    payload = {"codes": {"t": {"raw": code, "processed": code}}, "paths": [["t"]]}
    try:
        result = run_groundtruth_job(payload, data_path=world.data, limits=_gt_limits(attack))
    except JobFailed as exc:  # the ground-truth build's sentence for a job that died
        return Verdict(False, str(exc))
    nodes = result.get("nodes") or []
    return Verdict(bool(nodes) and all(n.get("kind") == "frame" for n in nodes), json.dumps(result))


def _expression(world: World, code: str, attack: str) -> Verdict:
    from evaluation.hms.expression import expression_facet

    check = expression_facet(EXPR, PRELUDE + code, data_path=world.data, limits=_limits(attack))
    return Verdict(check.status == "passed", check.model_dump_json())


def _expression_gold(world: World, code: str, attack: str) -> Verdict:
    """The release's expression is code forkpaths did not write either: the attack is smuggled into it (its
    builtins are a convenience, not the boundary), next to an honest answer that agrees with the expression."""
    from evaluation.hms.expression import expression_facet

    smuggled = f"np.__builtins__['exec']({code!r}, {{'df': df, '__builtins__': np.__builtins__}}) or ({EXPR})"
    check = expression_facet(smuggled, "hypothesis_values = df['a'] * 2 + df['b']", data_path=world.data,
                             limits=_limits(attack))
    return Verdict(check.status == "passed", check.model_dump_json())


def _programmatic_checks(world: World, code: str, attack: str) -> Verdict:
    from evaluation.programmatic.runner import CheckLimits, run_checks
    from exports.programmatic_part import ProgrammaticCheck, ProgrammaticTaskRelease

    task = ProgrammaticTaskRelease(key="t", prompt="clean the table", checks=[ProgrammaticCheck(
        id="c", task_type="data cleaning & preprocessing", function="F", metric="m", code=code,
        ground_truth="answer.json")])
    outcome = run_checks(task, {"clean.csv": b"a,b\n1,2\n"}, gt={"answer.json": b'{"rows": 1}'},
                         limits=CheckLimits(check_timeout_s=_limits(attack).timeout_s, memory_mb=MEMORY_MB))
    (result,) = outcome.checks
    return Verdict(result.score > 0 and result.status == "true",
                   result.model_dump_json(exclude={"stdout"}), result.stdout)


class _RunsWhenLoaded:
    """An agent's output pickle whose loading runs ``code``: what a hostile pickle does to whoever loads it."""

    def __init__(self, code: str) -> None:
        self.code = code

    def __reduce__(self) -> tuple[Any, tuple[str, dict[str, str]]]:
        return exec, (self.code, {"__name__": "__agent_pickle__"})


def _programmatic_pickle(world: World, code: str, attack: str) -> Verdict:
    """An agent's output pickle through the check that reads it: the pickle is loaded by the converter job only
    (its code runs there), and the check sees a clean copy of its plain data, or the file withheld."""
    import pickle

    from evaluation.programmatic.runner import CheckLimits, run_checks
    from exports.programmatic_part import ProgrammaticCheck, ProgrammaticTaskRelease

    task = ProgrammaticTaskRelease(key="t", prompt="save the model", checks=[ProgrammaticCheck(
        id="c", task_type="machine learning", function="F", metric="m",
        code="def check(ground_truth):\n    import pickle\n    return pickle.load(open('model.pkl', 'rb')) is None\n",
        ground_truth="answer.json")])
    outcome = run_checks(task, {"model.pkl": pickle.dumps(_RunsWhenLoaded(code))}, gt={"answer.json": b"{}"},
                         limits=CheckLimits(check_timeout_s=_limits(attack).timeout_s, memory_mb=MEMORY_MB))
    (result,) = outcome.checks
    return Verdict(result.score > 0 and result.status == "true",
                   json.dumps({"check": result.model_dump(mode="json", exclude={"stdout"}), "files": outcome.files}))


def _programmatic_solution(world: World, code: str, attack: str) -> Verdict:
    from evaluation.programmatic.groundtruth import run_solution

    run = run_solution(code, {"data.csv": world.data.read_bytes()}, timeout_s=_limits(attack).timeout_s,
                       memory_mb=MEMORY_MB)
    return Verdict(run.ok, repr({"ok": run.ok, "files": run.files, "error": run.error}))


def _agent_tool(world: World, code: str, attack: str) -> Verdict:
    from evaluation.agents.base import AgentSettings
    from evaluation.agents.strategies import run_python_tool

    settings = AgentSettings(strategy="react", step_timeout_s=_limits(attack).timeout_s, memory_mb=MEMORY_MB)
    text, ok = run_python_tool(code, world.data, settings)
    # the observation shows what the code printed (the forged lines among it): the code's output, not a record
    return Verdict(ok, "" if ok else text.replace(LINE, "<what the code printed>"), text)


def _repro_script(world: World, code: str, attack: str) -> Verdict:
    from evaluation.reproducibility.script_job import run_script

    out = run_script(code, [("data.csv", world.data)], limits=_limits(attack), who="The original code")
    return Verdict(bool(out["ok"]), json.dumps({k: v for k, v in out.items() if k != "stdout"}),
                   str(out.get("stdout", "")))


@dataclass(frozen=True)
class Engine:
    drive: Callable[[World, str, str], Verdict]
    failing_tail: str = FAILING_TAIL
    """Appended to every attack: the code's honest outcome is then a failure, so a pass is a forged one."""
    passing: str = "df['c'] = df['a'] * 2\n"
    """Code that does the engine's job: the control that shows the driver can read a pass."""


DRIVERS: dict[str, Engine] = {
    "transform_check": Engine(_transform_check),
    "model_check": Engine(_model_check, passing="import statsmodels.formula.api as smf\n"
                                                "results = smf.ols('a ~ b', data=df).fit()\n"),
    "groundtruth.convert_transform": Engine(_convert),
    "groundtruth.convert_transform_batch": Engine(_convert_batch),
    "groundtruth.execute_paths": Engine(_execute_paths),
    "hms.expression_check": Engine(_expression, failing_tail=EXPRESSION_TAIL,
                                   passing="hypothesis_values = df['a'] * 2 + df['b']\n"),
    "hms.expression_gold": Engine(_expression_gold, passing="import os\n"),  # the smuggled code runs in full
    "programmatic.run_checks": Engine(
        _programmatic_checks,
        failing_tail="\ndef check(ground_truth):\n    return open('clean.csv').read().startswith('zzz')\n",
        passing="def check(ground_truth):\n    return open('clean.csv').read().startswith('a,b')\n"),
    "programmatic.run_solution": Engine(_programmatic_solution, passing="open('out.csv', 'w').write('x')\n"),
    "programmatic.plain_outputs": Engine(_programmatic_pickle, failing_tail="\nraise RuntimeError('not a model')\n",
                                         passing="x = 1\n"),
    "agent.run_python": Engine(_agent_tool, passing="print(df['a'].sum())\n"),
    "repro.run_script": Engine(_repro_script, passing="import pandas as pd\n"
                                                      "print(pd.read_csv('data.csv')['a'].sum())\n"),
}
"""One driver per registered job: how forkpaths runs code through it, and what it records."""


# ---------------------------------------------------------------------------------------------- the fixtures


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    folder = tmp_path_factory.mktemp("boundary")
    data = folder / "data.csv"
    pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "b": [1.0, 0.0, 1.0, 0.0]}).to_csv(data, index=False)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(0.2)
    result = World(data=data, folder=folder, listener_port=int(listener.getsockname()[1]))
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(1)
                try:
                    result.received.append(conn.recv(100) or b"(connected)")
                except OSError:
                    result.received.append(b"(connected)")

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield result
    finally:
        stop.set()
        thread.join(timeout=5)
        listener.close()


# ------------------------------------------------------------------------------------------------ the tests


def test_every_registered_job_has_a_driver() -> None:
    """A new path that runs untrusted code cannot be added without passing the suite."""
    assert sorted(DRIVERS) == registered(), (
        "register a driver in tests/evaluation/test_boundary_suite.py DRIVERS for every sandbox job")


@pytest.mark.parametrize("engine", registered())
def test_the_driver_sees_a_pass_and_an_honest_failure(world: World, engine: str) -> None:
    """The suite can fail: each driver reads a pass for code that does its job, and no pass for its failure."""
    driver = DRIVERS[engine]
    assert driver.drive(world, driver.passing, "control").passed, engine
    assert not driver.drive(world, driver.failing_tail, "control").passed, engine


def classify(verdict: Verdict) -> str:
    """``interfered``, ``limit`` (time, memory, refused, crash sentences) or ``honest`` (the code's own failure)."""
    text = verdict.record.lower()
    if "interfered with the measurement" in text:
        return "interfered"
    if any(word in text for word in ("memory", "longer than", "limit", "killed", "sigsegv", "crashed", "refused",
                                     "does not allow", "network", "not permitted", "timeout", "timed out")):
        return "limit"
    return "honest"


def run_attack(engine: str, attack: str, world: World) -> tuple[bool, str]:
    """(contained, why): run one attack through one engine and judge what it recorded."""
    code = ATTACKS[attack].format(port=world.listener_port) if attack == "network" else ATTACKS[attack]
    before = len(world.received)
    started = time.monotonic()
    try:
        verdict = DRIVERS[engine].drive(world, code + DRIVERS[engine].failing_tail, attack)
    except Exception as exc:  # noqa: BLE001 - an exception out of the engine is a failure of containment
        return False, f"the engine raised {type(exc).__name__}: {str(exc)[:500]}"
    elapsed = time.monotonic() - started
    if verdict.passed:
        return False, f"forged pass: {verdict.record[:500]}"
    if FORGED_HASH in verdict.record:
        return False, f"a forged hash was recorded: {verdict.record[:500]}"
    text = verdict.record.replace('\\"', '"').replace("\\n", "\n")  # JSON records: as the user reads them
    leaked = [leak for leak in LEAKS if leak in text]
    if leaked:
        return False, f"an internal failure reached the user ({leaked}): {verdict.record[:1500]}"
    if len(world.received) > before:
        return False, f"the code reached a listener on the host: {world.received[before:]}"
    if attack == "sleep" and elapsed > SLEEP_TIMEOUT_S + 30:
        return False, f"the sleep was not stopped by the time limit ({elapsed:.0f} s)"
    return True, classify(verdict)


@pytest.mark.parametrize("attack", sorted(ATTACKS))
@pytest.mark.parametrize("engine", registered())
def test_attack_is_contained(world: World, engine: str, attack: str, audit_hook: bool,
                             record_property: Callable[[str, object], None]) -> None:
    contained, why = run_attack(engine, attack, world)
    record_property("outcome", why if contained else "not contained")  # benchmarks/attack_suite.py counts these
    assert contained, f"{engine} / {attack} (audit hook {'on' if audit_hook else 'off'}): {why}"


def test_untrusted_code_cannot_run_in_the_job_process(tmp_path: Path) -> None:
    """The primitive itself refuses: a job that would run code it did not write in the process that holds the
    result channel (instead of in the child of JobContext.split) fails before any of it runs."""
    import os

    from evaluation.sandbox.runtime import JobContext

    read_fd, write_fd = os.pipe()
    output = os.open(tmp_path / "output", os.O_WRONLY | os.O_CREAT)
    with os.fdopen(write_fd, "w") as channel:
        ctx = JobContext(payload={}, limits={"max_output_chars": 100}, data=None, output_fd=output,
                         channel=channel, work=tmp_path, audit_hook=False)
        with pytest.raises(RuntimeError, match="only in the child of JobContext.split"):
            ctx.untrusted()
        ctx.output.close()
    os.close(read_fd)


def test_sigkill_is_the_memory_sentence_and_sigsegv_a_short_one(world: World) -> None:
    """Issue 26, "Why" 8: SIGKILL (what the out-of-memory killer sends) made the measurer call
    signal.signal(SIGKILL) and the user read "The sandbox failed ...: OSError: [Errno 22]"; a SIGSEGV showed
    faulthandler's list of every loaded module."""
    from evaluation.sandbox import check_transform

    killed = check_transform(data_path=world.data, parent_codes=[], code=SELF_SIGKILL, limits=_limits("sigkill"))
    assert killed.error_kind == "memory" and killed.error is not None
    assert "killed (SIGKILL)" in killed.error and f"{MEMORY_MB} MB memory limit" in killed.error
    crashed = check_transform(data_path=world.data, parent_codes=[], code=SIGSEGV, limits=_limits("sigsegv"))
    assert crashed.error_kind == "crashed" and "SIGSEGV" in (crashed.error or "")
    assert "pandas._libs" not in (crashed.traceback or "") and "Extension modules" not in (crashed.traceback or "")

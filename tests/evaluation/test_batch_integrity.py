"""Scoring converts a file's analyses in one sandbox job (evaluation/sandbox/batch.py): each analysis must get
exactly what a job of its own gives it, whatever the others in the batch do.

A cheating agent's submission holds several analyses. One of them forges the protocol (item events on every
descriptor), plants files in every scratch place, patches modules, signals or stops the measuring process; the
honest analysis after it must be converted exactly as alone. An endless loop, a crash, a memory hog or a
process-killer fails alone, with the sentence it would have alone; the others are converted as alone. Each
forge runs with the audit hook on and off (the OS boundary must hold without it).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from evaluation.groundtruth.convert import Conversion, convert_batch, convert_transform
from evaluation.groundtruth.runner import GroundTruthLimits

pytestmark = pytest.mark.usefixtures("os_sandbox")

FORGED_HASH = "f" * 64
FORGED_RESULT = {"units": [{"verb": "derive", "mapping": [[["score"], "forged"]], "groupby_cols": [], "code": "x",
                            "kind": "frame", "columns": ["forged"], "hashes": [FORGED_HASH], "notes": []}] * 50,
                 "columns": ["score"], "error": None}
HONEST = "df['double'] = df['score'] * 2\n"
# reads what an earlier analysis could have left behind: alone, it sees an empty scratch space
READER = """
import os
seen = os.listdir('.') + os.listdir('/tmp') + (os.listdir('/dev/shm') if os.path.isdir('/dev/shm') else [])
df['seen'] = len(seen)
try:
    df['planted'] = len(open('/tmp/planted').read())
except OSError:
    df['planted'] = -1
"""

ITEM_FORGE = f"""
import os, json
for index in range(0, 8):
    for event in ({{"event": "item", "index": index, "result": {FORGED_RESULT!r}}},
                  {{"event": "item_start", "index": index}}, {{"event": "result", "ok": True, "reported": 8}}):
        line = ('\\n' + json.dumps(event) + '\\n').encode()
        for fd in range(0, 1024):
            try:
                os.write(fd, line)
            except OSError:
                pass
"""
PLANT_FILES = """
import os
for folder in ('.', '/tmp', '/dev/shm'):
    try:
        with open(os.path.join(folder, 'planted'), 'w') as handle:
            handle.write('x' * 1000)
        os.makedirs(os.path.join(folder, 'locked', 'deeper'), exist_ok=True)
        with open(os.path.join(folder, 'locked', 'deeper', 'f'), 'w') as handle:
            handle.write('y')
        os.chmod(os.path.join(folder, 'locked', 'deeper'), 0)
        os.chmod(os.path.join(folder, 'locked'), 0)
    except OSError:
        pass
"""
PATCH_MODULES = f"""
import hashlib, json
import pandas as pd
import numpy as np
from evaluation.groundtruth import convert_job, hashing
hashing.ColumnHasher.hash_frame = lambda self, frame: {{str(c): {FORGED_HASH!r} for c in frame.columns}}
convert_job.measure_codes = lambda *a, **k: {FORGED_RESULT!r}
pd.DataFrame.__setitem__ = lambda self, key, value: None
np.random.seed(0)
"""
KILL_MEASURER = """
import os, signal
try:
    os.kill(os.getppid(), signal.SIGKILL)
except OSError:
    pass
"""
STOP_MEASURER = """
import os, signal
try:
    os.kill(os.getppid(), signal.SIGSTOP)
except OSError:
    pass
"""

CROSS_ATTACKS = {"item_forge": ITEM_FORGE, "plant_files": PLANT_FILES, "patch_modules": PATCH_MODULES,
                 "kill_measurer": KILL_MEASURER, "stop_measurer": STOP_MEASURER}
LIMITS = GroundTruthLimits(timeout_s=8.0, memory_mb=1024)


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("batch") / "data.csv"
    rows = ["team,score,age"] + [f"t{i % 3},{i * 1.5},{20 + i % 7}" for i in range(40)]
    path.write_text("\n".join(rows) + "\n")
    return path


def _record(conversion: Conversion | None) -> dict[str, object]:
    """Everything measured about a conversion (what matching and the result file read)."""
    assert conversion is not None
    return {"units": [(u.verb, [(list(i), o) for i, o in u.mapping], u.code) for u in conversion.units],
            "error": conversion.error, "error_kind": conversion.error_kind, "columns": conversion.final_columns,
            "lineage": conversion.column_lineage(),
            "hashes": sorted(_hashes(conversion.state)) if conversion.state is not None else None}


def _hashes(obj: object) -> list[str]:
    found: list[str] = []

    def walk(value: object) -> None:
        if isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value):
            found.append(value)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list | tuple | set | frozenset):
            for item in value:
                walk(item)
        elif hasattr(value, "__dict__"):
            walk(vars(value))

    walk(obj)
    return found


def _batch(codes: list[str], data: Path, **kw: object) -> list:  # noqa: ANN401
    return list(convert_batch(codes, data, limits=kw.pop("limits", LIMITS), **kw))  # type: ignore[arg-type]


@pytest.mark.parametrize("attack", list(CROSS_ATTACKS))
def test_an_analysis_cannot_reach_the_next_ones_result(data: Path, audit_hook: bool, attack: str) -> None:
    forge = CROSS_ATTACKS[attack]
    codes = [HONEST, forge + HONEST, READER, HONEST]
    alone = [_record(convert_transform(code, data, limits=LIMITS)) for code in (HONEST, READER)]
    assert alone[1]["error"] is None and "seen" in str(alone[1]["lineage"]), alone[1]

    items = _batch(codes, data)

    assert len(items) == 4 and all(i.error is None and i.conversion is not None for i in items), items
    records = [_record(i.conversion) for i in items]
    assert records[0] == alone[0]
    assert records[2] == alone[1], f"the analysis after {attack} saw something of it"
    assert records[3] == alone[0]
    assert FORGED_HASH not in json.dumps(records, default=str) and "forged" not in json.dumps(records)
    # the forging analysis gets what it gets alone too: its own failure, or the honest code's units
    assert records[1] == _record(convert_transform(forge + HONEST, data, limits=LIMITS))


NOISE = "df['noise'] = np.random.rand(len(df))\n"


def test_a_code_repeated_in_a_batch_is_converted_once_and_each_repeat_gets_that_conversion(data: Path) -> None:
    """Agents repeat their code across the analyses of a file: the job measures a code once and answers its
    repeats from that measurement, without running the code again. Random noise shows it: each run of NOISE
    draws other numbers (two jobs of their own differ), but its repeats in one batch carry the first's hashes."""
    alone = [_record(convert_transform(NOISE, data, limits=LIMITS)) for _ in range(2)]
    assert alone[0]["error"] is None and alone[0]["hashes"] != alone[1]["hashes"]

    items = _batch([NOISE, HONEST, NOISE, "raise ValueError('no')\n", NOISE, "raise ValueError('no')\n"], data)

    records = [_record(i.conversion) for i in items]
    assert records[0]["error"] is None and records[0]["hashes"] not in (alone[0]["hashes"], alone[1]["hashes"])
    assert records[2] == records[0] and records[4] == records[0]
    assert records[1] == _record(convert_transform(HONEST, data, limits=LIMITS))
    assert records[3] == records[5] == _record(convert_transform("raise ValueError('no')\n", data, limits=LIMITS))
    assert "ValueError" in str(records[3]["error"])


def test_a_loop_a_crash_and_a_memory_hog_fail_alone_with_their_own_sentences(data: Path) -> None:
    limits = GroundTruthLimits(timeout_s=3.0, memory_mb=512)
    loop = "while True:\n    pass\n"
    crash = "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n"
    hog = "block = bytearray(4 * 1024 ** 3)\n"
    exits = "import os\nos._exit(3)\n"
    codes = [HONEST, loop, HONEST, crash, HONEST, hog, READER, exits, HONEST]
    started = time.monotonic()
    items = _batch(codes, data, limits=limits)
    took = time.monotonic() - started

    assert len(items) == len(codes)
    records = [_record(i.conversion) for i in items]
    for index, code in enumerate(codes):
        if code in (HONEST, READER):
            assert records[index] == _record(convert_transform(code, data, limits=limits)), index
    assert records[1]["error_kind"] == "timeout" and "3 s limit" in str(records[1]["error"])
    assert records[3]["error_kind"] == "crashed" and "SIGSEGV" in str(records[3]["error"])
    assert records[5]["error_kind"] == "memory" or "memory" in str(records[5]["error"]).lower()
    assert "interfered with the measurement" in str(records[7]["error"])
    for index in (1, 3, 5, 7):  # each fails with the very sentence it has alone
        assert records[index] == _record(convert_transform(codes[index], data, limits=limits)), index
    assert took < 3.0 + 20.0, took  # the loop cost its own limit, not the batch's


def test_the_run_deadline_stops_the_item_that_runs_and_leaves_the_rest_unstarted(data: Path) -> None:
    loop = "while True:\n    pass\n"
    items = _batch([HONEST, loop, HONEST], data, limits=GroundTruthLimits(timeout_s=60.0),
                   run_deadline=time.monotonic() + 6.0)

    assert items[0].conversion is not None and items[0].conversion.error is None and not items[0].by_deadline
    assert items[1].by_deadline and items[1].conversion is not None
    assert items[1].conversion.error_kind == "timeout" and items[1].limit_s < 60.0
    assert items[2].by_deadline and items[2].conversion is None and items[2].error is None


def test_closing_the_batch_early_stops_its_job(data: Path) -> None:
    from evaluation.sandbox import server

    batch = convert_batch([HONEST, "while True:\n    pass\n", HONEST], data, limits=LIMITS)
    first = next(batch)
    assert first.conversion is not None and first.conversion.error is None
    started = time.monotonic()
    batch.close()
    assert time.monotonic() - started < 5.0
    deadline = time.monotonic() + 10
    while server._SANDBOX._jobs and time.monotonic() < deadline:  # noqa: SLF001 - the running jobs
        time.sleep(0.05)
    assert not server._SANDBOX._jobs  # noqa: SLF001


def test_a_cheating_submission_scores_each_analysis_as_alone(shared_blade: Path) -> None:
    """Through score_submission on hurricane's real ground truth: a file whose analyses forge, plant files, kill
    the measurer and loop scores every analysis exactly as one sandbox job per analysis scores it."""
    from evaluation.groundtruth import build_dataset, sources_from_blade_folders
    from evaluation.judges.offline import OfflineJudge
    from evaluation.scoring import RunBudget, score_submission
    from evaluation.submissions import parse_submission
    from evaluation.transform_credit import TransformCredit

    source = sources_from_blade_folders([shared_blade / "datasets" / "hurricane"])[0]
    credit = TransformCredit(units=[], description={}, state=build_dataset(source).state,
                             data_path=source.data_path, limits=GroundTruthLimits(timeout_s=4.0))
    example = json.loads((shared_blade / "examples" / "multirun_analyses.json").read_text())
    base = list(example["analyses"].values())

    def with_prefix(analysis: dict, prefix: str) -> dict:
        head, body = analysis["transform_code"].split("\n", 1)
        indented = "".join(f"    {line}\n" for line in prefix.strip("\n").splitlines())
        return {**analysis, "transform_code": f"{head}\n{indented}{body}"}

    attackers = [with_prefix(base[0], ITEM_FORGE), with_prefix(base[1], PLANT_FILES),
                 with_prefix(base[2], KILL_MEASURER), with_prefix(base[3], "while True:\n    pass")]
    analyses = [attackers[0], base[4], attackers[1], base[5], attackers[2], base[6], attackers[3], base[7]]
    data = json.dumps({**example, "n": len(analyses), "analyses": {str(i): a for i, a in enumerate(analyses)}})
    submission = parse_submission(data.encode(), label="cheater.json")

    def score(batched: bool):  # noqa: ANN202
        return score_submission(source.dataset, submission, judge=OfflineJudge(), transform_matcher=credit.match,
                                transform_batch=credit.match_batch if batched else None,
                                budget=RunBudget(analysis_s=4.0))

    batched, alone = score(True), score(False)
    assert [a.status for a in batched.analyses][-2] == "timeout"
    assert batched.model_dump(mode="json") == alone.model_dump(mode="json")
    honest = {str(i) for i in (1, 3, 5, 7)}
    assert all(a.record.transform.status == "ok" and a.record.transform.agent_units
               for a in batched.analyses if a.key in honest)
    assert FORGED_HASH not in batched.model_dump_json()


def test_a_batch_runs_in_one_job_per_two_hundred_items(data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What makes it fast: ten analyses start one sandbox job, not ten."""
    from evaluation.sandbox import server

    started: list[str] = []
    real = server._Sandbox._spawn  # noqa: SLF001

    def counting(self, zygote, request, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        started.append(request.spec["name"])
        return real(self, zygote, request, *args, **kwargs)

    monkeypatch.setattr(server._Sandbox, "_spawn", counting)  # noqa: SLF001
    items = _batch([HONEST] * 10, data)
    assert [i.conversion is not None and i.conversion.error is None for i in items] == [True] * 10
    assert started == ["groundtruth.convert_transform_batch"]


def test_a_sandbox_that_fails_fails_each_item_and_never_hangs(data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The sandbox itself failing (its template process cannot start) is each item's failure, as it is for a
    job of its own: the batch neither hangs nor stops the others from being reported."""
    from evaluation.errors import SandboxError
    from evaluation.sandbox import server

    def broken(self, request):  # noqa: ANN001, ANN202
        raise SandboxError("The sandbox could not start a Python process: test")

    monkeypatch.setattr(server._Sandbox, "run", broken)  # noqa: SLF001
    started = time.monotonic()
    items = _batch([HONEST, HONEST, HONEST], data)
    assert time.monotonic() - started < 10
    assert [type(i.error).__name__ for i in items] == ["SandboxError"] * 3
    assert all(i.conversion is None for i in items)

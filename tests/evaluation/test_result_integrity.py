"""Issue 15 point 1: code from a submission or a sanity check cannot write what the measuring side records.

Each forge runs with the audit hook ON and OFF, through the scoring path (the converter that turns an agent's
transform code into units and hashes, :func:`evaluation.groundtruth.convert.convert_transform`, what
:class:`evaluation.transform_credit.TransformCredit` scores) and through the analyst's stage-1 check
(:func:`evaluation.sandbox.check_transform` / :func:`check_model`). Either the record holds exactly what the
frames show (the same as the honest code's), or the analysis fails saying that the code interfered with the
measurement. Before the process boundary, the fd-scan forge was recorded as 5,000 units the code never ran.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluation.groundtruth.convert import convert_transform
from evaluation.sandbox import check_model, check_transform

pytestmark = pytest.mark.usefixtures("os_sandbox")

FORGED_HASH = "f" * 64
FORGED_UNIT = {"verb": "derive", "mapping": [[["score"], "forged"]], "groupby_cols": [], "code": "x",
               "kind": "frame", "columns": ["forged"], "hashes": [FORGED_HASH], "notes": []}
FORGED_RESULT = {"event": "result", "ok": True, "units": [FORGED_UNIT] * 500, "columns": ["score"],
                 "error": None, "results": [], "summary": "FORGED SUMMARY", "value_hashes": {"forged": FORGED_HASH},
                 "result_type": "FORGED", "result_rows": 999999}
LINE = json.dumps(FORGED_RESULT)
HONEST = "df['double'] = df['score'] * 2\n"
INTERFERED = "interfered with the measurement"

FD_SCAN = f"""
import os
line = {LINE!r}
for fd in range(0, 1024):
    for text in ('\\n' + line + '\\n', line):
        try:
            os.write(fd, text.encode())
        except OSError:
            pass
"""

CONVERTER_PATCHED = f"""
import os, json
from evaluation.groundtruth import convert_job, hashing
from evaluation.sandbox import runtime, handoff
convert_job.measure_codes = lambda *a, **k: {FORGED_RESULT!r}
hashing.ColumnHasher.hash_frame = lambda self, frame: {{str(c): {FORGED_HASH!r} for c in frame.columns}}
runtime.send = lambda channel, message: None
"""

CONVERTER_INSIDE = CONVERTER_PATCHED + f"""
for fd in range(3, 256):
    try:
        os.write(fd, (json.dumps({FORGED_RESULT!r}) + '\\n').encode())
    except OSError:
        pass
"""

SCRATCH_FILES = f"""
import os
for name in ('result.json', 'result', 'events.jsonl', 'output', 'units.json', '/tmp/result.json'):
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
sys.__stdout__ and sys.__stdout__.write({LINE!r} + '\\n')
for fd in (1, 2):
    try:
        os.write(fd, ('\\n' + {LINE!r} + '\\n').encode())
    except OSError:
        pass
"""

EXIT_EARLY = """
import os
os._exit(0)
"""

MONKEYPATCH = f"""
import hashlib
import pandas as pd
import numpy as np

class _Fake:
    def __init__(self, *a, **k):
        pass
    def update(self, *a):
        pass
    def hexdigest(self):
        return {FORGED_HASH!r}
    def digest(self):
        return b'\\xff' * 32

hashlib.sha256 = _Fake
hashlib.blake2b = _Fake
pd.util.hash_pandas_object = lambda *a, **k: pd.Series(np.zeros(3, dtype='uint64'))
pd.DataFrame.equals = lambda self, other: True
pd.Series.astype = lambda self, *a, **k: self
pd.DataFrame.to_json = lambda self, *a, **k: {LINE!r}
"""

# attack → does the attacked run end in a forged success unless stopped (True: it must fail as interference)
ATTACKS = {
    "fd_scan": (FD_SCAN, True),
    "converter_inside": (CONVERTER_INSIDE, True),
    "converter_patched": (CONVERTER_PATCHED, False),
    "scratch_files": (SCRATCH_FILES, False),
    "protocol_lines": (PROTOCOL_LINES, False),
    "os_exit_0": (EXIT_EARLY, True),
    "monkeypatch_pandas_hashlib": (MONKEYPATCH, False),
}


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("integrity") / "data.csv"
    rows = ["team,score,age"] + [f"t{i % 3},{i * 1.5},{20 + i % 7}" for i in range(40)]
    path.write_text("\n".join(rows) + "\n")
    return path


def _units(conversion):  # noqa: ANN001, ANN202
    return [(u.verb, [(list(i), o) for i, o in u.mapping], u.code) for u in conversion.units]


def _forged_anywhere(obj: object) -> bool:
    text = json.dumps(obj, default=str)
    return FORGED_HASH in text or "FORGED" in text or '"forged"' in text


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_scoring_records_only_what_the_frames_show(data: Path, audit_hook: bool, attack: str) -> None:
    forge, must_fail = ATTACKS[attack]
    honest = convert_transform(HONEST, data)
    assert honest.error is None and len(honest.units) == 1

    attacked = convert_transform(forge + HONEST, data)

    # the code itself is kept as the unit's code (shown, never read); everything measured must be honest
    recorded = {"units": [{k: v for k, v in u.__dict__.items() if k != "code"} for u in attacked.units],
                "error": attacked.error, "columns": attacked.final_columns,
                "hashes": _state_hashes(attacked) if attacked.state is not None else []}
    assert not _forged_anywhere(recorded), recorded
    if must_fail:
        assert attacked.units == [] and attacked.state is None
        assert attacked.error is not None and INTERFERED in attacked.error
    else:
        # the forge did nothing to the record: the derive of the honest code, with the honest frames' hashes
        assert attacked.error is None, attacked.error
        assert [(v, m) for v, m, _ in _units(attacked)] == [(v, m) for v, m, _ in _units(honest)]
        honest_hashes = sorted(_state_hashes(honest))
        assert honest_hashes and sorted(_state_hashes(attacked)) == honest_hashes


def _state_hashes(conversion) -> list[str]:  # noqa: ANN001
    """Every value hash the derivation state of a conversion holds (what matching compares)."""
    found: list[str] = []

    def walk(obj: object) -> None:
        if isinstance(obj, str) and len(obj) == 64 and all(c in "0123456789abcdef" for c in obj):
            found.append(obj)
        elif isinstance(obj, dict):
            for value in obj.values():
                walk(value)
        elif isinstance(obj, list | tuple | set | frozenset):
            for value in obj:
                walk(value)
        elif hasattr(obj, "__dict__"):
            walk(vars(obj))
        elif hasattr(obj, "__slots__"):
            for name in obj.__slots__:  # type: ignore[union-attr]
                walk(getattr(obj, name, None))

    walk(conversion.state)
    return found


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_the_sanity_check_records_only_what_the_frames_show(data: Path, audit_hook: bool, attack: str) -> None:
    forge, must_fail = ATTACKS[attack]
    honest = check_transform(data_path=data, parent_codes=[], code=HONEST, hash_columns=["double"])
    assert honest.ok and honest.value_hashes

    attacked = check_transform(data_path=data, parent_codes=[], code=forge + HONEST, hash_columns=["double"])

    recorded = attacked.model_dump(mode="json")
    for shown in ("stdout", "code", "traceback"):  # the code and what it printed are shown as such, never read
        recorded.pop(shown, None)
    assert not _forged_anywhere(recorded), recorded
    if must_fail:
        assert not attacked.ok
        assert attacked.error_kind == "interfered"
        assert attacked.error is not None and INTERFERED in attacked.error
        assert attacked.value_hashes in ({}, None) and not attacked.preview
    else:
        assert attacked.ok, attacked.error
        assert attacked.value_hashes == honest.value_hashes
        assert attacked.result_rows == honest.result_rows == 40
        assert attacked.change == honest.change


@pytest.mark.parametrize("attack", ["fd_scan", "os_exit_0", "converter_inside"])
def test_a_model_check_cannot_forge_its_summary(data: Path, audit_hook: bool, attack: str) -> None:
    forge, must_fail = ATTACKS[attack]
    model = "import statsmodels.formula.api as smf\n" + forge + "results = smf.ols('score ~ age', data=df).fit()\n"
    check = check_model(data_path=data, transform_codes=[], code=model)

    assert "FORGED" not in (check.summary or "")
    if must_fail:
        assert not check.ok and check.error_kind == "interfered"
        assert INTERFERED in (check.error or "")
    else:
        assert check.ok and "OLS Regression Results" in (check.summary or "")


def test_a_broken_hand_over_is_refused_not_believed(data: Path) -> None:
    """A well-framed message whose frame lies about its own size is malformed: the analysis fails."""
    forge = """
import os, json, struct
from evaluation.sandbox import handoff
_orig = handoff.Sender.send
def _send(self, header, blobs=None):
    if header.get('type') == 'state':
        header = {'type': 'state', 'error': None, 'names': {},
                  'df': {'kind': 'frame', 'frame': {'rows': 10**6, 'series': False, 'index': {'enc': 'range',
                         'start': 0, 'stop': 10**6, 'step': 1}, 'columns': [{'name': 'forged', 'enc': 'np',
                         'dtype': '<f8', 'blob': 0}]}}}
        blobs = [b'x' * 8]
    return _orig(self, header, blobs)
handoff.Sender.send = _send
"""
    attacked = convert_transform(forge + HONEST, data)
    assert attacked.units == [] and INTERFERED in (attacked.error or "")


def test_the_hand_over_encoding_keeps_every_value_hash_and_refers_only_to_identical_columns() -> None:
    """Frames travel as data (no pickle) with BLADE's value hashes intact; a column is sent as a reference to the
    table only when it holds exactly the table's values (an in-place edit, a -0.0 or a 1 → 1.0 is sent in full)."""
    import numpy as np
    import pandas as pd

    from evaluation.groundtruth.hashing import ColumnHasher
    from evaluation.sandbox.frames import decode_object, encode_object

    table = pd.DataFrame({
        "x": [0.0, 1.5, np.nan, 2.0], "n": [1, 2, 3, 4], "s": ["a", None, "c", "d"],
        "o": ["1", "2", "3", "4"], "when": pd.to_datetime(["2020-01-01", "2021-02-03", None, "2022-03-04"]),
    })
    frame = table.copy(deep=True)
    frame.loc[0, "x"] = -0.0            # equal to 0.0, but BLADE's string differs
    frame.loc[3, "s"] = "D"             # an in-place edit of text
    frame["o"] = frame["o"].astype(object)
    frame.loc[1, "o"] = 2               # 2 == "2" is False, but a number among text must travel as it is
    frame["cat"] = pd.Categorical(["u", "v", "u", None])
    frame["mixed"] = [1, "a", None, pd.Timestamp("2020-01-01")]
    frame["nullable"] = pd.array([1, None, 3, 4], dtype="Int64")

    header, blobs = encode_object(frame, table)
    encodings = {c["name"]: c["enc"] for c in header["frame"]["columns"]}
    assert encodings["n"] == "ref" and encodings["when"] == "ref"
    assert encodings["x"] != "ref" and encodings["s"] != "ref" and encodings["o"] != "ref"
    back = decode_object(header, blobs, table)
    assert list(back.columns) == list(frame.columns)
    assert [str(t) for t in back.dtypes] == [str(t) for t in frame.dtypes]
    assert ColumnHasher().hash_frame(back) == ColumnHasher().hash_frame(frame)
    assert back.index.equals(frame.index)

    filtered = frame[frame["n"] > 1]  # other rows: everything travels in full, index included
    header, blobs = encode_object(filtered, table)
    assert all(c["enc"] != "ref" for c in header["frame"]["columns"])
    back = decode_object(header, blobs, table)
    assert ColumnHasher().hash_frame(back) == ColumnHasher().hash_frame(filtered)
    assert list(back.index) == [1, 2, 3]


@pytest.mark.parametrize("attack", ["fd_scan", "converter_inside", "os_exit_0", "monkeypatch_pandas_hashlib",
                                    "converter_patched"])
def test_scoring_credit_is_what_the_frames_show(shared_blade: Path, audit_hook: bool, attack: str) -> None:
    """Through the scorer's matcher (TransformCredit.match, on hurricane's real ground truth): a forge either
    fails the analysis's transform with the interference sentence or earns exactly the honest code's credit."""
    from evaluation.groundtruth import build_dataset, sources_from_blade_folders
    from evaluation.submissions import AnalysisStatus, ExtractedFunction, SubmittedAnalysis
    from evaluation.transform_credit import TransformCredit

    source = sources_from_blade_folders([shared_blade / "datasets" / "hurricane"])[0]
    credit = TransformCredit(units=[], description={}, state=build_dataset(source).state,
                             data_path=source.data_path)
    body = "df = df.dropna()\ndf['log_deaths'] = np.log(df['alldeaths'] + 1)\n"

    def match(code: str):  # noqa: ANN202
        function = ExtractedFunction(kind="transform", body=code)
        return credit.match(SubmittedAnalysis(key="0", status=AnalysisStatus.OK, transform=function))

    honest = match(body)
    assert honest.status == "ok" and honest.matched_value_units
    forge, must_fail = ATTACKS[attack]
    attacked = match(forge + body)
    if must_fail:
        assert attacked.status == "failed" and INTERFERED in attacked.message
        assert not attacked.matched_value_units and not attacked.matched_graph_units
    else:
        assert attacked.status == "ok", attacked.message
        assert attacked.matched_value_units == honest.matched_value_units
        assert attacked.matched_graph_units == honest.matched_graph_units

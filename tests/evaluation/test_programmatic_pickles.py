"""Issue 26, "Why" 2: an agent's output pickle cannot forge a check's verdict.

The attack that worked before: a pickle names ``numpy.testing._private.utils.runstring`` (which is ``exec``), its
code walks the frames of the check's process to the verdict pipe, writes ``{"status": "value", "value": true}``
and leaves; "Passed: the check returned True" followed for all-zero predictions, through the pickle, pandas and
joblib loaders. Now every pickle is loaded in a sandbox job that holds nothing else, and the check reads a clean
copy of its plain data, or nothing, with a sentence. Each payload here must end in an honest fail or a clear
sentence, never "Passed"; an honest pickle of a DataFrame must still pass.
"""

from __future__ import annotations

import bz2
import gzip
import io
import pickle

import joblib
import numpy as np
import pandas as pd
import pytest

from evaluation.programmatic import plain
from evaluation.programmatic.runner import CheckLimits, TaskOutcome, run_checks
from exports.programmatic_part import ProgrammaticCheck, ProgrammaticTaskRelease

LIMITS = CheckLimits(check_timeout_s=10.0)
TRUTH = pd.DataFrame({"y": [1, 0, 1, 1, 0, 1]})
GT = {"truth.csv": TRUTH.to_csv(index=False).encode()}
ZEROS = pd.DataFrame({"y": [0, 0, 0, 0, 0, 0]})

# The payload of the issue: walk the frames to every descriptor a local names, forge the verdict on each (and on
# every other descriptor), leave before anyone can answer.
FORGE = """
import json, os, sys
message = json.dumps({"status": "value", "value": True, "type": "builtins.bool"}).encode()
frame = sys._getframe()
fds = set(range(3, 64))
while frame is not None:
    for name, value in list(frame.f_locals.items()):
        if type(value) is int and ("fd" in name or "pipe" in name):
            fds.add(value)
    frame = frame.f_back
for fd in sorted(fds):
    try:
        os.write(fd, message)
    except OSError:
        pass
os._exit(0)
"""


class _RunString:
    """A pickle that calls numpy.testing._private.utils.runstring (exec) with the payload."""

    def __init__(self, code: str) -> None:
        self.code = code

    def __reduce__(self):
        from numpy.testing._private.utils import runstring

        return (runstring, (self.code, {}))


class _Exec:
    def __reduce__(self):
        return (exec, (FORGE,))


LOADERS = {
    "pickle": "import pickle\n    pred = pickle.load(open('predictions.pkl', 'rb'))",
    "pandas": "pred = pd.read_pickle('predictions.pkl')",
    "joblib": "import joblib\n    pred = joblib.load('predictions.pkl')",
}


def _task(loader: str, name: str = "predictions.pkl") -> ProgrammaticTaskRelease:
    code = ("import pandas as pd\n"
            "def accuracy(ground_truth):\n"
            f"    {LOADERS[loader].replace('predictions.pkl', name)}\n"
            "    truth = pd.read_csv(ground_truth)\n"
            "    return bool((pred['y'].to_numpy() == truth['y'].to_numpy()).all())\n")
    check = ProgrammaticCheck(id="acc", task_type="predictive modeling", function="Model Accuracy",
                              metric="Accuracy", code=code, ground_truth="truth.csv")
    return ProgrammaticTaskRelease(key="t", prompt="predict y into predictions.pkl", checks=[check])


def _dump(value: object, how: str) -> bytes:
    if how == "pickle":
        return pickle.dumps(value)
    if how == "joblib":
        buffer = io.BytesIO()
        joblib.dump(value, buffer)
        return buffer.getvalue()
    if how == "joblib-zlib":
        buffer = io.BytesIO()
        joblib.dump(value, buffer, compress=3)
        return buffer.getvalue()
    if how == "pandas-gzip":
        buffer = io.BytesIO()
        pd.to_pickle(value, buffer, compression="gzip")
        return buffer.getvalue()
    if how == "protocol0":
        return pickle.dumps(value, protocol=0)
    raise AssertionError(how)


def _only(outcome: TaskOutcome) -> tuple[str, int, str]:
    (c,) = outcome.checks
    return c.status, c.score, c.sentence


PAYLOADS = {
    "runstring-frame-walk": lambda: _RunString(FORGE),
    "exec-frame-walk": lambda: _Exec(),
    "runstring-then-frame": lambda: [_RunString("import os\nos.environ['FORGED'] = '1'"), ZEROS],
}


# (payload, how it was written, the loader the check uses): each payload, each writer and each loader
ATTACKS = [("runstring-frame-walk", "pickle", "pickle"), ("runstring-frame-walk", "pandas-gzip", "pandas"),
           ("runstring-frame-walk", "joblib", "joblib"), ("exec-frame-walk", "protocol0", "pickle"),
           ("exec-frame-walk", "joblib-zlib", "joblib"), ("exec-frame-walk", "pickle", "pandas"),
           ("runstring-then-frame", "joblib", "joblib"), ("runstring-then-frame", "pandas-gzip", "pandas")]
# (how it was written, the loader the check uses): the loaders that read such a file
HONEST = [("pickle", "pickle"), ("protocol0", "pickle"), ("pickle", "pandas"), ("pandas-gzip", "pandas"),
          ("joblib", "joblib"), ("joblib-zlib", "joblib"), ("pandas-gzip", "joblib")]


@pytest.mark.usefixtures("os_sandbox")
@pytest.mark.parametrize(("payload", "how", "loader"), ATTACKS)
def test_no_pickle_payload_forges_a_pass(audit_hook: bool, loader: str, how: str, payload: str) -> None:
    name = "predictions.pkl.gz" if how == "pandas-gzip" else "predictions.pkl"
    outcome = run_checks(_task(loader, name), {name: _dump(PAYLOADS[payload](), how)}, gt=GT, limits=LIMITS)
    status, score, sentence = _only(outcome)
    assert status != "true" and score < 2, sentence
    assert "Passed" not in sentence
    if payload != "runstring-then-frame":  # the payload ran where it held nothing and handed over nothing
        assert status == "refused", sentence
        assert name in sentence and "can run code" in sentence


@pytest.mark.usefixtures("os_sandbox")
@pytest.mark.parametrize(("how", "loader"), HONEST)
def test_an_honest_pickle_of_a_frame_still_passes_and_wrong_predictions_still_fail(loader: str, how: str) -> None:
    name = "predictions.pkl.gz" if how == "pandas-gzip" else "predictions.pkl"
    outcome = run_checks(_task(loader, name), {name: _dump(TRUTH.copy(), how)}, gt=GT, limits=LIMITS)
    assert _only(outcome)[:2] == ("true", 2), _only(outcome)
    assert "a pickle" in outcome.files[0]["note"]
    wrong = run_checks(_task(loader, name), {name: _dump(ZEROS.copy(), how)}, gt=GT, limits=LIMITS)
    assert _only(wrong)[:2] == ("false", 1), _only(wrong)


@pytest.mark.usefixtures("os_sandbox")
def test_a_fitted_model_is_withheld_with_a_sentence_saying_what_to_save() -> None:
    from sklearn.linear_model import LinearRegression

    model = LinearRegression().fit(np.arange(6).reshape(-1, 1), TRUTH["y"])
    code = ("import joblib\nimport numpy as np\ndef fitted(ground_truth):\n    model = joblib.load('model.pkl')\n"
            "    return bool(model.predict(np.zeros((1, 1))).shape == (1,))\n")
    check = ProgrammaticCheck(id="m", task_type="predictive modeling", function="Model", metric="Fitted", code=code)
    task = ProgrammaticTaskRelease(key="t", prompt="fit a model", checks=[check])
    outcome = run_checks(task, {"model.pkl": _dump(model, "joblib"), "notes.txt": b"fine"}, limits=LIMITS)
    status, score, sentence = _only(outcome)
    assert (status, score) == ("refused", 0)
    assert "model.pkl" in sentence and "LinearRegression" in sentence and "predictions" in sentence
    notes = {f["path"]: f.get("note", "") for f in outcome.files}
    assert "LinearRegression" in notes["model.pkl"] and notes["notes.txt"] == ""


@pytest.mark.usefixtures("os_sandbox")
def test_a_pickle_that_escapes_detection_still_cannot_call_anything_in_a_check(audit_hook: bool) -> None:
    """Protocol 0 with bytes after the call and no STOP: not a whole pickle, so it is left as it is; the
    check's own unpickler may name only what plain data names, so runstring is refused there."""
    forged = (b"cnumpy.testing._private.utils\nrunstring\n(V" + FORGE.replace("\n", "\\u000a").encode()
              + b"\n(dtR\xff\xfe")
    assert plain.find_pickles({"predictions.pkl": forged}) == []
    outcome = run_checks(_task("pickle"), {"predictions.pkl": forged}, gt=GT, limits=LIMITS)
    status, score, sentence = _only(outcome)
    assert (status, score) == ("refused", 0), sentence
    assert "numpy.testing._private.utils.runstring" in sentence


@pytest.mark.usefixtures("os_sandbox")
def test_an_agents_pickle_runs_only_where_it_holds_nothing() -> None:
    """The code a pickle names runs in the converter, never in the check's process: a mark it leaves in its
    process is not seen by the check."""
    marker = _RunString("import builtins\nbuiltins.FORKPATHS_MARK = 1")
    code = ("import builtins, pickle\ndef f(gt):\n    value = pickle.load(open('v.pkl', 'rb'))\n"
            "    return value is None and not hasattr(builtins, 'FORKPATHS_MARK')\n")
    check = ProgrammaticCheck(id="c", task_type="data cleaning & preprocessing", function="F", metric="M", code=code)
    outcome = run_checks(ProgrammaticTaskRelease(key="t", prompt="p", checks=[check]),
                         {"v.pkl": pickle.dumps(marker)}, limits=LIMITS)
    assert _only(outcome)[:2] == ("true", 2), _only(outcome)


# ------------------------------------------------------------------------------------------------ no sandbox needed


def test_pickles_are_found_by_content_in_every_wrapper_and_text_is_not() -> None:
    frame = pickle.dumps(TRUTH)
    files = {"a.csv": frame, "b.bin": gzip.compress(frame), "c": bz2.compress(frame), "d.pkl": _dump(TRUTH, "joblib-zlib"),
             "e.pkl": pickle.dumps(TRUTH, protocol=0), "plain.csv": b"city,pop\nx,1\n", "clusters.csv": b"cluster,x\n0,1.5\n", "notes.txt": b"(x)\n",
             "x.txt": b"x^2 grows\n", "empty": b"", "gz.csv.gz": gzip.compress(b"a,b\n1,2\n"),
             "img.png": b"\x89PNG\r\n\x1a\n" + bytes(20)}
    assert sorted(plain.find_pickles(files)) == ["a.csv", "b.bin", "c", "d.pkl", "e.pkl"]


def test_plain_values_round_trip_and_others_are_named() -> None:
    frame = pd.DataFrame({0: [1.5, np.nan], 1: ["a", np.nan], "when": pd.to_datetime(["2020-01-01", "2021-01-02"])})
    value = {"frame": frame, "series": frame[0], "array": np.arange(6).reshape(2, 3), "text": np.array(["a", "bc"]),
             "scalar": np.float32(2.5), "numbers": [1, 2.5, True, None, "x", b"raw", (1, 2)], "set": {1, 2}}
    blobs: list[bytes] = []
    tree = plain.encode(value, blobs)
    back = plain.decode(tree, blobs)
    pd.testing.assert_frame_equal(back["frame"], frame)
    pd.testing.assert_series_equal(back["series"], frame[0])
    assert back["array"].tolist() == [[0, 1, 2], [3, 4, 5]] and back["text"].tolist() == ["a", "bc"]
    assert type(back["scalar"]) is np.float32 and back["scalar"] == 2.5
    assert back["numbers"] == [1, 2.5, True, None, "x", b"raw", (1, 2)] and back["set"] == {1, 2}
    with pytest.raises(plain.NotPlain) as caught:
        plain.encode({"model": [object()]}, [])
    assert caught.value.type_name == "object" and "key 'model'" in caught.value.where
    with pytest.raises(plain.NotPlain) as cell:
        plain.encode(pd.DataFrame({"c": [[1, 2]]}), [])
    assert "list" in cell.value.type_name and "'c'" in cell.value.where


def test_a_forged_hand_over_is_malformed_not_believed() -> None:
    for tree, blobs in [({"t": "array", "dtype": "O", "shape": [1], "b": 0}, [b"x" * 8]),
                        ({"t": "array", "dtype": "<i8", "shape": [2], "b": 0}, [b"x" * 8]),
                        ({"t": "eval", "v": "1"}, []), ({"t": "frame", "frame": {}, "b0": 0, "n": 5}, []),
                        ({"t": "float", "v": "1e999999"}, [])]:
        with pytest.raises((plain.Malformed, plain.NotPlain)):
            plain.decode(tree, blobs)


def test_the_second_wall_allows_plain_data_only() -> None:
    allowed = plain.plain_pickle_globals()
    modules = {m for m, _ in allowed}
    assert ("pandas.core.frame", "DataFrame") in allowed and ("numpy", "ndarray") in allowed
    assert not any(m.startswith(("numpy.testing", "sklearn", "joblib", "scipy", "os", "subprocess", "posix"))
                   for m in modules)
    assert not {("builtins", n) for n in ("eval", "exec", "getattr", "__import__", "compile", "open")} & allowed
    clean = plain.rebuild(plain.decode(*_encoded(TRUTH)), "")
    named: set[tuple[str, str]] = set()

    class Recording(pickle.Unpickler):
        def find_class(self, module: str, name: str) -> object:
            named.add((module, name))
            return super().find_class(module, name)

    Recording(io.BytesIO(clean)).load()
    assert named <= allowed


def _encoded(value: object) -> tuple[dict, list[bytes]]:
    blobs: list[bytes] = []
    return plain.encode(value, blobs), blobs

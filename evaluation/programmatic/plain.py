"""Pickled outputs as plain data: an agent's pickle, joblib or pandas-pickle file never loads where a verdict is made.

A pickle is a program: loading one can call any function it names (``numpy.testing._private.utils.runstring`` is
``exec``), and from there reach whatever the loading process holds. A check's process holds its verdict pipe, so
an output file that the check unpickles could forge the check's result. Here:

1. :func:`find_pickles` says which files of a folder are pickles (by content, never by name: a ``.csv`` can hold
   one), through gzip, bz2, xz or zlib (joblib's compression) wrappers.
2. Those files, and only they, go to the sandbox job ``programmatic.plain_outputs`` (:mod:`.job`), a process
   that holds nothing else: no verdict channel, no ground truth, no check, no other run. It loads each file in a
   child of its own and hands over plain data (:func:`encode`): frames in :mod:`evaluation.sandbox.frames`'s
   encoding, ndarrays as raw bytes with their dtype and shape, numbers, text and containers as tagged JSON. A
   payload that runs there can only change the data it hands over, which the agent could have put in its file.
3. The measuring side decodes that data strictly (:func:`decode`) and writes a clean pickle of it (:func:`rebuild`,
   in the original's compression), which replaces the agent's file for the checks. A file that holds anything
   else (a fitted model, a function, an object of the agent's own class) is withheld from the checks, and the
   outcome says which file and what to save instead (:func:`refusal_sentence`).
4. As a second wall, a check's process may unpickle only the globals that pickles of plain data name
   (:func:`plain_pickle_globals`, read from this very numpy and pandas), so a pickle that escaped the first
   step still cannot call anything.

Nothing here runs untrusted code: :func:`encode` runs on the untrusted side (its output is never believed), and
:func:`decode`, :func:`rebuild` and :func:`find_pickles` only read bytes.
"""

from __future__ import annotations

import base64
import bz2
import functools
import gzip
import io
import lzma
import pickle
import pickletools
import re
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["NotPlain", "PlainOutcome", "decode", "encode", "find_pickles", "plain_pickle_globals", "rebuild",
           "refusal_sentence", "wrapper_of"]

MAX_DEPTH = 32
MAX_ITEMS = 1_000_000
MAX_SCAN_BYTES = 64 * 1024 * 1024
PLAIN_KINDS = "biufcmMUS"  # numpy dtype kinds carried as raw bytes
GLOBAL_OPCODES = frozenset({"GLOBAL", "STACK_GLOBAL", "INST", "OBJ", "REDUCE", "NEWOBJ", "NEWOBJ_EX", "EXT1", "EXT2",
                            "EXT4", "BUILD"})
_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
WHAT_TO_SAVE = ("Save what the check reads as data instead: a table as CSV (or a pickled DataFrame), an array as "
                ".npy or a pickled ndarray, numbers and text as JSON, and a model's predictions or scores rather "
                "than the fitted model.")


class NotPlain(Exception):
    """The value holds something that is not plain data (its type, and where in the value)."""

    def __init__(self, type_name: str, where: str = "") -> None:
        super().__init__(type_name, where)
        self.type_name = type_name
        self.where = where


def refusal_sentence(path: str, why: str) -> str:
    """The sentence a refused pickle gets: the file, what is wrong, what to save instead."""
    return (f"{path} is a pickle that {why}; forkpaths does not give such pickles to checks, because loading a "
            f"pickle can run code. {WHAT_TO_SAVE}")


# ------------------------------------------------------------------------------------------------ finding them


def _prefix(data: bytes, wrapper: str, n: int = 64) -> bytes:
    try:
        if wrapper == "gzip":
            return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data, n)
        if wrapper == "zlib":
            return zlib.decompressobj().decompress(data, n)
        if wrapper == "bz2":
            return bz2.BZ2Decompressor().decompress(data, max_length=n)
        if wrapper == "xz":
            return lzma.LZMADecompressor().decompress(data, max_length=n)
    except (zlib.error, OSError, EOFError, lzma.LZMAError, ValueError):
        return b""
    return data[:n]


def wrapper_of(data: bytes) -> str:
    """The compression around a file's bytes, by its magic number: gzip, bz2, xz, zlib, or '' (none)."""
    if data[:2] == b"\x1f\x8b":
        return "gzip"
    if data[:3] == b"BZh":
        return "bz2"
    if data[:6] == b"\xfd7zXZ\x00":
        return "xz"
    if len(data) > 2 and data[0] == 0x78 and (data[0] * 256 + data[1]) % 31 == 0:
        return "zlib"
    return ""


class _Bounded:
    """A file (read and readline, no tell: what ``pickletools.genops`` needs) that refuses to produce more than
    ``limit`` bytes, so that a decompression bomb stops the scan."""

    def __init__(self, inner: Any, limit: int) -> None:
        self._inner, self._left = inner, limit

    def _count(self, chunk: bytes) -> bytes:
        self._left -= len(chunk)
        if self._left < 0:
            raise ValueError("too large to scan")
        return chunk

    def read(self, n: int = -1) -> bytes:
        return self._count(self._inner.read(min(n, self._left + 1) if n >= 0 else self._left + 1))

    def readline(self) -> bytes:
        return self._count(self._inner.readline(self._left + 1))


def _inner_stream(data: bytes, wrapper: str) -> Any:
    raw = io.BytesIO(data)
    inner: Any
    if wrapper == "gzip":
        inner = gzip.GzipFile(fileobj=raw)  # noqa: SIM115 - read by the scan, on bytes in memory
    elif wrapper == "bz2":
        inner = bz2.BZ2File(raw)  # noqa: SIM115 - read by the scan, on bytes in memory
    elif wrapper == "xz":
        inner = lzma.LZMAFile(raw)  # noqa: SIM115 - read by the scan, on bytes in memory
    elif wrapper == "zlib":
        inner = io.BytesIO(zlib.decompressobj().decompress(data, MAX_SCAN_BYTES))
    else:
        inner = raw
    return _Bounded(inner, MAX_SCAN_BYTES)


def _is_pickle(data: bytes) -> bool:
    wrapper = wrapper_of(data)
    head = _prefix(data, wrapper, 2)
    if len(head) == 2 and head[0] == 0x80 and 2 <= head[1] <= 5:  # PROTO: protocol 2 and later, joblib's too
        return True
    if not head or head[:1] in b" \t\r\n,;#\"'":  # text that no pickle of protocol 0 or 1 starts with
        return False
    # protocol 0 or 1: a pickle only when its opcodes run to a STOP that ends the file, and it names something
    # to call by a dotted name (a CSV can parse as opcodes for a while, and even reach a '.')
    stream = _inner_stream(data, wrapper)
    try:
        names = False
        for opcode, arg, _pos in pickletools.genops(stream):
            if opcode.name in ("GLOBAL", "INST"):
                if not isinstance(arg, str) or not all(_DOTTED.fullmatch(part) for part in arg.split(" ", 1)):
                    return False
            names = names or opcode.name in GLOBAL_OPCODES
        return names and stream.read(1) == b""
    except Exception:  # noqa: BLE001 - anything that is not a whole pickle: not one
        return False


def find_pickles(files: Mapping[str, bytes]) -> list[str]:
    """The paths of ``files`` whose bytes are a pickle (plain, joblib's, or pandas', compressed or not)."""
    return [path for path, data in files.items() if _is_pickle(data)]


# ------------------------------------------------------------------------------------------------ the untrusted side


def _type_name(value: Any) -> str:
    kind = type(value)
    module = getattr(kind, "__module__", "") or ""
    name = getattr(kind, "__qualname__", "") or getattr(kind, "__name__", "?")
    return f"{module}.{name}" if module and module != "builtins" else str(name)


def _cells_plain(frame: Any, where: str) -> None:
    """Every object-dtype cell of a frame (and of its index) is text, a number, a boolean, a timestamp or
    missing: what the frame encoding carries as it is."""
    import numpy as np
    import pandas as pd

    frame = frame.to_frame() if isinstance(frame, pd.Series) else frame
    columns = [(repr(name), frame.iloc[:, i]) for i, name in enumerate(frame.columns)]
    columns += [(f"index level {level}", frame.index.get_level_values(level)) for level in range(frame.index.nlevels)]
    for name, column in columns:
        if column.dtype != object:
            continue
        for value in column.tolist():
            if value is None or value is pd.NA or value is pd.NaT or type(value) in (str, bool, int, float) \
                    or isinstance(value, pd.Timestamp | np.bool_ | np.integer | np.floating):
                continue
            raise NotPlain(_type_name(value), f"{where}column {name}")


def _labels(labels: Any, blobs: list[bytes], where: str) -> dict[str, Any] | None:
    """A frame's column labels (or a series' name) as a plain tree when the frame encoding, which names columns
    by text, would change them (numbers, tuples of a MultiIndex)."""
    import pandas as pd

    if isinstance(labels, pd.MultiIndex):
        return {"multi": True, "labels": encode([tuple(t) for t in labels], blobs, where=where)}
    if all(type(label) is str for label in labels):
        return None
    return {"multi": False, "labels": encode(list(labels), blobs, where=where)}


def encode(value: Any, blobs: list[bytes], *, where: str = "", depth: int = 0) -> dict[str, Any]:
    """``value`` as a plain tree (tagged JSON) whose bulk data is appended to ``blobs``.

    Raises:
        NotPlain: the value holds something else than frames, series, ndarrays, numbers, text, booleans,
            timestamps, bytes and lists, tuples, sets and dicts of those.
    """
    import datetime

    import numpy as np
    import pandas as pd

    from evaluation.sandbox.frames import encode_frame

    if depth > MAX_DEPTH:
        raise NotPlain("a value nested deeper than 32 levels", where)
    if value is None:
        return {"t": "none"}
    if isinstance(value, pd.DataFrame | pd.Series):
        _cells_plain(value, where)
        header, own = encode_frame(value)
        start = len(blobs)
        blobs.extend(own)
        tree = {"t": "frame", "frame": header, "b0": start, "n": len(own)}
        labels = _labels([value.name] if isinstance(value, pd.Series) else value.columns, blobs, where)
        if labels is not None:
            tree["labels"] = labels
        return tree
    if isinstance(value, np.ndarray):
        if value.dtype.kind in PLAIN_KINDS and value.dtype.fields is None and value.dtype.subdtype is None:
            blobs.append(np.ascontiguousarray(value).tobytes())
            return {"t": "array", "dtype": value.dtype.str, "shape": list(value.shape), "b": len(blobs) - 1}
        if value.dtype == object and value.size <= MAX_ITEMS:
            return {"t": "objarray", "shape": list(value.shape),
                    "items": [encode(v, blobs, where=where, depth=depth + 1) for v in value.ravel().tolist()]}
        raise NotPlain(f"an ndarray of dtype {value.dtype}", where)
    if isinstance(value, np.generic):
        if value.dtype.kind in PLAIN_KINDS:
            blobs.append(value.tobytes())
            return {"t": "scalar", "dtype": value.dtype.str, "b": len(blobs) - 1}
        raise NotPlain(_type_name(value), where)
    if isinstance(value, pd.Timestamp):
        return {"t": "timestamp", "v": value.isoformat()}
    kind = type(value)
    if kind is bool:
        return {"t": "bool", "v": value}
    if kind is int:
        return {"t": "int", "v": str(value)}
    if kind is float:
        return {"t": "float", "v": repr(value)}
    if kind is str:
        return {"t": "str", "v": value}
    if kind is bytes:
        blobs.append(value)
        return {"t": "bytes", "b": len(blobs) - 1}
    if kind is datetime.datetime:
        return {"t": "datetime", "v": value.isoformat()}
    if kind is datetime.date:
        return {"t": "date", "v": value.isoformat()}
    if kind in (list, tuple, set, frozenset):
        if len(value) > MAX_ITEMS:
            raise NotPlain(f"a {kind.__name__} of more than {MAX_ITEMS} items", where)
        return {"t": kind.__name__, "items": [encode(v, blobs, where=f"{where}item {i} of ", depth=depth + 1)
                                               for i, v in enumerate(value)]}
    if kind is dict:
        if len(value) > MAX_ITEMS:
            raise NotPlain(f"a dict of more than {MAX_ITEMS} items", where)
        return {"t": "dict", "items": [[encode(k, blobs, where=where, depth=depth + 1),
                                        encode(v, blobs, where=f"{where}key {k!r} of ", depth=depth + 1)]
                                       for k, v in value.items()]}
    raise NotPlain(_type_name(value), where)


def load_pickle(data: bytes) -> Any:
    """Load a pickle, joblib or pandas-pickle file's bytes (runs whatever the pickle names: untrusted side only)."""
    import joblib

    try:
        return joblib.load(io.BytesIO(data))
    except Exception as first:  # noqa: BLE001 - pandas' own reader knows older pandas pickles
        import pandas as pd

        wrapper = wrapper_of(data)
        try:
            return pd.read_pickle(io.BytesIO(data), compression={"": None, "zlib": None}.get(wrapper, wrapper))
        except Exception:  # noqa: BLE001
            raise first from None


# ------------------------------------------------------------------------------------------------ the measuring side


class Malformed(ValueError):
    """What the converter handed over is not a well-formed plain tree."""


def _want(condition: bool, what: str) -> None:
    if not condition:
        raise Malformed(what)


def _blob(blobs: list[bytes], ref: Any) -> bytes:
    _want(isinstance(ref, int) and not isinstance(ref, bool) and 0 <= ref < len(blobs), "a bad blob reference")
    return blobs[ref]


def _dtype(text: Any) -> Any:
    import numpy as np

    _want(isinstance(text, str) and len(text) < 32, "a bad dtype")
    try:
        dtype = np.dtype(text)
    except TypeError as exc:
        raise Malformed("a bad dtype") from exc
    _want(dtype.kind in PLAIN_KINDS and not dtype.hasobject and dtype.fields is None and dtype.subdtype is None
          and dtype.itemsize > 0, "a dtype that is not plain data")
    return dtype


def _shape(value: Any) -> tuple[int, ...]:
    _want(isinstance(value, list) and len(value) <= 32 and all(isinstance(n, int) and not isinstance(n, bool)
                                                               and n >= 0 for n in value), "a bad shape")
    return tuple(value)


def decode(tree: Any, blobs: list[bytes], *, depth: int = 0) -> Any:
    """The value :func:`encode` encoded, checked at every step; :class:`Malformed` for anything else."""
    import datetime
    import math

    import numpy as np
    import pandas as pd

    from evaluation.sandbox.frames import Malformed as FrameMalformed
    from evaluation.sandbox.frames import Opaque, decode_frame

    _want(isinstance(tree, dict) and depth <= MAX_DEPTH + 1, "a bad value")
    tag = tree.get("t")
    if tag == "none":
        return None
    if tag == "bool":
        _want(isinstance(tree.get("v"), bool), "a bad boolean")
        return tree["v"]
    if tag in ("int", "float", "str", "timestamp", "datetime", "date"):
        text = tree.get("v")
        _want(isinstance(text, str) and (tag == "str" or len(text) <= 10_000), f"a bad {tag}")
        try:
            if tag == "int":
                return int(text)
            if tag == "float":
                number = float(text)
                _want(repr(number) == text or math.isnan(number), "a bad float")
                return number
            if tag == "timestamp":
                return pd.Timestamp(text)
            if tag == "datetime":
                return datetime.datetime.fromisoformat(text)
            if tag == "date":
                return datetime.date.fromisoformat(text)
        except (ValueError, TypeError, OverflowError) as exc:
            raise Malformed(f"a bad {tag}") from exc
        return text
    if tag == "bytes":
        return _blob(blobs, tree.get("b"))
    if tag == "array":
        dtype, shape = _dtype(tree.get("dtype")), _shape(tree.get("shape"))
        data = _blob(blobs, tree.get("b"))
        _want(len(data) == math.prod(shape) * dtype.itemsize, "an array of the wrong size")
        return np.frombuffer(data, dtype=dtype).reshape(shape).copy()
    if tag == "scalar":
        dtype = _dtype(tree.get("dtype"))
        data = _blob(blobs, tree.get("b"))
        _want(len(data) == dtype.itemsize, "a scalar of the wrong size")
        return np.frombuffer(data, dtype=dtype)[0]
    if tag == "objarray":
        shape, items = _shape(tree.get("shape")), tree.get("items")
        _want(isinstance(items, list) and len(items) == math.prod(shape), "an object array of the wrong size")
        out = np.empty(len(items), dtype=object)
        for i, item in enumerate(items):
            out[i] = decode(item, blobs, depth=depth + 1)
        return out.reshape(shape)
    if tag in ("list", "tuple", "set", "frozenset"):
        items = tree.get("items")
        _want(isinstance(items, list) and len(items) <= MAX_ITEMS, f"a bad {tag}")
        values = [decode(item, blobs, depth=depth + 1) for item in items]
        try:
            return {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}[tag](values)
        except TypeError as exc:  # an unhashable member of a set
            raise Malformed(f"a bad {tag}") from exc
    if tag == "dict":
        items = tree.get("items")
        _want(isinstance(items, list) and len(items) <= MAX_ITEMS
              and all(isinstance(p, list) and len(p) == 2 for p in items), "a bad dict")
        try:
            return {decode(k, blobs, depth=depth + 1): decode(v, blobs, depth=depth + 1) for k, v in items}
        except TypeError as exc:
            raise Malformed("a dict with an unhashable key") from exc
    if tag == "frame":
        start, count = tree.get("b0"), tree.get("n")
        _want(isinstance(start, int) and isinstance(count, int) and not isinstance(start, bool)
              and not isinstance(count, bool) and start >= 0 and count >= 0 and start + count <= len(blobs),
              "a bad frame reference")
        try:
            frame = decode_frame(tree.get("frame"), blobs[start:start + count])
        except FrameMalformed as exc:
            raise Malformed(str(exc)) from exc
        whole = frame.to_frame() if isinstance(frame, pd.Series) else frame
        for i in range(whole.shape[1]):
            column = whole.iloc[:, i]
            if column.dtype == object and any(isinstance(v, Opaque) for v in column.tolist()):
                raise NotPlain("values that are not text, numbers, booleans or timestamps",
                               f"column {str(whole.columns[i])!r}")
        labels = tree.get("labels")
        if labels is not None:
            _want(isinstance(labels, dict), "bad column labels")
            values = decode(labels.get("labels"), blobs, depth=depth + 1)
            _want(isinstance(values, list) and len(values) == whole.shape[1], "column labels of the wrong count")
            if isinstance(frame, pd.Series):
                frame.name = values[0]
            elif labels.get("multi") is True:
                _want(all(isinstance(v, tuple) for v in values), "bad multi-index labels")
                frame.columns = pd.MultiIndex.from_tuples(values) if values else frame.columns
            else:
                frame.columns = pd.Index(values)
        return frame
    raise Malformed("an unknown value tag")


def rebuild(value: Any, wrapper: str) -> bytes:
    """A clean pickle of a decoded value, in the original's compression (gzip, bz2 and xz are kept, since
    ``pd.read_pickle`` infers them from the file name; joblib's zlib is dropped, which ``joblib.load`` reads)."""
    data = pickle.dumps(value, protocol=4)
    if wrapper == "gzip":
        return gzip.compress(data, mtime=0)
    if wrapper == "bz2":
        return bz2.compress(data)
    if wrapper == "xz":
        return lzma.compress(data)
    return data


@dataclass
class PlainOutcome:
    """A folder's files after its pickles went through the converter: clean files, and what was withheld."""

    files: dict[str, bytes]
    converted: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)  # path → the sentence saying why


def _where(where: str) -> str:
    return f" ({where.removesuffix(' of ')})" if where else ""


def make_plain(files: Mapping[str, bytes], *, run: Callable[[dict[str, Any]], dict[str, Any]]) -> PlainOutcome:
    """Replace each pickle of ``files`` by a clean pickle of the plain data it holds, or withhold it.

    ``run`` runs the converter job on ``{"files": {path: base64}}`` and returns its JSON result (the sandbox's
    ``run_job``, bound to the job's name and limits by the caller).
    """
    pickles = find_pickles(files)
    out = PlainOutcome(files=dict(files))
    if not pickles:
        return out
    raw = run({"files": {p: base64.b64encode(files[p]).decode("ascii") for p in pickles},
               "labels": [f"pickle {p}" for p in pickles]})
    handed = raw.get("files") if raw.get("ok") else None
    for path in pickles:
        del out.files[path]
        item = handed.get(path) if isinstance(handed, dict) else None
        if not isinstance(item, dict):
            why = str(raw.get("error") or "could not be read as plain data")
            out.refused[path] = refusal_sentence(path, f"could not be read as plain data ({why.rstrip('.')})")
            continue
        if "refused" in item or "error" in item:
            if "refused" in item:
                detail = item["refused"] if isinstance(item["refused"], dict) else {}
                why = (f"holds {str(detail.get('type') or 'an object')[:200]}{_where(str(detail.get('where') or ''))}, "
                       "which is not plain data")
            else:
                why = f"could not be read ({str(item['error'])[:300]})"
            out.refused[path] = refusal_sentence(path, why)
            continue
        try:
            blobs = [base64.b64decode(b, validate=True) for b in item.get("blobs") or []]
            value = decode(item.get("tree"), blobs)
            out.files[path] = rebuild(value, wrapper_of(files[path]))
            out.converted.append(path)
        except NotPlain as exc:
            out.refused[path] = refusal_sentence(path, f"holds {exc.type_name}{_where(exc.where)}, which is not "
                                                       "plain data")
        except (Malformed, ValueError, TypeError, RecursionError, pickle.PicklingError) as exc:
            out.refused[path] = refusal_sentence(path, f"did not hand over well-formed plain data ({exc})")
    return out


# ------------------------------------------------------------------------------------------------ the second wall


def _samples() -> list[Any]:
    """Plain values of every kind :func:`decode` can make: their pickles name every global a clean file names."""
    import datetime

    import numpy as np
    import pandas as pd

    from evaluation.sandbox.frames import EXTENSION_DTYPES

    frame = pd.DataFrame({
        "i": [1, 2], "f": [1.5, np.nan], "b": [True, False], "s": ["a", None], "c": [1 + 2j, 3j],
        "d": pd.to_datetime(["2020-01-01", "2021-01-01"]), "td": pd.to_timedelta([1, 2], unit="s"),
        "cat": pd.Categorical(["x", "y"]), "u": np.array([1, 2], dtype="uint8"),
    })
    for i, name in enumerate(EXTENSION_DTYPES):
        values: list[Any] = ["a", None] if name == "string" else [True, None] if name == "boolean" else [1, None]
        frame[f"e{i}"] = pd.array(values, dtype=name)
    for i, tz in enumerate(("UTC", "Europe/Paris", "+01:00", "Etc/GMT+2")):
        frame[f"tz{i}"] = pd.to_datetime(["2020-01-01", "2021-01-01"]).tz_localize("UTC").tz_convert(tz)
    dates = pd.date_range("2020-01-01", periods=2)
    return [
        frame, frame["i"], frame.set_index(["s", "i"]), frame.set_index("d"), frame.set_index("td"),
        frame.set_index("cat"), frame.set_index("f"), frame.set_index("e0"), frame.T,
        pd.Series([1, 2], index=dates), pd.Series(["a", "b"], index=pd.Index(["x", "y"], dtype=object)),
        np.arange(3), np.array(["a", "b"]), np.array([b"a"]), np.zeros((2, 2)), np.array([None, "a"], dtype=object),
        np.float64(1.0), np.int64(3), np.bool_(True), np.str_("a"), np.datetime64("2020-01-01"),
        np.timedelta64(1, "s"), np.complex128(1j),
        {"a": [1, 2.0, "x", None, (1, 2), {1, 2}, frozenset([3])], "b": b"x"},
        pd.Timestamp("2020-01-01"), datetime.datetime(2020, 1, 1), datetime.date(2020, 1, 1),
    ]


@functools.lru_cache(maxsize=1)
def plain_pickle_globals() -> frozenset[tuple[str, str]]:
    """Every (module, name) that a pickle of plain data names under this numpy and pandas, at protocols 2 to 5:
    what a check's process may unpickle (the clean files :func:`rebuild` writes name nothing else)."""
    seen: set[tuple[str, str]] = set()

    class _Recording(pickle.Unpickler):
        def find_class(self, module: str, name: str) -> Any:
            seen.add((module, name))
            return super().find_class(module, name)

    for value in _samples():
        for protocol in (2, 3, 4, 5):
            _Recording(io.BytesIO(pickle.dumps(value, protocol=protocol))).load()
    return frozenset(seen)


"""Frames as plain data: what the untrusted side of a job may hand to the side that measures (no pickle).

The code of an agent or analyst runs in a child process; the process that traces, converts, hashes and reports
(the *measurer*) receives only the data that code produced: frames, the group-by keys, and the shape of the other
variables, encoded here. Decoding never runs code: numbers, booleans and dates travel as raw numpy buffers of a
checked dtype, text as UTF-8 with lengths, other Python objects as tagged JSON (``str`` of an object that is
neither text, number, boolean, date nor missing travels as its text and comes back as :class:`Opaque`, whose
``str`` is that text: BLADE's value hash of the column is the same). Anything malformed raises
:class:`Malformed`, which the measurer reports as the code having interfered with the measurement.

Encoded values are ``(header, blobs)``: a JSON-able dict and a list of byte strings it refers to by position.
"""

from __future__ import annotations

import ast
import json
import types
from typing import Any

__all__ = ["Malformed", "Opaque", "decode_frame", "decode_object", "encode_frame", "encode_object", "kind_of",
           "shape_of", "stand_in"]

NUMPY_KINDS = "biufcmM"
MAX_NAME_CHARS = 10_000
MAX_LITERAL_CHARS = 100_000
MAX_LITERAL_ITEMS = 1_000
FACTORIZE_MIN_ROWS = 64
"""A text column of at least this many rows and at most half as many distinct texts travels as its distinct
texts and one code per row."""
EXTENSION_DTYPES = ("Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64", "Float32",
                    "Float64", "boolean", "string")


class Malformed(ValueError):
    """What the untrusted side handed over is not a well-formed encoding."""


class Opaque:
    """A value of a type the encoding does not carry; its ``str`` is the original's."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return self.text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Opaque) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)


# ---------------------------------------------------------------------------------------------------------------
# Encoding (runs on the untrusted side: its output is checked on decoding, never believed)
# ---------------------------------------------------------------------------------------------------------------


def _encode_value(value: Any) -> Any:
    import numpy as np
    import pandas as pd

    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer):
        return {"i": str(int(value))}
    if isinstance(value, float | np.floating):
        return {"f": repr(float(value))}
    if value is pd.NaT:
        return {"nat": 1}
    if value is pd.NA:
        return {"na": 1}
    if isinstance(value, pd.Timestamp):
        return {"t": value.isoformat()}
    try:
        return {"o": str(value)}
    except Exception:  # noqa: BLE001 - a __str__ that raises: the type's name is what is left
        return {"o": f"<{type(value).__name__}>"}


def _encode_array(values: Any, blobs: list[bytes]) -> dict[str, Any]:
    """One column's values (a numpy array, or a Series, Index or pandas array)."""
    import numpy as np
    import pandas as pd

    if isinstance(values, pd.Series | pd.Index):
        values = values.to_numpy() if isinstance(values.dtype, np.dtype) else values.array
    dtype = values.dtype
    if isinstance(dtype, np.dtype) and dtype.kind in NUMPY_KINDS:
        blobs.append(np.ascontiguousarray(values).tobytes())
        return {"enc": "np", "dtype": dtype.str, "blob": len(blobs) - 1}
    if isinstance(dtype, pd.CategoricalDtype):
        cat = pd.Categorical(values)
        return {"enc": "cat", "ordered": bool(cat.ordered),
                "categories": _encode_array(np.asarray(cat.categories), blobs),
                "codes": _encode_array(np.asarray(cat.codes), blobs)}
    if isinstance(dtype, pd.DatetimeTZDtype):
        series = pd.Series(values)
        return {"enc": "tz", "tz": str(dtype.tz), "unit": dtype.unit,
                "values": _encode_array(series.dt.tz_convert("UTC").dt.tz_localize(None).to_numpy(), blobs)}
    objects = np.asarray(values, dtype=object)
    name = str(dtype) if str(dtype) in EXTENSION_DTYPES else None
    if pd.api.types.infer_dtype(objects, skipna=True) in ("string", "empty"):
        codes, uniques = pd.factorize(objects)  # missing values get -1
        if len(objects) >= FACTORIZE_MIN_ROWS and len(uniques) * 2 <= len(objects):
            # few distinct texts (names, categories): each sent once, and one number per row, both ways in C
            return {"enc": "strcodes", "dtype": name,
                    "uniques": _encode_array(np.asarray(uniques, dtype=object), blobs),
                    "codes": _encode_array(codes.astype("<i8"), blobs)}
        missing = pd.isna(objects)
        texts = [t.encode("utf-8", "surrogatepass") for t in objects[~missing].tolist()]
        lengths = np.full(len(objects), -1, dtype="<i8")
        lengths[~missing] = [len(t) for t in texts]
        blobs.append(lengths.tobytes())
        blobs.append(b"".join(texts))
        return {"enc": "str", "lengths": len(blobs) - 2, "data": len(blobs) - 1, "dtype": name}
    blobs.append(json.dumps([_encode_value(v) for v in objects.tolist()], allow_nan=False).encode("utf-8"))
    return {"enc": "obj", "blob": len(blobs) - 1, "dtype": name}


def _encode_index(index: Any, blobs: list[bytes]) -> dict[str, Any]:
    import pandas as pd

    if isinstance(index, pd.RangeIndex):
        return {"enc": "range", "start": int(index.start), "stop": int(index.stop), "step": int(index.step)}
    if isinstance(index, pd.MultiIndex):
        return {"enc": "multi", "levels": [_encode_array(index.get_level_values(i), blobs)
                                           for i in range(index.nlevels)]}
    return {"enc": "index", "values": _encode_array(index, blobs)}


class _Base:
    """The table as read, seen from the untrusted side: per column, what comparing against it needs (cached)."""

    def __init__(self, frame: Any) -> None:
        self.frame = frame
        self.positions: dict[str, int] = {}
        for j, name in enumerate(frame.columns):
            self.positions.setdefault(str(name), j)
        self._text: dict[int, bool] = {}
        self._values: dict[int, Any] = {}

    def values(self, j: int) -> Any:
        """Column ``j``'s values as the frame holds them (see :func:`_plain_values`)."""
        if j not in self._values:
            self._values[j] = _plain_values(self.frame, j)
        return self._values[j]

    def is_text(self, j: int) -> bool:
        """Does column ``j`` hold only text (and missing values)?"""
        import pandas as pd

        if j not in self._text:
            values = self.frame.iloc[:, j].to_numpy()
            self._text[j] = pd.api.types.infer_dtype(values, skipna=True) == "string"
        return bool(self._text[j])


_BASES: dict[int, _Base] = {}


def _base(frame: Any) -> _Base:
    found = _BASES.get(id(frame))
    if found is None or found.frame is not frame:
        _BASES.clear()
        found = _BASES[id(frame)] = _Base(frame)
    return found


def _plain_values(frame: Any, i: int) -> Any:
    """Column ``i`` of ``frame`` as its numpy array when it holds one (what ``frame.iloc[:, i].to_numpy()``
    gives, without making the Series), else None."""
    import numpy as np

    manager = getattr(frame, "_mgr", None)
    try:
        values = manager.iget_values(i) if manager is not None else None
    except Exception:  # noqa: BLE001 - not a plain block manager: the caller takes the Series path
        return None
    if isinstance(values, np.ndarray) and values.ndim == 1 and isinstance(values.dtype, np.dtype) \
            and values.dtype.kind in NUMPY_KINDS + "O":
        return values
    return None


def _same_plain(after: Any, base: _Base, j: int) -> bool | None:
    """:func:`_same_column` for a column held as a plain numpy array (``after``, from :func:`_plain_values`):
    the same verdict from the arrays; None when the table's column is not plain (then the Series decide)."""
    before = base.values(j)
    if before is None:
        return None
    if len(after) != len(before) or after.dtype != before.dtype:
        return False
    try:
        return _same_arrays(after, before, base, j)
    except Exception:  # noqa: BLE001 - when in doubt, the column travels in full
        return False


def _same_arrays(after: Any, before: Any, base: _Base, j: int) -> bool:
    """Do two numpy arrays of one dtype (numeric, bool, datetime: compared byte for byte; or object) hold the
    same values, column ``j``'s being ``before``? Object arrays are equal only as text, with the same missing
    values."""
    import numpy as np
    import pandas as pd

    if after.dtype.kind in NUMPY_KINDS:
        a, b = np.ascontiguousarray(after), np.ascontiguousarray(before)
        return a.shape == b.shape and np.array_equal(a.view(np.uint8), b.view(np.uint8))
    if not base.is_text(j):
        return False
    equal = after == before  # text equals only text: where the table has text, so does the column
    if not isinstance(equal, np.ndarray):
        return False
    rest = ~equal
    if not rest.any():
        return True
    return bool(pd.isna(before[rest]).all() and pd.isna(after[rest]).all())


def _same_column(after: Any, base: _Base, j: int) -> bool:
    """Does ``after`` hold exactly the values of column ``j`` of the table (same dtype, same bytes, or the same
    text with the same missing values)?"""
    import numpy as np

    before = base.frame.iloc[:, j]
    if len(after) != len(before) or after.dtype != before.dtype:
        return False
    dtype = after.dtype
    try:
        if isinstance(dtype, np.dtype) and dtype.kind in NUMPY_KINDS + "O":
            return _same_arrays(after.to_numpy(), before.to_numpy(), base, j)
        return bool(after.equals(before))
    except Exception:  # noqa: BLE001 - when in doubt, the column travels in full
        return False


def encode_frame(frame: Any, base: Any = None) -> tuple[dict[str, Any], list[bytes]]:
    """A DataFrame (or Series) as ``(header, blobs)``.

    ``base`` (the table as it was read, which the measurer holds too): a column holding exactly the values of a
    column of the same name in ``base`` travels as a reference to it, and so does an identical index. A lying
    reference only shows the measurer a frame the code could have made itself."""
    import pandas as pd

    blobs: list[bytes] = []
    series = isinstance(frame, pd.Series)
    if series:
        frame = frame.to_frame(name=frame.name if frame.name is not None else 0)
    known = _base(base) if isinstance(base, pd.DataFrame) else None
    same_index = known is not None and type(frame.index) is type(base.index) and frame.index.equals(base.index)
    columns = []
    for i, name in enumerate(frame.columns):
        j = known.positions.get(str(name)) if known is not None else None
        if same_index and known is not None and j is not None:
            plain = _plain_values(frame, i)
            same = _same_plain(plain, known, j) if plain is not None else None
            if same is None:  # an extension dtype (or a table column that is one): the Series decide
                same = _same_column(frame.iloc[:, i], known, j)
            if same:
                columns.append({"name": str(name)[:MAX_NAME_CHARS], "enc": "ref", "pos": j})
                continue
        plain = _plain_values(frame, i)  # the column's own numpy array, without making a Series
        values = plain if plain is not None and plain.dtype.kind in NUMPY_KINDS else frame.iloc[:, i]
        columns.append({"name": str(name)[:MAX_NAME_CHARS], **_encode_array(values, blobs)})
    index = {"enc": "ref"} if same_index else _encode_index(frame.index, blobs)
    header = {"rows": len(frame), "series": series, "columns": columns, "index": index}
    return header, blobs


def encode_object(obj: Any, base: Any = None) -> tuple[dict[str, Any], list[bytes]]:
    """What a variable holds, as the measurer needs it: frames in full, group-bys as their frame and keys."""
    import pandas as pd
    from pandas.core.groupby import DataFrameGroupBy

    if isinstance(obj, pd.DataFrame | pd.Series):
        header, blobs = encode_frame(obj, base)
        return {"kind": "frame", "frame": header}, blobs
    if isinstance(obj, DataFrameGroupBy):
        inner = getattr(obj, "obj", None)
        if isinstance(inner, pd.DataFrame):
            header, blobs = encode_frame(inner, base)
            keys = getattr(obj, "keys", None)
            keys = [keys] if isinstance(keys, str) else keys
            plain = isinstance(keys, list) and all(isinstance(k, str) for k in keys)
            return {"kind": "groupby", "frame": header, "keys": keys if plain else None,
                    "as_index": bool(getattr(obj, "as_index", True))}, blobs
    return {"kind": "other", "type": kind_of(obj)[:200]}, []


def kind_of(value: Any) -> str:
    """What a value that is not a frame is, in words: ``None``, ``a number (int)``, ``a generator``..."""
    import inspect
    import numbers

    if value is None:
        return "None"
    name = type(value).__name__
    if isinstance(value, bool):
        return f"a boolean ({name})"
    if isinstance(value, numbers.Number):
        return f"a number ({name})"
    if inspect.isgenerator(value):
        return "a generator"
    return name


def shape_of(obj: Any) -> dict[str, Any]:
    """A helper variable as the code analysis sees it (its kind, columns, keys, constant value), not its data."""
    import pandas as pd

    if isinstance(obj, pd.core.groupby.DataFrameGroupBy | pd.core.groupby.SeriesGroupBy):
        inner = getattr(obj, "obj", None)
        keys = getattr(obj, "keys", None)
        keys = [keys] if isinstance(keys, str) else keys
        return {"kind": "groupby",
                "columns": [str(c)[:MAX_NAME_CHARS] for c in inner.columns] if isinstance(inner, pd.DataFrame)
                else None,
                "keys": [k for k in keys if isinstance(k, str)] if isinstance(keys, list) else [],
                "as_index": bool(getattr(obj, "as_index", True))}
    if isinstance(obj, pd.DataFrame):
        return {"kind": "frame", "columns": [str(c)[:MAX_NAME_CHARS] for c in obj.columns], "rows": len(obj)}
    if isinstance(obj, pd.Series):
        return {"kind": "series", "name": None if obj.name is None else str(obj.name)[:MAX_NAME_CHARS]}
    if isinstance(obj, types.ModuleType):
        return {"kind": "module", "name": str(obj.__name__)[:MAX_NAME_CHARS]}
    if isinstance(obj, list | tuple | dict | set) and len(obj) > MAX_LITERAL_ITEMS:
        return {"kind": "scalar"}  # too large to be a constant the analysis would read; never repr'd in full
    if isinstance(obj, str) and len(obj) > MAX_LITERAL_CHARS:
        return {"kind": "scalar"}
    if isinstance(obj, str | int | float | bool | list | tuple | dict | set | type(None)):
        try:
            text = repr(obj)
        except Exception:  # noqa: BLE001
            text = ""
        if len(text) <= MAX_LITERAL_CHARS:
            return {"kind": "literal", "repr": text}
    return {"kind": "scalar"}


# ---------------------------------------------------------------------------------------------------------------
# Decoding (runs on the measuring side: everything is checked)
# ---------------------------------------------------------------------------------------------------------------


def _want(condition: bool, what: str) -> None:
    if not condition:
        raise Malformed(what)


def _blob(blobs: list[bytes], ref: Any) -> bytes:
    _want(isinstance(ref, int) and not isinstance(ref, bool) and 0 <= ref < len(blobs), "a bad blob reference")
    return blobs[ref]


def _decode_value(value: Any) -> Any:
    import pandas as pd

    if value is None or isinstance(value, str | bool):
        return value
    _want(isinstance(value, dict) and len(value) == 1, "a bad object value")
    (tag, text), = value.items()
    if tag in ("nat", "na"):
        return pd.NaT if tag == "nat" else pd.NA
    _want(isinstance(text, str) and len(text) <= MAX_LITERAL_CHARS, "a bad object value")
    try:
        if tag == "i":
            return int(text)
        if tag == "f":
            return float(text)
        if tag == "t":
            return pd.Timestamp(text)
    except (ValueError, TypeError, OverflowError) as exc:
        raise Malformed(f"a bad {tag} value") from exc
    _want(tag == "o", "an unknown object tag")
    return Opaque(text)


def _decode_array(spec: Any, blobs: list[bytes], rows: int, depth: int = 0) -> Any:
    import numpy as np
    import pandas as pd

    _want(isinstance(spec, dict) and depth < 3, "a bad column")
    enc = spec.get("enc")
    if enc == "np":
        try:
            dtype = np.dtype(str(spec.get("dtype")))
        except TypeError as exc:
            raise Malformed("a bad dtype") from exc
        _want(dtype.kind in NUMPY_KINDS and not dtype.hasobject and dtype.fields is None and dtype.shape == ()
              and dtype.itemsize > 0, "a dtype that is not plain data")
        data = _blob(blobs, spec.get("blob"))
        _want(len(data) == rows * dtype.itemsize, "a column of the wrong length")
        return np.frombuffer(data, dtype=dtype).copy()
    if enc == "cat":
        categories = _decode_array(spec.get("categories"), blobs, _count(spec.get("categories"), blobs), depth + 1)
        codes = _decode_array(spec.get("codes"), blobs, rows, depth + 1)
        _want(isinstance(codes, np.ndarray) and codes.dtype.kind == "i", "bad category codes")
        _want(bool(((codes >= -1) & (codes < len(categories))).all()), "category codes out of range")
        try:
            return pd.Categorical.from_codes(codes, categories=pd.Index(categories),
                                             ordered=bool(spec.get("ordered")))
        except (ValueError, TypeError) as exc:
            raise Malformed("bad categories") from exc
    if enc == "tz":
        values = _decode_array(spec.get("values"), blobs, rows, depth + 1)
        _want(isinstance(values, np.ndarray) and values.dtype.kind == "M", "bad zoned dates")
        try:
            return pd.Series(values).dt.tz_localize("UTC").dt.tz_convert(str(spec.get("tz"))).array
        except Exception as exc:  # noqa: BLE001 - an unknown zone name is malformed input
            raise Malformed("a bad time zone") from exc
    if enc == "str":
        lengths_raw = _blob(blobs, spec.get("lengths"))
        _want(len(lengths_raw) == rows * 8, "text lengths of the wrong count")
        lengths = np.frombuffer(lengths_raw, dtype="<i8")
        data = _blob(blobs, spec.get("data"))
        _want(bool((lengths >= -1).all()) and int(lengths[lengths > 0].sum()) == len(data), "bad text lengths")
        out = np.empty(rows, dtype=object)
        position = 0
        try:
            for i, n in enumerate(lengths.tolist()):
                if n < 0:
                    out[i] = np.nan
                else:
                    out[i] = data[position:position + n].decode("utf-8", "surrogatepass")
                    position += n
        except UnicodeDecodeError as exc:
            raise Malformed("text that is not UTF-8") from exc
        return _extension(out, spec.get("dtype"))
    if enc == "strcodes":
        uniques = _decode_array(spec.get("uniques"), blobs, _count(spec.get("uniques"), blobs), depth + 1)
        _want(isinstance(uniques, np.ndarray) and uniques.dtype == object
              and all(isinstance(u, str) for u in uniques.tolist()), "bad distinct texts")
        codes = _decode_array(spec.get("codes"), blobs, rows, depth + 1)
        _want(isinstance(codes, np.ndarray) and codes.dtype == np.dtype("<i8"), "bad text codes")
        _want(bool(((codes >= -1) & (codes < len(uniques))).all()), "text codes out of range")
        table = np.empty(len(uniques) + 1, dtype=object)
        table[:-1] = uniques
        table[-1] = np.nan  # code -1: a missing value
        return _extension(table[codes], spec.get("dtype"))
    if enc == "obj":
        try:
            values = json.loads(_blob(blobs, spec.get("blob")))
        except (ValueError, RecursionError) as exc:
            raise Malformed("object values that are not JSON") from exc
        _want(isinstance(values, list) and len(values) == rows, "object values of the wrong count")
        out = np.empty(rows, dtype=object)
        out[:] = [_decode_value(v) for v in values]
        return _extension(out, spec.get("dtype"))
    raise Malformed("an unknown column encoding")


def _extension(values: Any, dtype: Any) -> Any:
    import pandas as pd

    if dtype is None:
        return values
    _want(dtype in EXTENSION_DTYPES, "an unknown extension dtype")
    try:
        return pd.array(values, dtype=dtype)
    except (ValueError, TypeError) as exc:
        raise Malformed(f"values that are not {dtype}") from exc


def _count(spec: Any, blobs: list[bytes]) -> int:
    """The number of values of a nested column (categories), from its own data."""
    import numpy as np

    _want(isinstance(spec, dict), "a bad column")
    enc = spec.get("enc")
    if enc == "np":
        try:
            size = np.dtype(str(spec.get("dtype"))).itemsize
        except TypeError as exc:
            raise Malformed("a bad dtype") from exc
        _want(size > 0, "a bad dtype")
        return len(_blob(blobs, spec.get("blob"))) // size
    if enc == "str":
        return len(_blob(blobs, spec.get("lengths"))) // 8
    if enc == "strcodes":
        codes = spec.get("codes")
        _want(isinstance(codes, dict) and codes.get("enc") == "np", "bad text codes")
        return _count(codes, blobs)
    if enc == "obj":
        try:
            values = json.loads(_blob(blobs, spec.get("blob")))
        except (ValueError, RecursionError) as exc:
            raise Malformed("object values that are not JSON") from exc
        _want(isinstance(values, list), "bad object values")
        return len(values)
    raise Malformed("an unknown category encoding")


def _decode_index(spec: Any, blobs: list[bytes], rows: int) -> Any:
    import pandas as pd

    _want(isinstance(spec, dict), "a bad index")
    enc = spec.get("enc")
    if enc == "range":
        bounds = [spec.get(k) for k in ("start", "stop", "step")]
        _want(all(isinstance(b, int) and not isinstance(b, bool) for b in bounds) and bounds[2] != 0, "a bad range")
        index = pd.RangeIndex(*bounds)
        _want(len(index) == rows, "an index of the wrong length")
        return index
    if enc == "multi":
        levels = spec.get("levels")
        _want(isinstance(levels, list) and 0 < len(levels) <= 64, "a bad multi-index")
        try:
            return pd.MultiIndex.from_arrays([_decode_array(level, blobs, rows) for level in levels])
        except (ValueError, TypeError) as exc:
            raise Malformed("a bad multi-index") from exc
    if enc == "index":
        return pd.Index(_decode_array(spec.get("values"), blobs, rows))
    raise Malformed("an unknown index encoding")


def decode_frame(header: Any, blobs: list[bytes], base: Any = None) -> Any:
    """The DataFrame (or Series) of :func:`encode_frame`; :class:`Malformed` for anything else."""
    import numpy as np
    import pandas as pd

    _want(isinstance(header, dict), "a frame that is not an object")
    rows, columns = header.get("rows"), header.get("columns")
    _want(isinstance(rows, int) and not isinstance(rows, bool) and rows >= 0, "a bad row count")
    _want(isinstance(columns, list), "bad columns")
    names: list[str] = []
    refs: list[int | None] = []
    arrays: list[Any] = []
    for column in columns:
        _want(isinstance(column, dict) and isinstance(column.get("name"), str)
              and len(column["name"]) <= MAX_NAME_CHARS, "a bad column name")
        names.append(column["name"])
        if column.get("enc") == "ref":
            position = column.get("pos")
            _want(isinstance(base, pd.DataFrame) and isinstance(position, int) and not isinstance(position, bool)
                  and 0 <= position < base.shape[1] and len(base) == rows, "a bad column reference")
            refs.append(position)
            arrays.append(None)
        else:
            refs.append(None)
            arrays.append(_decode_array(column, blobs, rows))
    spec = header.get("index")
    if isinstance(spec, dict) and spec.get("enc") == "ref":
        _want(isinstance(base, pd.DataFrame) and len(base) == rows, "a bad index reference")
        frame = _from_base(base, refs, arrays)
    else:
        _want(all(r is None for r in refs), "a column reference on other rows than the table's")
        index = _decode_index(spec, blobs, rows)
        if all(isinstance(a, np.ndarray) for a in arrays):  # plain arrays: one frame, no Series per column
            frame = pd.DataFrame(dict(enumerate(arrays)), index=index, copy=False)
        else:
            frame = pd.DataFrame({i: pd.Series(a, index=index, copy=False) for i, a in enumerate(arrays)},
                                 index=index)
    frame.columns = pd.Index(names, dtype=object)
    if header.get("series") is True:
        _want(len(names) == 1, "a series of several columns")
        return frame.iloc[:, 0]
    return frame


def _from_base(base: Any, refs: list[int | None], arrays: list[Any]) -> Any:
    """The table's referenced columns (a view when they are its first columns in order, as after adding
    columns), the others inserted where they stand; the caller names them."""
    taken = [r for r in refs if r is not None]
    # every column of the table, in order (as after adding columns): no copy of its data
    frame = base.copy(deep=False) if taken == list(range(base.shape[1])) else base.take(taken, axis=1)
    frame.columns = range(len(taken))
    for i, (ref, values) in enumerate(zip(refs, arrays, strict=True)):
        if ref is None:
            frame.insert(i, f"_new_{i}", values, allow_duplicates=True)
    return frame


def decode_object(header: Any, blobs: list[bytes], base: Any = None) -> Any:
    """What :func:`encode_object` encoded: a frame, a group-by, or a :class:`types.SimpleNamespace` of its type."""
    _want(isinstance(header, dict), "a value that is not an object")
    kind = header.get("kind")
    if kind == "frame":
        return decode_frame(header.get("frame"), blobs, base)
    if kind == "groupby":
        import pandas as pd

        frame = decode_frame(header.get("frame"), blobs, base)
        _want(isinstance(frame, pd.DataFrame), "a group-by of something else than a frame")
        keys = header.get("keys")
        names = {str(c) for c in frame.columns}
        if isinstance(keys, list) and keys and all(isinstance(k, str) and k in names for k in keys):
            return frame.groupby(keys, as_index=header.get("as_index") is not False)
        import numpy as np

        return frame.groupby(np.zeros(len(frame), dtype=np.int8), as_index=header.get("as_index") is not False)
    _want(kind == "other", "an unknown value kind")
    return types.SimpleNamespace(type=str(header.get("type"))[:200])


def stand_in(shape: Any, frames: dict[str, Any] | None = None) -> Any:
    """An object the code analysis reads as the variable :func:`shape_of` described (no data of it)."""
    import numpy as np
    import pandas as pd

    _want(isinstance(shape, dict), "a bad variable")
    kind = shape.get("kind")

    def empty(columns: Any, rows: int) -> pd.DataFrame:
        _want(isinstance(columns, list) and all(isinstance(c, str) for c in columns), "bad columns")
        frame = pd.DataFrame(np.zeros((rows, len(columns)), dtype=bool))
        frame.columns = pd.Index(columns, dtype=object)
        return frame

    if kind == "groupby":
        columns = shape.get("columns") or []
        keys = shape.get("keys")
        _want(isinstance(keys, list) and all(isinstance(k, str) for k in keys), "bad group-by keys")
        frame = empty(columns + [k for k in keys if k not in columns], 0)
        as_index = shape.get("as_index") is not False
        if keys:
            return frame.groupby(keys if len(keys) > 1 else keys[0], as_index=as_index)
        return frame.groupby(np.zeros(0, dtype=np.int8), as_index=as_index)
    if kind == "frame":
        rows = shape.get("rows")
        _want(isinstance(rows, int) and not isinstance(rows, bool) and 0 <= rows <= 10**9, "a bad row count")
        return empty(shape.get("columns"), rows)
    if kind == "series":
        name = shape.get("name")
        _want(name is None or isinstance(name, str), "a bad series name")
        return pd.Series([], dtype=bool, name=name)
    if kind == "module":
        name = shape.get("name")
        _want(isinstance(name, str), "a bad module name")
        return types.ModuleType(name)
    if kind == "literal":
        text = shape.get("repr")
        _want(isinstance(text, str) and len(text) <= MAX_LITERAL_CHARS, "a bad literal")
        try:
            return ast.literal_eval(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return types.SimpleNamespace()
    _want(kind == "scalar", "an unknown variable kind")
    return types.SimpleNamespace()


"""BLADE's column value hash (blade-reference 2.4), bit for bit, plus a content fingerprint cache.

Per column: numeric NaN → 0; integers as ``str``; floats rounded to 5 decimals then ``str``; booleans as
``str``; object columns NaN → ``""``, then, if the whole column parses with ``pd.to_datetime``, formatted as
``%Y-%m-%d %H:%M:%S``, else ``str``; datetime columns formatted the same way. The hash is the SHA-256 hex of
the strings joined with ``:`` in row order (so it ignores the index and the name, and NaN ≡ 0 for numbers).

BLADE re-hashes every column of every executed frame (≈10 s per step on a 146k-row table). Most columns do
not change from one step to the next, so :class:`ColumnHasher` first takes a cheap vectorised fingerprint
(``pandas.util.hash_pandas_object`` of the values, plus dtype and length) and reuses the hash of an identical
column seen before. Object columns holding anything but strings are hashed without the cache, because the
fingerprint stringifies mixed objects (``1`` and ``"1"`` would collide while BLADE's result may differ).
"""

from __future__ import annotations

import hashlib
import warnings
from typing import Any

import numpy as np
import pandas as pd
from pandas.api.types import (
    infer_dtype,
    is_datetime64_any_dtype,
    is_float_dtype,
    is_integer_dtype,
    is_numeric_dtype,
    is_object_dtype,
)

__all__ = ["ColumnHasher", "blade_strings", "blade_value_hash", "date_parse_depends_on_inference", "numeric_strings"]

FLOAT_DECIMALS = 5
DATE_FORMAT = "%Y-%m-%d %H:%M:%S"


def blade_strings(series: pd.Series) -> pd.Series:
    """The column as the strings BLADE hashes."""
    dtype = series.dtype
    if is_numeric_dtype(dtype):
        series = series.fillna(0)
    elif is_object_dtype(dtype):
        series = series.fillna("")
    if is_integer_dtype(dtype):
        return series.fillna(0).astype(str)
    if is_float_dtype(dtype):
        # Python's round() (correctly rounded), as BLADE's ``apply(round)``; numpy's round differs in the
        # last digit for about 1 value in 200 (15.567015 → 15.56702 instead of 15.56701)
        if isinstance(dtype, pd.api.extensions.ExtensionDtype):
            rounded = series.apply(lambda x: round(x, FLOAT_DECIMALS))
        else:
            values = [round(x, FLOAT_DECIMALS) for x in series.to_numpy(dtype="float64").tolist()]
            rounded = pd.Series(values, index=series.index, dtype="float64")
        return rounded.fillna(0).astype(str)
    if isinstance(dtype, np.dtype) and dtype.kind == "b":
        return series.astype(str)
    if isinstance(dtype, np.dtype) and dtype.kind == "O":
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                series = pd.to_datetime(series, errors="raise")
            dtype = series.dtype
        except (ValueError, TypeError, OverflowError):
            return series.astype(str)
    if is_datetime64_any_dtype(dtype):
        try:
            return series.dt.strftime(DATE_FORMAT)
        except Exception:  # noqa: BLE001 - BLADE's fallback for values strftime refuses
            return pd.to_datetime(series, errors="coerce").dt.strftime(DATE_FORMAT)
    return series.astype(str)


def _as_dates(series: pd.Series, **kwargs: Any) -> pd.Series | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return pd.to_datetime(series, errors="raise", **kwargs)
    except (ValueError, TypeError, OverflowError):
        return None


def date_parse_depends_on_inference(series: pd.Series) -> bool:
    """True when this object column's BLADE strings depend on how pandas infers dates.

    BLADE hashes an object column as dates when ``pd.to_datetime`` parses it. Its pandas 1.5 parsed each value
    on its own (dateutil: ``01.08.1983`` is 8 January, ``31.08.1983`` is 31 August); pandas 2 infers one format
    from the first value and applies it to the whole column (both are then day-first, or the column does not
    parse at all and is hashed as text). Where the two readings differ, the value hash here can differ from
    BLADE's published one. ``format="mixed"`` is pandas 2's per-value parse, as pandas 1.5 did it.
    """
    dtype = series.dtype
    if not (isinstance(dtype, np.dtype) and dtype.kind == "O") or infer_dtype(series, skipna=True) != "string":
        return False
    values = series.fillna("")
    whole = _as_dates(values)
    each = _as_dates(values, format="mixed")
    if whole is None or each is None:
        return (whole is None) != (each is None)
    return not whole.equals(each)


def _round5(x: np.ndarray) -> np.ndarray:
    """Python's ``round(v, 5)`` for every element, vectorised.

    ``numpy.round`` computes ``rint(v * 1e5) / 1e5``; the division of an exact integer by 1e5 is correctly
    rounded, so numpy can only differ from Python where the product ``v * 1e5`` lands within rounding error of
    a .5 tie (or is huge or not finite): those few elements are rounded by Python itself.
    """
    with np.errstate(invalid="ignore", over="ignore"):
        p = x * 1e5
        y = np.round(x, FLOAT_DECIMALS)
        near_tie = np.abs(p - np.floor(p) - 0.5) < 1e-7
        suspicious = ~np.isfinite(p) | (np.abs(p) >= 2.0**52) | near_tie
    if suspicious.any():
        idx = np.flatnonzero(suspicious)
        y[idx] = [round(v, FLOAT_DECIMALS) for v in x[idx].tolist()]
    return y


def numeric_strings(series: pd.Series) -> np.ndarray | None:
    """BLADE's strings of a plain numpy int, float64 or bool column (one string per element, so a row subset
    of a column has the row subset of its strings); None for every other dtype."""
    dtype = series.dtype
    if not isinstance(dtype, np.dtype):
        return None
    values = series.to_numpy()
    if dtype.kind in "iu":
        text = list(map(str, values.tolist()))  # str() of Python ints/floats: what pandas' astype(str) does
    elif dtype == np.float64:
        text = list(map(str, _round5(np.where(np.isnan(values), 0.0, values)).tolist()))
    elif dtype.kind == "b":
        text = ["True" if v else "False" for v in values.tolist()]
    else:
        return None
    out = np.empty(len(text), dtype=object)
    out[:] = text
    return out


def _digest(strings: Any) -> str:
    return hashlib.sha256(":".join(strings).encode("utf-8")).hexdigest()


def blade_value_hash(series: pd.Series) -> str:
    fast = numeric_strings(series)
    if fast is not None:
        return _digest(fast.tolist())
    return _digest(blade_strings(series).astype(str).tolist())


class _Base:
    """A numeric column whose strings were computed in full: later row subsets of it reuse them."""

    def __init__(self, series: pd.Series, strings: np.ndarray) -> None:
        self.index = series.index
        self.values = series.to_numpy()
        self.dtype = series.dtype
        self.strings = strings


class ColumnHasher:
    """BLADE value hashes, computed once per distinct column.

    * an unchanged column (same dtype, length and values as one hashed before) reuses that hash, found by a
      content fingerprint;
    * a numeric column that is a row subset of a column of the same name hashed in full before (a filter kept
      the index labels and values) reuses that column's strings for its rows, checked element by element;
    * anything else is hashed in full. Object columns are never reused by rows: whether BLADE reads them as
      dates depends on every row of the column.
    """

    def __init__(self) -> None:
        self._cache: dict[tuple[Any, ...], str] = {}
        self._dates: dict[tuple[Any, ...], bool] = {}
        self._bases: dict[str, _Base] = {}
        self.date_inferred: dict[str, set[str]] = {}
        """column name → value hashes of its versions whose date parse depends on pandas' inference"""
        self.hits = 0
        self.subset_hits = 0
        self.misses = 0

    def _fingerprint(self, series: pd.Series) -> tuple[Any, ...] | None:
        dtype = series.dtype
        if isinstance(dtype, np.dtype) and dtype.kind in "iufb":
            data = np.ascontiguousarray(series.to_numpy()).tobytes()
        else:
            if is_object_dtype(dtype) and infer_dtype(series, skipna=True) not in ("string", "empty"):
                return None
            try:  # all strings: joining them is several times faster than hash_pandas_object
                joined = "\x1f".join(series.to_numpy().tolist())
                if joined.count("\x1f") != max(len(series) - 1, 0):
                    return None  # a value contains the separator: the join would be ambiguous
                data = joined.encode("utf-8", "surrogatepass")
            except TypeError:  # missing values among the strings
                try:
                    data = pd.util.hash_pandas_object(series, index=False, categorize=False).to_numpy().tobytes()
                except (TypeError, ValueError):
                    return None
        return (str(dtype), len(series), hashlib.blake2b(data, digest_size=16).digest())

    def _from_base(self, name: str, series: pd.Series) -> np.ndarray | None:
        base = self._bases.get(name)
        if base is None or base.dtype != series.dtype or not base.index.is_unique or not series.index.is_unique:
            return None
        try:
            positions = base.index.get_indexer(series.index)
        except (TypeError, ValueError):
            return None
        if (positions < 0).any():
            return None
        expected = base.values[positions]
        if not np.array_equal(expected, series.to_numpy(), equal_nan=series.dtype.kind == "f"):
            return None
        if series.dtype.kind == "f" and not np.array_equal(np.signbit(expected), np.signbit(series.to_numpy())):
            return None
        return base.strings[positions]

    def _note_dates(self, key: tuple[Any, ...] | None, series: pd.Series, name: str, value: str) -> None:
        if not (isinstance(series.dtype, np.dtype) and series.dtype.kind == "O"):
            return
        if key is None or key not in self._dates:
            flag = date_parse_depends_on_inference(series)
            if key is not None:
                self._dates[key] = flag
        else:
            flag = self._dates[key]
        if flag:
            self.date_inferred.setdefault(name, set()).add(value)

    def hash(self, series: pd.Series, name: str = "") -> str:
        key = self._fingerprint(series)
        if key is not None and key in self._cache:
            self.hits += 1
            self._note_dates(key, series, name, self._cache[key])
            return self._cache[key]
        strings = self._from_base(name, series)
        if strings is not None:
            self.subset_hits += 1
        else:
            self.misses += 1
            strings = numeric_strings(series)
            if strings is not None and series.index.is_unique:
                self._bases[name] = _Base(series, strings)
        value = _digest(strings.tolist()) if strings is not None else blade_value_hash(series)
        if key is not None:
            self._cache[key] = value
        self._note_dates(key, series, name, value)
        return value

    def hash_frame(self, frame: pd.DataFrame) -> dict[str, str]:
        """``{column: hash}``; for a duplicated column name the last one wins, as in BLADE."""
        out: dict[str, str] = {}
        get_array = getattr(frame, "_get_column_array", None)  # pandas 2: the column's array, no Series built
        for i, (name, dtype) in enumerate(zip(frame.columns, frame.dtypes, strict=True)):
            if get_array is not None and isinstance(dtype, np.dtype) and dtype.kind in "iufb":
                values = get_array(i)
                key = (str(dtype), len(values),
                       hashlib.blake2b(np.ascontiguousarray(values).tobytes(), digest_size=16).digest())
                if key in self._cache:  # the same key _fingerprint computes for this column
                    self.hits += 1
                    out[str(name)] = self._cache[key]
                    continue
            out[str(name)] = self.hash(frame.iloc[:, i], str(name))
        return out

"""BLADE's column value hash (blade-reference 2.4), bit for bit, plus a content fingerprint cache.

Per column: numeric NaN → 0; integers as ``str``; floats rounded to 5 decimals then ``str``; booleans as
``str``; object columns NaN → ``""``, then, if the whole column parses with ``pd.to_datetime``, formatted as
``%Y-%m-%d %H:%M:%S``, else ``str``; datetime columns formatted the same way. The hash is the SHA-256 hex of
the strings joined with ``:`` in row order (so it ignores the index and the name, and NaN ≡ 0 for numbers).

BLADE re-hashes every column of every executed frame (≈10 s per step on a 146k-row table). Most columns do
not change from one step to the next, so :class:`ColumnHasher` first takes a content fingerprint of the column
(dtype, length and a BLAKE3 digest of its bytes, or of its strings joined) and reuses the hash of an identical
column seen before. The fingerprint is cryptographic because the same hasher measures agents' frames: a
column made to collide with another would be given the other's hash. An object column whose element pointers
are those of a column fingerprinted before (the hasher keeps that column's elements alive, so no address can
have been reused, and ``str`` is immutable) holds the very same strings and takes that column's fingerprint
without reading them. Object columns holding anything but strings are hashed without the cache, because the
fingerprint stringifies mixed objects (``1`` and ``"1"`` would collide while BLADE's result may differ).
"""

from __future__ import annotations

import hashlib
import warnings
from collections import OrderedDict
from typing import Any

import blake3
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
        return _object_strings(series, _as_dates(series))
    return _date_strings(series)


def _object_strings(filled: pd.Series, parsed: pd.Series | None) -> pd.Series:
    """BLADE's strings of an object column whose missing values are already ``""``, given its
    ``pd.to_datetime`` (None when that raised)."""
    if parsed is None:
        return filled.astype(str)
    return _date_strings(parsed)


def _date_strings(series: pd.Series) -> pd.Series:
    if is_datetime64_any_dtype(series.dtype):
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


def _each_as_dates(filled: pd.Series) -> pd.Series | None:
    """``pd.to_datetime(format="mixed")`` of a column of strings: every value parsed on its own, so when its
    first non-empty value does not parse on its own, the column does not either (and is not parsed whole)."""
    first = next((v for v in filled.to_numpy() if v), None)
    if first is not None and _as_dates(pd.Series([first], dtype=object), format="mixed") is None:
        return None
    return _as_dates(filled, format="mixed")


def _depends_on_inference(filled: pd.Series, whole: pd.Series | None) -> bool:
    each = _each_as_dates(filled)
    if whole is None or each is None:
        return (whole is None) != (each is None)
    return not whole.equals(each)


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
    return _depends_on_inference(values, _as_dates(values))


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


# --- numeric columns as byte matrices --------------------------------------------------------------------
# A numeric column's text is built as an (n, width) uint8 matrix, one row per element, where 0 bytes are
# padding (no numeric string contains a NUL). Joining the rows with ":" is then a matter of appending a ":"
# column and dropping the zeros: the bytes hashed are exactly ``":".join(strings).encode()``, with no Python
# string per element. A row subset of a column is the row subset of its matrix.

_COLON = ord(":")
_ZERO = ord("0")
_MINUS = ord("-")
_DOT = ord(".")
_FAST_FLOAT_MAX = 2.0**30
"""Below this, ``round(v, 5) * 1e5`` is an integer k with an error far below 0.5 and float64's spacing is far
below 1e-5, so Python's shortest repr of ``round(v, 5)`` is the decimal k / 1e5 with its trailing zeros cut."""
_FAST_FLOAT_MIN = 1e-4
"""From here up (and zero) Python prints floats in fixed notation; 1e-05 .. 9e-05 are scientific."""


def _digits(magnitude: np.ndarray, negative: np.ndarray | None) -> np.ndarray:
    """Decimal text of non-negative integers (uint64), with a "-" where ``negative``, as a byte matrix."""
    n = len(magnitude)
    top = int(magnitude.max()) if n else 0
    width = len(str(top))
    if top < 2**32:  # 32-bit division is several times faster than 64-bit
        magnitude = magnitude.astype(np.uint32)
    kind = magnitude.dtype.type
    out = np.zeros((n, width + 1), dtype=np.uint8)
    if negative is not None:
        out[:, 0] = np.where(negative, _MINUS, 0)
    rest = magnitude.copy()
    ten = kind(10)
    for col in range(width, 0, -1):  # least significant digit last column
        power = width - col
        quotient = rest // ten
        digit = (rest - quotient * ten).astype(np.uint8) + _ZERO
        if power == 0:
            out[:, col] = digit
        else:
            out[:, col] = np.where(magnitude >= kind(10**power), digit, 0)
        rest = quotient
    return out


def _int_matrix(values: np.ndarray) -> np.ndarray:
    if values.dtype.kind == "u":
        return _digits(values.astype(np.uint64), None)
    v = values.astype(np.int64)
    negative = v < 0
    with np.errstate(over="ignore"):
        magnitude = np.where(negative, -v, v).astype(np.uint64)  # -(-2**63) wraps to 2**63: right as uint64
    return _digits(magnitude, negative)


def _bool_matrix(values: np.ndarray) -> np.ndarray:
    table = np.frombuffer(b"False" + b"True\0", dtype=np.uint8).reshape(2, 5)
    return table[values.astype(np.intp)]


def _text_rows(strings: list[str], width: int) -> np.ndarray:
    out = np.zeros((len(strings), width), dtype=np.uint8)
    for i, text in enumerate(strings):
        raw = text.encode("ascii")
        out[i, :len(raw)] = np.frombuffer(raw, dtype=np.uint8)
    return out


def _float_matrix(values: np.ndarray) -> np.ndarray:
    """``str(round(v, 5))`` of every element (NaN read as 0), as a byte matrix."""
    y = _round5(np.where(np.isnan(values), 0.0, values))
    ay = np.abs(y)
    with np.errstate(invalid="ignore"):
        fast = np.isfinite(y) & (ay < _FAST_FLOAT_MAX) & ((ay >= _FAST_FLOAT_MIN) | (y == 0))
    k = np.rint(np.where(fast, ay, 0.0) * 1e5).astype(np.uint64)
    whole = _digits(k // np.uint64(100_000), np.signbit(y))
    frac = (k % np.uint64(100_000)).astype(np.int32)
    tail = np.zeros((len(y), 6), dtype=np.uint8)
    tail[:, 0] = _DOT
    rest = frac
    for j in range(4, -1, -1):  # the j-th decimal; trailing zeros cut, the first one always kept
        quotient = rest // 10
        digit = (rest - quotient * 10).astype(np.uint8) + _ZERO
        rest = quotient
        if j == 0:
            tail[:, 1] = digit
        else:
            tail[:, j + 1] = np.where(frac % 10 ** (5 - j) != 0, digit, 0)
    out = np.concatenate([whole, tail], axis=1)
    if not fast.all():
        idx = np.flatnonzero(~fast)
        text = list(map(str, y[idx].tolist()))
        width = max(out.shape[1], max(map(len, text)))
        if width > out.shape[1]:
            out = np.concatenate([out, np.zeros((len(y), width - out.shape[1]), dtype=np.uint8)], axis=1)
        out[idx] = _text_rows(text, width)
    return out


def _numeric_matrix(series: pd.Series) -> np.ndarray | None:
    """BLADE's text of a plain numpy int, float64 or bool column as a byte matrix; None for other dtypes."""
    dtype = series.dtype
    if not isinstance(dtype, np.dtype):
        return None
    values = series.to_numpy()
    if dtype.kind in "iu":
        return _int_matrix(values)
    if dtype == np.float64:
        return _float_matrix(values)
    if dtype.kind == "b":
        return _bool_matrix(values)
    return None


def _joined(matrix: np.ndarray) -> bytes:
    """The rows' text joined with ":"."""
    n, width = matrix.shape
    if n == 0:
        return b""
    buf = np.empty((n, width + 1), dtype=np.uint8)
    buf[:, :width] = matrix
    buf[:, width] = _COLON
    return buf.tobytes().translate(None, b"\0")[:-1]


def _matrix_digest(matrix: np.ndarray) -> str:
    return hashlib.sha256(_joined(matrix)).hexdigest()


def numeric_strings(series: pd.Series) -> np.ndarray | None:
    """BLADE's strings of a plain numpy int, float64 or bool column (one string per element, so a row subset
    of a column has the row subset of its strings); None for every other dtype."""
    matrix = _numeric_matrix(series)
    if matrix is None:
        return None
    out = np.empty(len(matrix), dtype=object)
    if len(matrix):
        out[:] = _joined(matrix).decode("ascii").split(":")
    return out


def _digest(strings: Any) -> str:
    return hashlib.sha256(":".join(strings).encode("utf-8")).hexdigest()


def blade_value_hash(series: pd.Series) -> str:
    fast = _numeric_matrix(series)
    if fast is not None:
        return _matrix_digest(fast)
    return _digest(blade_strings(series).astype(str).tolist())


def _content_digest(data: bytes | memoryview) -> bytes:
    """The cache's content key: BLAKE3, cryptographic (a column cannot be made to collide with another) and
    several times faster than SHA-256 even where SHA-256 has hardware support."""
    return blake3.blake3(data).digest()


def _array_bytes(values: np.ndarray) -> memoryview:
    """The bytes of a numeric array, without a copy when it is contiguous."""
    return np.ascontiguousarray(values).data.cast("B")


def _numeric_key(values: np.ndarray) -> tuple[Any, ...]:
    """The content key of a plain numpy int, float or bool column (``dtype.str``: ``str(dtype)`` is slow)."""
    return (values.dtype.str, len(values), _content_digest(_array_bytes(values)))


POINTER_CACHE_BYTES = 256 * 1024 * 1024
"""At most about this many bytes kept alive by :class:`_SameObjects`: its object arrays (8 bytes a row) and the
strings they hold (counted in full, although most are shared with live frames); the oldest entries go first
(a forgotten entry only costs a fingerprint)."""
_STR_OVERHEAD = 49  # sys.getsizeof("") on 64-bit CPython: what a str object costs besides its characters


def _pointers(values: np.ndarray) -> np.ndarray:
    """The element pointers of a contiguous 1-D object array, as integers (a view of its buffer)."""
    return np.frombuffer(values.data.cast("B"), dtype=np.uintp)


class _SameObjects:
    """Fingerprints of object columns by the identity of their elements.

    An entry holds a private copy of a fingerprinted column's object array: its pointer buffer, and references
    that keep every element alive, so that no other object can be allocated at any of those addresses while the
    entry lives. A column whose pointer buffer equals an entry's (compared in full) therefore holds the very same
    objects, in the same order; the cache only takes columns of strings and missing values, which are immutable,
    so it has the content the entry's fingerprint was computed from. Lookups go through a cheap checksum of the
    pointers, which only chooses the candidates to compare."""

    def __init__(self, budget: int = POINTER_CACHE_BYTES) -> None:
        self._budget = budget
        self._bytes = 0
        self._serial = 0
        self._entries: OrderedDict[int, tuple[np.ndarray, tuple[Any, ...], bool, int]] = OrderedDict()
        self._buckets: dict[tuple[int, ...], list[int]] = {}

    @staticmethod
    def _checksum(pointers: np.ndarray) -> tuple[int, ...]:
        n = len(pointers)
        if n == 0:
            return (0,)
        return (n, int(np.bitwise_xor.reduce(pointers)), int(pointers[0]), int(pointers[n // 2]),
                int(pointers[-1]))

    def get(self, values: np.ndarray) -> tuple[tuple[Any, ...], bool] | None:
        """The fingerprint and all-strings flag of the column with exactly these elements, if kept."""
        pointers = _pointers(values)
        for serial in self._buckets.get(self._checksum(pointers), ()):
            kept, key, all_str, _ = self._entries[serial]
            if np.array_equal(_pointers(kept), pointers):
                self._entries.move_to_end(serial)
                return key, all_str
        return None

    def put(self, values: np.ndarray, key: tuple[Any, ...], all_str: bool, text_bytes: int) -> None:
        """Keep the column; ``text_bytes``: its strings' encoded size, to count what it keeps alive."""
        size = values.nbytes + text_bytes + _STR_OVERHEAD * len(values)
        if size > self._budget:
            return
        kept = values.copy()  # private: nothing else can change its pointers, and it holds its elements
        while self._entries and self._bytes + size > self._budget:
            serial, (old, _, _, old_size) = self._entries.popitem(last=False)
            self._bytes -= old_size
            bucket = self._buckets[self._checksum(_pointers(old))]
            bucket.remove(serial)
            if not bucket:
                del self._buckets[self._checksum(_pointers(old))]
        self._serial += 1
        self._entries[self._serial] = (kept, key, all_str, size)
        self._buckets.setdefault(self._checksum(_pointers(kept)), []).append(self._serial)
        self._bytes += size


class _Base:
    """A numeric column whose text was computed in full: later row subsets of it reuse it (a byte matrix,
    one row per element)."""

    def __init__(self, series: pd.Series, matrix: np.ndarray) -> None:
        self.index = series.index
        self.values = series.to_numpy()
        self.dtype = series.dtype
        self.matrix = matrix


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
        self._same_objects = _SameObjects()
        self.hits = 0
        self.subset_hits = 0
        self.misses = 0
        self.pointer_hits = 0
        """object columns whose fingerprint was found by the identity of their elements"""

    def _fingerprint(self, series: pd.Series) -> tuple[Any, ...] | None:
        return self._fingerprint_and_kind(series)[0]

    def _fingerprint_and_kind(self, series: pd.Series) -> tuple[tuple[Any, ...] | None, bool]:
        """The content key (None: not cacheable) and whether the column holds only ``str`` values."""
        dtype = series.dtype
        if isinstance(dtype, np.dtype) and dtype.kind in "iufb":
            return _numeric_key(series.to_numpy()), False
        if not (isinstance(dtype, np.dtype) and dtype.kind == "O"):
            return self._content_key(series)[:2]
        values = np.ascontiguousarray(series.to_numpy())
        if values.ndim != 1:  # pragma: no cover - a column is one-dimensional
            return self._content_key(series)[:2]
        known = self._same_objects.get(values)
        if known is not None:
            self.pointer_hits += 1
            return known
        key, all_str, text_bytes = self._content_key(series)
        if key is not None:
            self._same_objects.put(values, key, all_str, text_bytes)
        return key, all_str

    @staticmethod
    def _content_key(series: pd.Series) -> tuple[tuple[Any, ...] | None, bool, int]:
        """The content key (None: not cacheable), whether the column holds only ``str`` values, and the size
        of what was digested."""
        dtype = series.dtype
        all_str = False
        if is_object_dtype(dtype) and infer_dtype(series, skipna=True) not in ("string", "empty"):
            return None, False, 0
        try:  # all strings: joining them is several times faster than hash_pandas_object
            joined = "\x1f".join(series.to_numpy().tolist())
            all_str = True
            if joined.count("\x1f") != max(len(series) - 1, 0):
                return None, all_str, 0  # a value contains the separator: the join would be ambiguous
            data = joined.encode("utf-8", "surrogatepass")
        except TypeError:  # missing values among the strings
            try:
                data = pd.util.hash_pandas_object(series, index=False, categorize=False).to_numpy().tobytes()
            except (TypeError, ValueError):
                return None, False, 0
        return (str(dtype), len(series), _content_digest(data)), all_str, len(data)

    def _from_base(self, name: str, series: pd.Series,
                   memo: list[tuple[pd.Index, pd.Index, np.ndarray | None]] | None = None) -> np.ndarray | None:
        """``memo``: positions already looked up (the columns of one frame share its index, and the bases
        taken from one frame share theirs)."""
        base = self._bases.get(name)
        if base is None or base.dtype != series.dtype or not base.index.is_unique or not series.index.is_unique:
            return None
        known = [p for b, i, p in memo or () if b is base.index and i is series.index]
        if known:
            positions = known[0]
        else:
            try:
                positions = base.index.get_indexer(series.index)
            except (TypeError, ValueError):
                positions = None
            if memo is not None:
                memo.append((base.index, series.index, positions))
        if positions is None or (positions < 0).any():
            return None
        expected = base.values[positions]
        if not np.array_equal(expected, series.to_numpy(), equal_nan=series.dtype.kind == "f"):
            return None
        if series.dtype.kind == "f" and not np.array_equal(np.signbit(expected), np.signbit(series.to_numpy())):
            return None
        return base.matrix[positions]

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

    def _hash_object(self, key: tuple[Any, ...] | None, series: pd.Series, name: str, all_str: bool) -> str:
        """An object column: its BLADE hash and whether its date parse depends on pandas' inference, with
        one ``fillna`` and one whole-column ``to_datetime`` for both (as :func:`blade_value_hash` and
        :func:`date_parse_depends_on_inference` compute them)."""
        filled = series if all_str else series.fillna("")  # only strings: nothing to fill
        parsed = _as_dates(filled)
        value = _digest(_object_strings(filled, parsed).astype(str).tolist())
        strings = (all_str and len(series) > 0) or infer_dtype(series, skipna=True) == "string"
        flag = strings and _depends_on_inference(filled, parsed)
        if key is not None:
            self._cache[key] = value
            self._dates[key] = flag
        if flag:
            self.date_inferred.setdefault(name, set()).add(value)
        return value

    def hash(self, series: pd.Series, name: str = "") -> str:
        key, all_str = self._fingerprint_and_kind(series)
        return self._hash(series, name, key, all_str)

    def _hash(self, series: pd.Series, name: str, key: tuple[Any, ...] | None, all_str: bool,
              memo: list[tuple[pd.Index, pd.Index, np.ndarray | None]] | None = None) -> str:
        if key is not None and key in self._cache:
            self.hits += 1
            self._note_dates(key, series, name, self._cache[key])
            return self._cache[key]
        if isinstance(series.dtype, np.dtype) and series.dtype.kind == "O":
            self.misses += 1
            return self._hash_object(key, series, name, all_str)
        matrix = self._from_base(name, series, memo)
        if matrix is not None:
            self.subset_hits += 1
        else:
            self.misses += 1
            matrix = _numeric_matrix(series)
            if matrix is not None and series.index.is_unique:
                self._bases[name] = _Base(series, matrix)
        value = _matrix_digest(matrix) if matrix is not None else blade_value_hash(series)
        if key is not None:
            self._cache[key] = value
        self._note_dates(key, series, name, value)
        return value

    def hash_frame(self, frame: pd.DataFrame) -> dict[str, str]:
        """``{column: hash}``; for a duplicated column name the last one wins, as in BLADE."""
        out: dict[str, str] = {}
        memo: list[tuple[pd.Index, pd.Index, np.ndarray | None]] = []
        get_array = getattr(frame, "_get_column_array", None)  # pandas 2: the column's array, no Series built
        for i, name in enumerate(frame.columns):
            values = get_array(i) if get_array is not None else None
            if isinstance(values, np.ndarray) and values.dtype.kind in "iufb":
                key = _numeric_key(values)
                if key in self._cache:  # the same key _fingerprint computes for this column
                    self.hits += 1
                    out[str(name)] = self._cache[key]
                    continue
                out[str(name)] = self._hash(frame.iloc[:, i], str(name), key, False, memo)  # key computed once
                continue
            out[str(name)] = self.hash(frame.iloc[:, i], str(name))
        return out

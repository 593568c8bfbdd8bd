"""Column profiles in the shape of BLADE's ``info.json`` data dictionary (LIDA's "data summary").

The rules were read off BLADE's shipped ``info.json`` files against their ``data.csv`` read with
``pd.read_csv`` defaults, and reproduce every dtype, count, min, max, std and sample in them except the two
fields listed under "Deliberate differences":

- ``dtype``: integer and float columns are ``number``; ``bool`` columns are ``boolean``; an object (text)
  column is ``date`` when ``pd.to_datetime`` parses the whole column, otherwise ``category`` when
  ``num_unique_values / len(column) < 0.5`` (the length counts missing cells) and ``string`` when not.
- ``number``: ``std`` is the sample standard deviation (``ddof=1``, missing cells skipped); ``min`` / ``max``
  are ints for integer columns and floats for float columns (an integer column with a missing cell is read by
  pandas as float, so its min / max are floats, as in BLADE).
- ``date``: ``min`` / ``max`` are the earliest / latest cells, as they are written in the CSV.
- ``samples``: up to ``n_samples`` of the column's distinct non-missing values, in order of first
  appearance, drawn with ``pandas.Series.sample(random_state=42)``.
- ``num_unique_values``: distinct non-missing values. ``semantic_type`` is ``""``.

Bounded in time: a text cell longer than :data:`MAX_DATE_CHARS` characters (blanks at its ends not counted)
is never a date, so such a column is ``category`` / ``string`` without asking ``pd.to_datetime``, whose
fallback parser (dateutil) takes time quadratic in a cell's length (a 0.8 MB digits-only cell took 41 s, a
50 MB one never finished). The longest date text in any BLADE dataset has 19 characters; every other rule is
linear in the data. A text sample longer than :data:`MAX_SAMPLE_CHARS` is cut there (ending in ``…``), so one
huge cell does not travel into ``info.json``, the database and every page showing the dictionary (BLADE's
longest sample has 51 characters).

Deliberate differences (a correct computation where BLADE's files are wrong; see the test module):

- An object column whose non-missing cells are all ``True`` / ``False`` (a boolean column with missing
  cells) is ``boolean``; BLADE's toy data calls it ``category`` because the missing cells make pandas read it
  as object.
- Date ``min`` / ``max`` are compared as dates and reported in the CSV's own text; BLADE compares the text
  (right only when the text sorts like the dates) and, when the column has missing cells, writes a parsed
  timestamp instead (``"2024-01-01 00:00:00"`` for a cell ``2024-01-01``).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any, Literal

import numpy as np
import pandas as pd

from exports.blade_info import FieldProperties, FieldSpec

__all__ = ["MAX_DATE_CHARS", "MAX_SAMPLE_CHARS", "SAMPLE_RANDOM_STATE", "profile_column", "profile_columns"]

#: The seed BLADE's summaries were drawn with; keeping it reproduces their samples exactly.
SAMPLE_RANDOM_STATE = 42

#: ``category`` when distinct values / rows is below this, ``string`` otherwise.
_CATEGORY_RATIO = 0.5

#: Longest sample text kept in a profile; longer ones are cut and end in "…".
MAX_SAMPLE_CHARS = 200

#: A cell with more characters than this (ends stripped) is not a date ("Wednesday, 30 September 2020
#: 12:34:56.123456789 +05:30" has 56).
MAX_DATE_CHARS = 100


def profile_columns(
    df: pd.DataFrame,
    *,
    n_samples: int = 3,
    descriptions: Mapping[str, str] | None = None,
) -> list[FieldSpec]:
    """Profile every column of ``df`` as an entry of BLADE's ``data_desc.fields``.

    Args:
        df: the table, ideally as read by ``pd.read_csv`` with default arguments (that is how the rules
            were calibrated).
        n_samples: how many example values to keep per column.
        descriptions: column name -> human description; columns without one get ``""``.

    Returns:
        One :class:`FieldSpec` per column, in column order.
    """
    descriptions = descriptions or {}
    return [
        profile_column(
            df.iloc[:, position],
            name=str(column),
            n_samples=n_samples,
            description=descriptions.get(str(column), ""),
        )
        for position, column in enumerate(df.columns)
    ]


def profile_column(
    series: pd.Series, *, name: str | None = None, n_samples: int = 3, description: str = ""
) -> FieldSpec:
    """Profile one column; see the module docstring for the rules."""
    column = str(series.name) if name is None else name
    dtype = _classify(series)
    kwargs: dict[str, Any] = {"dtype": dtype}
    if dtype == "number":
        kwargs.update(_number_stats(series))
    elif dtype == "date":
        kwargs.update(_date_range(series))
    kwargs["samples"] = _samples(series, n_samples)
    kwargs["num_unique_values"] = int(series.nunique())
    kwargs["semantic_type"] = ""
    kwargs["description"] = description
    return FieldSpec(column=column, properties=FieldProperties(**kwargs))


def _classify(series: pd.Series) -> str:
    dtype = series.dtype
    if pd.api.types.is_bool_dtype(dtype):
        return "boolean"
    if pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_complex_dtype(dtype):
        return "number"
    if pd.api.types.is_datetime64_any_dtype(dtype):
        return "date"
    if isinstance(dtype, pd.CategoricalDtype):
        return "category"
    present = series.dropna()
    if len(present) and all(isinstance(value, bool | np.bool_) for value in present):
        return "boolean"
    if len(present) and not _has_long_text(present) and _parse_dates(series, errors="raise") is not None:
        return "date"
    ratio = series.nunique() / len(series) if len(series) else 0.0
    return "category" if ratio < _CATEGORY_RATIO else "string"


def _has_long_text(present: pd.Series) -> bool:
    """Whether a cell is too long to be a date (linear in the text; see :data:`MAX_DATE_CHARS`)."""
    return any(isinstance(value, str) and len(value.strip()) > MAX_DATE_CHARS for value in present)


def _parse_dates(series: pd.Series, *, errors: Literal["raise", "coerce"]) -> pd.Series | None:
    """``pd.to_datetime`` of the whole column, or ``None`` when it does not parse."""
    try:
        with warnings.catch_warnings():
            # pandas warns when it cannot infer one format and falls back to parsing cell by cell.
            warnings.simplefilter("ignore")
            parsed = pd.to_datetime(series, errors=errors)
    except (ValueError, TypeError, OverflowError):
        return None
    return parsed if isinstance(parsed, pd.Series) else None


def _as_json_number(value: Any, *, integer: bool) -> int | float | None:
    if pd.isna(value):
        return None
    return int(value) if integer else float(value)


def _number_stats(series: pd.Series) -> dict[str, Any]:
    integer = pd.api.types.is_integer_dtype(series.dtype)
    return {
        "std": _as_json_number(series.std(ddof=1), integer=False),
        "min": _as_json_number(series.min(), integer=integer),
        "max": _as_json_number(series.max(), integer=integer),
    }


def _date_range(series: pd.Series) -> dict[str, Any]:
    if pd.api.types.is_datetime64_any_dtype(series.dtype):
        low, high = series.min(), series.max()
        return {
            "min": None if pd.isna(low) else str(low),
            "max": None if pd.isna(high) else str(high),
        }
    parsed = _parse_dates(series, errors="coerce")
    if parsed is None or parsed.isna().all():
        return {"min": None, "max": None}
    # Compare as dates, report the cell's own text (positions, not labels: the index may repeat).
    values = parsed.to_numpy()
    text = series.to_numpy()
    valid = ~pd.isna(values)
    positions = np.flatnonzero(valid)
    ordered = positions[np.argsort(values[valid], kind="stable")]
    return {"min": str(text[ordered[0]]), "max": str(text[ordered[-1]])}


def _samples(series: pd.Series, n_samples: int) -> list[Any]:
    distinct = pd.Series(series.dropna().unique())
    if n_samples <= 0 or distinct.empty:
        return []
    drawn = distinct.sample(n=min(n_samples, len(distinct)), random_state=SAMPLE_RANDOM_STATE).tolist()
    return [_json_scalar(value) for value in drawn]


def _json_scalar(value: Any) -> Any:
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, pd.Timestamp | np.datetime64):
        return str(pd.Timestamp(value))
    if isinstance(value, str) and len(value) > MAX_SAMPLE_CHARS:
        return value[: MAX_SAMPLE_CHARS - 1] + "…"
    if isinstance(value, bool | int | float | str) or value is None:
        return value
    text = str(value)
    return text if len(text) <= MAX_SAMPLE_CHARS else text[: MAX_SAMPLE_CHARS - 1] + "…"

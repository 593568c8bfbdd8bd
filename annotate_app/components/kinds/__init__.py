"""Page components of the task kinds, found by the ``view`` name a kind declares (evaluation/tasks/).

A kind that shows a drill-down names a module here (or, from another package, its component's full module path) (``analyses`` → :mod:`annotate_app.components.kinds.analyses`)
holding ``drilldown(run, user, cfg)`` and, if it ranks runs on the leaderboard, ``leaderboard_notes(rows)`` and
``leaderboard_charts(rows, container)``. The leaderboard's table itself is drawn from the kinds' column specs by
:func:`leaderboard_frame`, so a kind's columns need no page code. A decision-item kind whose ``agenda_view`` names
a module here is drawn on a meeting's agenda by its ``agenda_item(item, status_line)``.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from types import ModuleType
from typing import Any

import pandas as pd
import streamlit as st

from annotate_app.components.score_charts import run_label
from annotate_app.components.transcript_view import COST_HELP, cost_text
from evaluation.tasks import Column

__all__ = ["column_config", "leaderboard_frame", "stage_component", "view_module"]


def view_module(view: str) -> ModuleType:
    """The page component of a kind's ``view``: a module of this package by its name (``analyses``), or, for a
    kind of another package, the component's full module path (``my_package.pages.my_kind``)."""
    return importlib.import_module(view if "." in view else f"{__name__}.{view}")


def stage_component(session: Any, dataset: Any) -> ModuleType | str:
    """The component that draws the curation stages of ``dataset``: that of the kind whose component claims it,
    else the default kind's. A dataset a kind imported with its gold has no stages: a sentence saying so."""
    from curation.services.kind_import import imported_by
    from evaluation.tasks import KINDS

    importer = imported_by(dataset)
    if importer is not None:
        noun = importer.release_part.noun if importer.release_part else "items"
        return (f"'{dataset.name}' holds {noun} imported with their gold: there is nothing to annotate, review or "
                "decide here. They are released as they came and agents are scored against them.")
    modules = [view_module(k.stages) for k in KINDS.values() if k.stages]
    claimed = next((m for m in modules if not m.DEFAULT and m.claims(session, dataset)), None)
    default = next((m for m in modules if m.DEFAULT), None)
    found = claimed or default
    if found is None:
        return f"No registered kind curates '{dataset.name}'."
    return found


def _ci(v: Any, lo: Any, hi: Any) -> str:
    if v is None:
        return "undefined"
    return f"{v:.2f} [{lo:.2f}, {hi:.2f}]" if lo is not None and hi is not None else f"{v:.2f}"


def leaderboard_frame(rows: Sequence[dict[str, Any]], columns: Sequence[Column]) -> pd.DataFrame:
    """The leaderboard as shown: the run, its release and marks, then each kind column as its spec says, then
    how it was scored and whether it is stale."""
    def shown(r: dict[str, Any], c: Column) -> Any:
        return _ci(r.get(c.key), r.get(f"{c.key}.low"), r.get(f"{c.key}.high")) if c.format == "ci" else r.get(c.key)

    return pd.DataFrame([{
        "run": run_label(r), "strategy": r.get("strategy") or "",
        "cost": cost_text(r.get("cost"), agent_run=bool(r.get("agent_run"))),
        "release": r["release"], "official": r["official"],
        "overrides": f"✎ {r['overrides']}" if r["overrides"] else "",
        **{c.label: shown(r, c) for c in columns},
        "judge": r["judge"], "mode": r["mode"], "stale": r["stale"]} for r in rows])


def column_config(columns: Sequence[Column]) -> dict[str, Any]:
    """Streamlit column formats for the kind columns (numbers with two decimals), and the cost's help."""
    return {"cost": st.column_config.TextColumn(help=COST_HELP),
            **{c.label: st.column_config.NumberColumn(format="%.2f", help=c.help or None)
               for c in columns if c.format == "number"}}

"""The toy kind's page component (a kind from another package names its component by module path)."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import streamlit as st

from curation.models import ScoringRun, User
from curation.services.scoring import stored_result


def drilldown(run: ScoringRun, user: User, cfg: Any) -> None:
    items = json.loads(stored_result(run, cfg.artifact_store()))
    acc = (run.scores_effective or {}).get("toyquiz", {}).get("accuracy")
    st.metric("Toy accuracy", "—" if acc is None else f"{acc:.2f}")
    st.dataframe(pd.DataFrame(items), hide_index=True, key="details.toyquiz.items")
    st.caption(f"Run {run.id} by {run.agent}: {len(items)} toy questions, each right or wrong by its one word.")

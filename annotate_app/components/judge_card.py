"""The judge validation card: agreement of each judge with the experts, next to BLADE's reported accuracies."""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from annotate_app.components.score_charts import confusion_figure
from evaluation.agreement import AgreementReport

KIND_LABELS = {"variable": "variable matching", "model": "model matching", "context": "HMS context matching",
               "variables": "HMS variable overlap", "relationship": "HMS relationship level",
               "reproducibility": "reproducibility verdicts (inspector)"}


FEW_LABELS = 10
"""Below this many expert labels, agreement and κ are shown with a note that they are too few to read."""


def judge_card(reports: Sequence[AgreementReport], *, key: str, charts: bool = True, empty: str | None = None,
               title: str = "Judge validation") -> None:
    with st.container(border=True):
        st.markdown(f"**{title}**")
        if not reports:
            st.caption(empty or "No expert labels yet. Sample judge decisions on the Judge validation page and label "
                       "them; agreement with the experts shows here.")
            return
        for r in reports:
            kappa = "undefined" if r.kappa is None else f"{r.kappa:.2f}"
            agree = "—" if r.percent_agreement is None else f"{r.percent_agreement:.0%}"
            blade = f" · BLADE reports {r.blade_reported:.0%}" if r.blade_reported is not None else ""
            few = (f" · only {r.n} expert label{'' if r.n == 1 else 's'}: too few to read (wait for "
                   f"{FEW_LABELS})") if r.n < FEW_LABELS else ""
            st.markdown(f"{r.judge} judge, {KIND_LABELS.get(r.kind, r.kind)}: **{agree}** agreement, κ {kappa} "
                        f"(n = {r.n}){blade}{few}")
            if charts:
                st.plotly_chart(confusion_figure(r.matrix, r.labels, f"{r.judge} · {r.kind}"),
                                key=f"{key}.{r.judge}.{r.kind}")

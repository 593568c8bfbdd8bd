"""The judge validation card: agreement of each judge with the experts, next to BLADE's reported accuracies."""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from annotate_app import context
from annotate_app.components.score_charts import confusion_figure
from curation.models import User
from curation.services.facet_judgements import facet_agreement
from curation.services.judge_validation import agreement_card
from evaluation.agreement import AgreementReport
from evaluation.tasks import TaskKind, kinds_with

__all__ = ["FEW_LABELS", "judge_card", "judged_titles", "kind_judge_card"]


FEW_LABELS = 10
"""Below this many expert labels, agreement and κ are shown with a note that they are too few to read."""


def judged_titles() -> dict[str, str]:
    """What the card calls each kind of judgement experts label, as the kinds declare them (``TaskKind.judged``)."""
    return {label: title for kind in kinds_with("judged") for label, title in kind.judged.items()}


def kind_judge_card(kind: TaskKind, user: User, *, key: str, charts: bool = True, title: str = "Judge validation",
                    shared: bool = True) -> None:
    """The judge-validation card of ``kind``: its judge's agreement with the experts per facet, for a kind whose
    judge's verdict has facets (:attr:`TaskKind.facet_judging`); otherwise the shared card of sampled decisions
    (only if ``shared``)."""
    judging = kind.facet_judging
    if judging is None:
        if shared:
            judge_card(context.attempt(lambda s: agreement_card(session=s, actor=user)) or [], key=key,
                       charts=charts, title=title)
        return
    reports = context.attempt(lambda s: facet_agreement(session=s, actor=user, kind=kind.name)) or []
    judge_card(reports, key=key, charts=charts, title=title, empty=judging.card_empty or None)


def judge_card(reports: Sequence[AgreementReport], *, key: str, charts: bool = True, empty: str | None = None,
               title: str = "Judge validation") -> None:
    with st.container(border=True):
        st.markdown(f"**{title}**")
        if not reports:
            st.caption(empty or "No expert labels yet. Sample judge decisions on the Judge validation page and label "
                       "them; agreement with the experts shows here.")
            return
        titles = judged_titles()
        for r in reports:
            kappa = "undefined" if r.kappa is None else f"{r.kappa:.2f}"
            agree = "—" if r.percent_agreement is None else f"{r.percent_agreement:.0%}"
            blade = f" · BLADE reports {r.blade_reported:.0%}" if r.blade_reported is not None else ""
            few = (f" · only {r.n} expert label{'' if r.n == 1 else 's'}: too few to read (wait for "
                   f"{FEW_LABELS})") if r.n < FEW_LABELS else ""
            st.markdown(f"{r.judge} judge, {titles.get(r.kind, r.kind)}: **{agree}** agreement, κ {kappa} "
                        f"(n = {r.n}){blade}{few}")
            if charts:
                st.plotly_chart(confusion_figure(r.matrix, r.labels, f"{r.judge} · {r.kind}"),
                                key=f"{key}.{r.judge}.{r.kind}")

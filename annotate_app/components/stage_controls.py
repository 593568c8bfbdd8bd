"""Curators' stage panel: each dataset's stage, the action that moves it on, and its review settings."""

from __future__ import annotations

import streamlit as st

from annotate_app import context, state
from curation.models import Dataset, DatasetReview, ProposerDisplay, Stage, User
from curation.services.stages import STAGE_LABELS, set_review_settings, set_stage

ACTIONS = {Stage.ANNOTATE.value: ("Open stage 2 (review)", Stage.REVIEW),
           Stage.REVIEW.value: ("Close stage 2", Stage.CLOSED),
           Stage.CLOSED.value: ("Re-open stage 2", Stage.REVIEW)}


def render_stage_controls(user: User, overview: list[tuple[Dataset, DatasetReview]]) -> None:
    with st.expander("Stages and review settings (curators)", expanded=not any(
            r.stage != Stage.ANNOTATE.value for _, r in overview)):
        for dataset, review in overview:
            c1, c2, c3, c4 = st.columns([3, 3, 3, 3], vertical_alignment="center")
            c1.markdown(f"**{dataset.name}**  \n{STAGE_LABELS[review.stage]}")
            label, target = ACTIONS[review.stage]
            if c2.button(label, key=f"stage.{dataset.id}"):
                if context.succeeded(lambda s, d=dataset.id, t=target: set_stage(session=s, actor=user, dataset_id=d,
                                                                                  stage=t)):
                    state.flash(f"{dataset.name}: {label.lower()} done.")
                    st.rerun()
            source = c3.toggle("Reviewers see the source (peer / LLM)", value=review.source_visible,
                               key=f"stage.{dataset.id}.source")
            named = c4.toggle("Reviewers see proposers' names", value=review.proposer_display == "named",
                              key=f"stage.{dataset.id}.named", disabled=not source,
                              help="Only with the source visible: an LLM item has no name, so names give it away.")
            if (source, named and source) != (review.source_visible, review.proposer_display == "named"):
                display = ProposerDisplay.NAMED if named and source else ProposerDisplay.PSEUDONYMOUS
                if context.succeeded(lambda s, d=dataset.id, v=source, p=display: set_review_settings(
                        session=s, actor=user, dataset_id=d, proposer_display=p, source_visible=v)):
                    state.flash(f"{dataset.name}: review settings saved.")
                    st.rerun()
        st.caption("Source-blind review is the default: knowing that the LLM wrote an item biases the vote.")

"""Propose an alternative while reviewing: another conceptual variable, or another transform for a variable.

The transform form runs the same sandbox sanity check as stage 1 (after the parents the item's own step runs
after) and shows its output with stage 1's check renderer; nothing is stored unless the code runs.
"""

from __future__ import annotations

import streamlit as st

from annotate_app import context, state
from annotate_app.components.check_result import render_transform
from annotate_app.components.transform_form import limits
from annotate_app.components.variable_form import TYPE_HELP, TYPES
from curation.models import User
from curation.services.alternatives import (
    TransformAlternativeInput,
    VariableAlternativeInput,
    check_alternative_transform,
    prepare_transform_check,
    propose_transform_alternative,
    propose_variable_alternative,
)
from curation.services.analyses.review_queue import ReviewItem
from evaluation.specs import VariableType


def _done(result, noun: str) -> None:
    if result is None:
        return
    if result.duplicate_of:
        state.flash(f"Alternative {noun} saved, flagged as the same decision as item "
                    f"{result.duplicate_of['target_id'][:8]}; the curator may merge them.", "warning")
    else:
        state.flash(f"Alternative {noun} saved; peers will find it in their queue.")
    st.rerun()


def render_alternative_forms(user: User, dataset_id: int, item: ReviewItem, data_columns: list[str]) -> None:
    """Every item offers a proposal (whether it does must not hint who proposed it in source-blind review): another
    conceptual variable always, another transform where the item belongs to a submitted conceptual variable."""
    title = f"Propose an alternative for “{item.concept}”" if item.concept else "Propose an alternative"
    with st.expander(title):
        kinds = ["variable", "transform"] if item.variable_id else ["variable"]
        kind = st.radio("Alternative", kinds, horizontal=True, key=f"alt.{item.key}.kind",
                        format_func=lambda k: {"variable": "Another conceptual variable",
                                               "transform": "Another transform operationalising it"}[k])
        if kind == "variable":
            k = f"alt.{item.key}.var"
            with st.form(k):
                vtype = st.selectbox("Type", TYPES, format_func=lambda t: f"{t} — {TYPE_HELP[t]}", key=f"{k}.type")
                concept = st.text_input("Concept", key=f"{k}.concept")
                moderates = st.text_input("Moderates (for a moderator)", key=f"{k}.moderates")
                rationale = st.text_area("Rationale", height=70, key=f"{k}.rationale")
                cols = st.multiselect("Columns it would use (the data's, or made by a transform)", data_columns,
                                      key=f"{k}.columns")
                if st.form_submit_button("Propose this variable", key=f"{k}.submit"):
                    _done(context.attempt(lambda s: propose_variable_alternative(
                        session=s, actor=user, dataset_id=dataset_id, seed_id=item.variable_id,
                        data=VariableAlternativeInput(variable_type=VariableType(vtype), concept=concept,
                                                      rationale=rationale, moderates=moderates, columns=cols))),
                          "variable")
            return
        k = f"alt.{item.key}.tf"
        with st.form(k):
            code = st.text_area("Code (pandas statements acting on `df`)", height=110, key=f"{k}.code")
            c1, c2 = st.columns(2)
            output = c1.text_input("Output column it creates", key=f"{k}.output")
            name = c2.text_input("Name (optional)", key=f"{k}.name", placeholder="alt_<output column>")
            rationale = st.text_area("Rationale", height=70, key=f"{k}.rationale")
            submitted = st.form_submit_button("Run the sanity check and propose", key=f"{k}.submit")
        if submitted:
            prepared = context.attempt(lambda s: prepare_transform_check(
                session=s, actor=user, dataset_id=dataset_id, seed_id=item.variable_id or "",
                parents=item.alt_parent_ids, store=context.settings().datasets_store))
            if prepared is None:
                return
            with st.spinner("Running the code on the data…"):
                try:
                    check = check_alternative_transform(data_path=prepared[0], chain=prepared[1], code=code,
                                                        output_col=output.strip(), limits=limits())
                except Exception as exc:  # noqa: BLE001 - the one helper shows it
                    context.show_error(exc)
                    return
            render_transform(check)
            _done(context.attempt(lambda s: propose_transform_alternative(
                session=s, actor=user, dataset_id=dataset_id, seed_id=item.variable_id or "", check=check,
                data=TransformAlternativeInput(spec_name=name, code=code, output_col=output, rationale=rationale,
                                               parents=item.alt_parent_ids))), "transform")

"""Conceptual variables: the analyst's list and the create / edit form."""

from __future__ import annotations

import streamlit as st

from annotate_app import context
from annotate_app.components.columns import column_from_key, column_key, column_label
from annotate_app.components.decision_actions import edit_delete, list_flash, save_or_cancel
from annotate_app.components.drafts import Draft
from annotate_app.components.examples import examples_for
from annotate_app.text import md
from curation.models import ConceptualVariable, User
from curation.services.annotation import (
    AnalysisDecisions,
    VariableInput,
    available_columns,
    delete_variable,
    save_variable,
)
from evaluation.specs import VariableType

TYPES = [t.value for t in VariableType]
TYPE_HELP = {
    "IV": "independent variable: the cause the question asks about",
    "DV": "dependent variable: the outcome",
    "Control": "a variable to adjust for",
    "Moderator": "changes the strength of another variable's effect",
}
FIELDS = ["type", "concept", "moderates", "rationale", "columns"]


def _display_type(v: ConceptualVariable) -> str:
    return "Moderator" if v.interaction else v.variable_type


def render_variables(user: User, dataset_id: int, decisions: AnalysisDecisions | None, dataset, locked: bool) -> None:
    variables = decisions.variables if decisions else []
    transforms = decisions.transforms if decisions else []
    draft = Draft("var", {"type": "IV", "concept": "", "moderates": "", "rationale": "", "columns": [],
                          "col_rationales": {}, "random_effect": False, "tags": "", "editing": None},
                  server=(user, f"annotate.{dataset_id}.var"))  # a reload brings a half-typed form back
    context.show_flash(list_flash("var"))
    if locked and not variables:
        st.info("Nothing recorded: this analysis was submitted without conceptual variables.")
    for v in variables:
        cols = ", ".join(md(c["name"]) for c in v.columns)
        with st.container(border=True):
            c1, side = st.columns([5, 2])  # Edit / Delete keep their full text at 1024 px
            c2 = c3 = side.container(horizontal=True, horizontal_alignment="right")
            extra = f" (moderates {md(v.moderates)})" if v.interaction else ""
            extra += " · random effect" if v.random_effect else ""
            extra += "".join(f" · {md(t)}" for t in v.tags)
            c1.markdown(f"**{_display_type(v)}: {md(v.concept)}**{extra}  \n{md(v.rationale)}  \n"
                        f"_columns:_ {cols}")
            if not locked:
                edit_delete(c2, c3, key=f"var.{v.id}", draft=draft, deleted=f"Deleted variable '{v.concept}'.",
                            values=lambda v=v: {
                                "type": _display_type(v), "concept": v.concept, "moderates": v.moderates,
                                "rationale": v.rationale, "columns": [column_key(c) for c in v.columns],
                                "col_rationales": {column_key(c): c.get("rationale", "") for c in v.columns},
                                "random_effect": v.random_effect, "tags": ", ".join(v.tags), "editing": v.id},
                            delete=lambda s, vid=v.id: delete_variable(session=s, actor=user, dataset_id=dataset_id,
                                                                       variable_id=vid))
    if locked:
        return
    editing = draft.data.get("editing")
    st.markdown("##### " + ("Edit conceptual variable" if editing else "New conceptual variable"))
    options = [column_key(c) for c in available_columns(dataset, transforms)]
    c1, c2 = st.columns([2, 3])  # room for the type's one-line explanation
    vtype = c1.selectbox("Type", TYPES, index=TYPES.index(draft.value("type")), key=draft.key("type"),
                         format_func=lambda t: f"{t} — {TYPE_HELP[t]}")
    concept = c2.text_input("Concept", value=draft.value("concept"), key=draft.key("concept"),
                            placeholder=examples_for(dataset).concept)
    moderates = ""
    if vtype == "Moderator":
        moderates = st.text_input("Moderates (interacts with)", value=draft.value("moderates"),
                                  key=draft.key("moderates"))
    rationale = st.text_area("Rationale", value=draft.value("rationale"), key=draft.key("rationale"), height=80)
    chosen = st.multiselect("Columns that operationalise it", options,
                            default=[c for c in draft.value("columns") if c in options], key=draft.key("columns"),
                            format_func=lambda k: column_label(k, transforms))
    col_rationales = {}
    for k in chosen:
        col_rationales[k] = st.text_input(f"Why `{column_label(k, transforms).replace('`', '')}`?",  # code: literal
                                          value=draft.data["col_rationales"].get(k, ""), key=draft.key(f"cr.{k}"))
    c1, c2 = st.columns([1, 3])
    random_effect = c1.checkbox("Random effect", value=draft.value("random_effect"), key=draft.key("random_effect"),
                                help="Enter it as a random (grouping) effect rather than a fixed effect.")
    tags = c2.text_input("Tags (comma-separated, optional)", value=draft.value("tags"), key=draft.key("tags"))
    draft.keep({"type": vtype, "concept": concept, "moderates": moderates, "rationale": rationale, "columns": chosen,
                "col_rationales": {**draft.data["col_rationales"], **col_rationales}, "random_effect": random_effect,
                "tags": tags, "editing": editing})
    save_or_cancel(prefix="var", noun="variable", draft=draft, label=lambda saved: saved.concept,
                   save=lambda s: save_variable(session=s, actor=user, dataset_id=dataset_id, variable_id=editing,
                                                data=VariableInput(
                                                    variable_type=VariableType(vtype), concept=concept,
                                                    rationale=rationale, moderates=moderates,
                                                    random_effect=random_effect, tags=tags.split(","),
                                                    columns=[column_from_key(k, col_rationales.get(k, ""))
                                                             for k in chosen])))

"""Statistical models: the analyst's list and the form whose code is fitted in the sandbox."""

from __future__ import annotations

from typing import Any

import streamlit as st

from annotate_app import context
from annotate_app.components import check_result
from annotate_app.components.columns import column_from_key, column_key, column_label
from annotate_app.components.decision_actions import edit_delete, list_flash, save_or_cancel
from annotate_app.components.drafts import Draft
from annotate_app.components.examples import examples_for
from annotate_app.components.transform_form import check_badge, limits
from annotate_app.text import md
from curation.models import Dataset, User
from curation.services.annotation import (
    AnalysisDecisions,
    ModelInput,
    available_columns,
    current_check,
    delete_model,
    model_dependencies,
    pending_checks,
    save_model,
)
from curation.services.checks import start_model_code_check
from evaluation.specs import ModelFamily

FAMILIES = [f.value for f in ModelFamily]
FIELDS = ["family", "specification", "code", "rationale", "columns", "variables", "transforms", "tags"]
DEFAULTS: dict[str, Any] = {"family": FAMILIES[0], "specification": "", "code": "", "rationale": "", "columns": [],
                            "variables": [], "transforms": [], "tags": "", "editing": None, "sanity_check": None}


def _run_check(draft: Draft, user: User, dataset_id: int) -> None:
    data = draft.capture(FIELDS)
    # derived columns need the transforms that make them (the same list the submission gate recomputes)
    transform_ids = model_dependencies(data["transforms"], [column_from_key(k) for k in data["columns"]])
    store, code = context.settings().datasets_store, data["code"]

    def begin() -> Any:
        with context.db() as session:
            return start_model_code_check(session=session, actor=user, dataset_id=dataset_id, code=code,
                                          transform_ids=transform_ids, store=store, limits=limits())

    def done(check: dict[str, Any]) -> None:
        draft.capture(FIELDS)
        draft.load({"sanity_check": check})

    check_result.start("md", begin, code=code, limit_s=limits().timeout_s, on_done=done)


def render_models(user: User, dataset_id: int, decisions: AnalysisDecisions | None, dataset: Dataset,
                  locked: bool) -> None:
    variables = decisions.variables if decisions else []
    transforms = decisions.transforms if decisions else []
    var_names = {v.id: f"{'Moderator' if v.interaction else v.variable_type}: {v.concept}" for v in variables}
    t_names = {t.id: t.spec_name for t in transforms}
    draft = Draft("md", DEFAULTS, server=(user, f"annotate.{dataset_id}.md"))  # a reload keeps it
    models = decisions.models if decisions else []
    needs = {c.decision_id: c.reason for c in pending_checks(decisions)} if decisions and not locked else {}
    context.show_flash(list_flash("md"))
    if locked and not models:
        st.info("Nothing recorded: this analysis was submitted without models.")
    for m in models:
        with st.container(border=True):
            c1, side = st.columns([5, 2])  # Edit / Delete keep their full text at 1024 px
            c2 = c3 = side.container(horizontal=True, horizontal_alignment="right")
            badge = "" if locked else check_badge(needs.get(m.id))
            c1.markdown(f"{badge} **{md(m.specification)}** · {md(m.family)}  \n{md(m.rationale)}  \n"
                        f"_columns:_ {md(', '.join(c['name'] for c in m.columns))} · _variables:_ "
                        f"{md(', '.join(var_names.get(v, v) for v in m.variable_ids))}")
            c1.code(m.code, language="python")
            if not locked:
                edit_delete(c2, c3, key=f"md.{m.id}", draft=draft, deleted="Deleted the model.",
                            values=lambda m=m: {
                                "family": m.family, "specification": m.specification, "code": m.code,
                                "rationale": m.rationale, "columns": [column_key(c) for c in m.columns],
                                "variables": m.variable_ids, "transforms": m.transform_ids,
                                "tags": ", ".join(m.tags), "editing": m.id, "sanity_check": current_check(m)},
                            delete=lambda s, mid=m.id: delete_model(session=s, actor=user, dataset_id=dataset_id,
                                                                    model_id=mid))
    if locked:
        return
    editing = draft.data.get("editing")
    st.markdown("##### " + ("Edit model" if editing else "New statistical model"))
    examples = examples_for(dataset)
    c1, c2 = st.columns([1, 1])  # the family names are long: half the width, so the picker is not clipped
    fam = draft.value("family")
    family = c1.selectbox("Family", FAMILIES, index=FAMILIES.index(fam) if fam in FAMILIES else len(FAMILIES) - 1,
                          key=draft.key("family"))
    spec = c2.text_input("Specification", value=draft.value("specification"), key=draft.key("specification"),
                         placeholder=examples.model_spec)
    code = st.text_area("Code (fits the model on `df`)", value=draft.value("code"), key=draft.key("code"), height=100,
                        placeholder=examples.model_code)
    options = [column_key(c) for c in available_columns(dataset, transforms)]
    # one picker per row: chips like "log_deaths ⟵ log_deaths" need the width (at 1024 px too)
    c1 = c2 = c3 = st.container()
    cols = c1.multiselect("Columns used", options, default=[c for c in draft.value("columns") if c in options],
                          key=draft.key("columns"), format_func=lambda k: column_label(k, transforms))
    var_ids = c2.multiselect("Conceptual variables they stand for", list(var_names),
                             default=[v for v in draft.value("variables") if v in var_names],
                             key=draft.key("variables"), format_func=lambda k: var_names[k])
    t_ids = c3.multiselect("Runs after transforms", list(t_names),
                           default=[t for t in draft.value("transforms") if t in t_names],
                           key=draft.key("transforms"), format_func=lambda k: t_names[k])
    st.button("▶ Fit model on the data", key="md.check", on_click=_run_check, args=(draft, user, dataset_id))
    if not check_result.running("md"):
        check_result.render_model(draft.data.get("sanity_check"))
    rationale = st.text_area("Rationale", value=draft.value("rationale"), key=draft.key("rationale"), height=80)
    tags = st.text_input("Tags (comma-separated, optional)", value=draft.value("tags"), key=draft.key("tags"))
    draft.keep({"family": family, "specification": spec, "code": code, "rationale": rationale, "columns": cols,
                "variables": var_ids, "transforms": t_ids, "tags": tags, "editing": editing})
    save_or_cancel(prefix="md", noun="model", draft=draft, label=lambda saved: saved.specification,
                   # the check is kept by the service only if it ran exactly this code
                   save=lambda s: save_model(session=s, actor=user, dataset_id=dataset_id, model_id=editing,
                                             check=draft.data.get("sanity_check"), data=ModelInput(
                                                 family=family, specification=spec, code=code, rationale=rationale,
                                                 tags=tags.split(","), columns=[column_from_key(k) for k in cols],
                                                 variable_ids=var_ids, transform_ids=t_ids)))

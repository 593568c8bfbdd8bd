"""Transforms: the analyst's list and the form with the sanity check that pre-fills verb and mapping."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from annotate_app import context
from annotate_app.components import check_result
from annotate_app.components.decision_actions import edit_delete, list_flash, save_or_cancel
from annotate_app.components.drafts import Draft
from annotate_app.components.examples import examples_for
from annotate_app.text import md
from curation.models import Dataset, Transform, User
from curation.services.annotation import (
    AnalysisDecisions,
    TransformInput,
    current_check,
    delete_transform,
    pending_checks,
    save_transform,
)
from curation.services.checks import start_transform_code_check
from evaluation.sandbox import SandboxLimits
from evaluation.specs import ROOT_SPEC_ID, TRANSFORM_VERBS, Branch, ColumnMapping

FIELDS = ["name", "specification", "code", "rationale", "verb", "tags"]
DEFAULTS: dict[str, Any] = {"name": "", "specification": "", "code": "", "rationale": "", "verb": "derive",
                            "mapping": [], "branches": [[ROOT_SPEC_ID]], "conditions": [""], "tags": "",
                            "editing": None, "sanity_check": None}


def limits() -> SandboxLimits:
    s = context.settings()
    return SandboxLimits(timeout_s=s.sandbox_timeout_s, memory_mb=s.sandbox_memory_mb)


def mapping_frame(mapping: list[dict[str, Any]]) -> pd.DataFrame:
    return pd.DataFrame(
        [{"inputs": ", ".join(m.get("inputs", [])), "output": m.get("output", "")} for m in mapping],
        columns=["inputs", "output"],
    )


def mapping_from_frame(frame: pd.DataFrame) -> list[ColumnMapping]:
    out = []
    for _, row in frame.fillna("").iterrows():
        inputs = [c.strip() for c in str(row["inputs"]).split(",") if c.strip()]
        if inputs or str(row["output"]).strip():
            out.append(ColumnMapping(inputs=inputs, output=str(row["output"]).strip()))
    return out


def _names(transforms: list[Transform]) -> dict[str, str]:
    return {ROOT_SPEC_ID: "raw data", **{t.id: t.spec_name for t in transforms}}


def _capture(draft: Draft) -> dict[str, Any]:
    """The form's current values (branches, conditions and the mapping editor included) into the draft."""
    data = draft.capture(FIELDS)
    branches = [list(b) for b in data["branches"]]
    conditions = list(data.get("conditions") or [""] * len(branches))
    for i in range(len(branches)):
        branches[i] = st.session_state.get(draft.key(f"branch.{i}"), branches[i])
        conditions[i] = st.session_state.get(draft.key(f"cond.{i}"), conditions[i] if i < len(conditions) else "")
    data["branches"], data["conditions"] = branches, conditions
    editor = st.session_state.get(draft.key("mapping_value"))
    if editor is not None:
        data["mapping"] = [m.model_dump() for m in mapping_from_frame(editor)]
    return data


def _run_check(draft: Draft, user: User, dataset_id: int) -> None:
    """Callback of the sanity-check button: run, then pre-fill verb and mapping from what the code did."""
    data = _capture(draft)
    branches = data["branches"]
    store, code = context.settings().datasets_store, data["code"]

    def begin() -> Any:
        with context.db() as session:
            return start_transform_code_check(session=session, actor=user, dataset_id=dataset_id, code=code,
                                              dependencies=branches[0] if branches else [ROOT_SPEC_ID],
                                              store=store, limits=limits())

    def done(check: dict[str, Any]) -> None:
        _capture(draft)
        updates: dict[str, Any] = {"sanity_check": check}
        if check.get("ok") and check.get("suggested_verb"):
            updates["verb"] = check["suggested_verb"]
            updates["mapping"] = check.get("suggested_mapping") or []
        draft.load(updates)

    check_result.start("tf", begin, code=code, limit_s=limits().timeout_s, on_done=done)


def check_badge(reason: str | None) -> str:
    """✅ when the current code passed its check after its parents' current code, else what is missing."""
    return "✅" if reason is None else f"⚠️ _needs a check: {reason}_ ·"


def render_transforms(user: User, dataset_id: int, decisions: AnalysisDecisions | None, locked: bool,
                      dataset: Dataset | None = None) -> None:
    transforms = decisions.transforms if decisions else []
    names = _names(transforms)
    needs = {c.decision_id: c.reason for c in pending_checks(decisions)} if decisions and not locked else {}
    draft = Draft("tf", DEFAULTS, server=(user, f"annotate.{dataset_id}.tf"))  # a reload keeps it
    context.show_flash(list_flash("tf"))
    if locked and not transforms:
        st.info("Nothing recorded: this analysis was submitted without transforms.")
    for t in transforms:
        with st.container(border=True):
            c1, side = st.columns([5, 2])  # Edit / Delete keep their full text at 1024 px
            c2 = c3 = side.container(horizontal=True, horizontal_alignment="right")
            alts = " | ".join(" + ".join(md(names.get(d, d)) for d in b.get("dependencies", [])) for b in t.branches)
            maps = "; ".join(f"{md(', '.join(m.get('inputs', [])) or '∅')} → {md(m.get('output') or '(whole frame)')}"
                             for m in t.mapping)
            badge = "" if locked else check_badge(needs.get(t.id))
            tag_text = "".join(f" · {md(tag)}" for tag in t.tags)
            c1.markdown(f"{badge} **{md(t.spec_name)}** · {md(t.verbs[0] if t.verbs else '?')} · after: {alts}"
                        f"{tag_text}  \n{md(t.specification)}  \n_mapping:_ {maps}")
            c1.code(t.code, language="python")
            if not locked:
                edit_delete(c2, c3, key=f"tf.{t.id}", draft=draft, deleted=f"Deleted transform '{t.spec_name}'.",
                            values=lambda t=t: {
                                "name": t.spec_name, "specification": t.specification, "code": t.code,
                                "rationale": t.rationale, "verb": t.verbs[0] if t.verbs else "derive",
                                "mapping": t.mapping, "branches": [b.get("dependencies", []) for b in t.branches],
                                "conditions": [b.get("condition", "") for b in t.branches],
                                "tags": ", ".join(t.tags), "editing": t.id, "sanity_check": current_check(t)},
                            delete=lambda s, tid=t.id: delete_transform(session=s, actor=user, dataset_id=dataset_id,
                                                                        transform_id=tid))
    if locked:
        return
    editing = draft.data.get("editing")
    st.markdown("##### " + ("Edit transform" if editing else "New transform"))
    c1, c2 = st.columns([1, 2])
    examples = examples_for(dataset, [n for k, n in names.items() if k not in (ROOT_SPEC_ID, editing)])
    name = c1.text_input("Name", value=draft.value("name"), key=draft.key("name"), placeholder=examples.transform_name)
    spec = c2.text_input("Specification", value=draft.value("specification"), key=draft.key("specification"),
                         placeholder="what it does, in words")
    parent_options = [tid for tid in names if tid != editing]
    branches = draft.data["branches"] or [[ROOT_SPEC_ID]]
    conditions = list(draft.data.get("conditions") or [])
    conditions += [""] * (len(branches) - len(conditions))
    chosen_branches, chosen_conditions = [], []
    for i, deps in enumerate(branches):
        label = "Runs after" if i == 0 else f"…or alternatively after (branch {i + 1})"
        if len(branches) == 1:
            col_deps, col_cond = st.container(), None
        else:
            col_deps = col_cond = st.container(border=True)  # parents, then condition: full width at 1024 px
        chosen_branches.append(col_deps.multiselect(label, parent_options, default=[d for d in deps if d in parent_options],
                                                    key=draft.key(f"branch.{i}"), format_func=lambda k: names.get(k, k)))
        chosen_conditions.append(col_cond.text_input(
            f"Condition of branch {i + 1} (optional)", value=conditions[i], key=draft.key(f"cond.{i}"),
            placeholder=examples.condition,
            help="Only when this path is taken: compare other transforms' branch choices with ==, in, and/or/not.",
        ) if col_cond is not None else "")
    b1 = b2 = st.container(horizontal=True)  # buttons as wide as their text, at any window width
    if b1.button("+ Add alternative parents", key="tf.add_branch",
                 help="Another justifiable order: this step could also come after other transforms."):
        draft.capture(FIELDS)
        draft.load({"branches": [*chosen_branches, [ROOT_SPEC_ID]], "conditions": [*chosen_conditions, ""]})
        st.rerun()
    if len(branches) > 1 and b2.button("− Remove last alternative", key="tf.drop_branch"):
        draft.capture(FIELDS)
        draft.load({"branches": chosen_branches[:-1], "conditions": chosen_conditions[:-1]})
        st.rerun()
    code = st.text_area("Code (pandas statements acting on `df`)", value=draft.value("code"), key=draft.key("code"),
                        height=120, placeholder=examples.transform_code)
    st.button("▶ Run sanity check", key="tf.check", on_click=_run_check, args=(draft, user, dataset_id),
              help="Runs the code on the data after its parent transforms, in an isolated sandbox.")
    if not check_result.running("tf"):
        check_result.render_transform(draft.data.get("sanity_check"))
    c1, c2 = st.columns([1, 2])
    verb_now = draft.value("verb")
    verb = c1.selectbox("Verb", TRANSFORM_VERBS, index=TRANSFORM_VERBS.index(verb_now) if verb_now in TRANSFORM_VERBS else 0,
                        key=draft.key("verb"))
    with c2:
        st.caption("Input columns → output column (leave output empty when the step acts on the whole table)")
        mapping_df = st.data_editor(mapping_frame(draft.data.get("mapping") or []), num_rows="dynamic",
                                    key=draft.key("mapping"), width="stretch",
                                    column_config={"inputs": st.column_config.TextColumn("inputs (comma-separated)"),
                                                   "output": st.column_config.TextColumn("output")})
        st.session_state[draft.key("mapping_value")] = mapping_df
    rationale = st.text_area("Rationale", value=draft.value("rationale"), key=draft.key("rationale"), height=80)
    tags = st.text_input("Tags (comma-separated, optional)", value=draft.value("tags"), key=draft.key("tags"))
    draft.keep({"name": name, "specification": spec, "code": code, "rationale": rationale, "verb": verb,
                "mapping": [m.model_dump(mode="json") for m in mapping_from_frame(mapping_df)],
                "branches": chosen_branches, "conditions": chosen_conditions, "tags": tags, "editing": editing})
    save_or_cancel(prefix="tf", noun="transform", draft=draft, label=lambda saved: saved.spec_name,
                   # the check is kept by the service only if it ran exactly this code
                   save=lambda s: save_transform(session=s, actor=user, dataset_id=dataset_id, transform_id=editing,
                                                 check=draft.data.get("sanity_check"), data=TransformInput(
                                                     spec_name=name, specification=spec, verb=verb, code=code,
                                                     rationale=rationale, mapping=mapping_from_frame(mapping_df),
                                                     tags=tags.split(","),
                                                     branches=[Branch(dependencies=b, condition=c) for b, c in
                                                               zip(chosen_branches, chosen_conditions, strict=True)])))

"""Transforms: the analyst's list and the form with the sanity check that pre-fills verb and mapping."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from annotate_app import context
from annotate_app.components.decision_actions import edit_delete, save_or_cancel
from annotate_app.components.drafts import Draft
from curation.models import Transform, User
from curation.sandbox import SandboxLimits
from curation.services.annotation import (
    AnalysisDecisions,
    TransformInput,
    delete_transform,
    save_transform,
)
from curation.services.checks import check_transform_code
from curation.specs import ROOT_SPEC_ID, TRANSFORM_VERBS, Branch, ColumnMapping

FIELDS = ["name", "specification", "code", "rationale", "verb", "tags"]
DEFAULTS: dict[str, Any] = {"name": "", "specification": "", "code": "", "rationale": "", "verb": "derive",
                            "mapping": [], "branches": [[ROOT_SPEC_ID]], "conditions": [""], "tags": "",
                            "editing": None, "check": None}


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


def _run_check(draft: Draft, user: User, dataset_id: int) -> None:
    """Callback of the sanity-check button: run, then pre-fill verb and mapping from what the code did."""
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
    store = context.settings().datasets_store
    try:
        with context.db() as session:
            result = check_transform_code(session=session, actor=user, dataset_id=dataset_id, code=data["code"],
                                          dependencies=branches[0] if branches else [ROOT_SPEC_ID],
                                          store=store, limits=limits())
    except Exception as exc:  # noqa: BLE001 - shown below the form
        data["check"] = {"ok": False, "error": str(exc), "error_kind": "setup", "code": data["code"]}
        draft.load({})
        return
    check = result.model_dump(mode="json")
    updates: dict[str, Any] = {"check": check}
    if result.ok and result.suggested_verb:
        updates["verb"] = result.suggested_verb
        updates["mapping"] = [m.model_dump() for m in result.suggested_mapping]
    draft.load(updates)


def _render_check(check: dict[str, Any] | None) -> None:
    if not check:
        return
    if not check.get("ok"):
        st.error(f"Sanity check failed: {check.get('error')}")
        if check.get("traceback"):
            st.code(check["traceback"], language="text")
        return
    change = check.get("change") or {}
    rb, ra = change.get("rows_before"), change.get("rows_after")
    msg = f"Sanity check passed in {check.get('code_seconds', 0):.2f} s. Rows: {rb:,} → {ra:,}" if rb is not None and ra is not None else "Sanity check passed."
    if rb is not None and ra is not None and ra != rb:
        msg += f" ({ra - rb:+,})"
    st.success(msg)
    parts = []
    for label, key in [("created", "created"), ("changed", "changed"), ("removed", "removed")]:
        if change.get(key):
            parts.append(f"**{label}:** " + ", ".join(f"`{c}`" for c in change[key]))
    if parts:
        st.markdown(" · ".join(parts))
    if check.get("suggested_verb"):
        st.caption(f"Verb and mapping below were filled in from what the code did "
                   f"(suggested: {check['suggested_verb']}); correct them if needed.")
    if check.get("preview"):
        st.dataframe(pd.DataFrame(check["preview"]), width="stretch", height=150)
    if check.get("stdout"):
        st.code(check["stdout"], language="text")


def render_transforms(user: User, dataset_id: int, decisions: AnalysisDecisions | None, locked: bool) -> None:
    transforms = decisions.transforms if decisions else []
    names = _names(transforms)
    draft = Draft("tf", DEFAULTS)
    for t in transforms:
        with st.container(border=True):
            c1, c2, c3 = st.columns([8, 1, 1])
            alts = " | ".join(" + ".join(names.get(d, d) for d in b.get("dependencies", [])) for b in t.branches)
            maps = "; ".join(f"{', '.join(m.get('inputs', [])) or '∅'} → {m.get('output') or '(whole frame)'}"
                             for m in t.mapping)
            ok = (t.last_check or {}).get("ok")
            badge = "✅" if ok else ("❌" if ok is False else "·")
            tag_text = "".join(f" `{tag}`" for tag in t.tags)
            c1.markdown(f"{badge} **{t.spec_name}** · `{t.verbs[0] if t.verbs else '?'}` · after: {alts}{tag_text}  \n"
                        f"{t.specification}  \n_mapping:_ {maps}")
            c1.code(t.code, language="python")
            if not locked:
                edit_delete(c2, c3, key=f"tf.{t.id}", draft=draft, deleted=f"Deleted transform '{t.spec_name}'.",
                            values=lambda t=t: {
                                "name": t.spec_name, "specification": t.specification, "code": t.code,
                                "rationale": t.rationale, "verb": t.verbs[0] if t.verbs else "derive",
                                "mapping": t.mapping, "branches": [b.get("dependencies", []) for b in t.branches],
                                "conditions": [b.get("condition", "") for b in t.branches],
                                "tags": ", ".join(t.tags), "editing": t.id, "check": t.last_check},
                            delete=lambda s, tid=t.id: delete_transform(session=s, actor=user, dataset_id=dataset_id,
                                                                        transform_id=tid))
    if locked:
        return
    editing = draft.data.get("editing")
    st.markdown("##### " + ("Edit transform" if editing else "New transform"))
    c1, c2 = st.columns([1, 2])
    name = c1.text_input("Name", value=draft.value("name"), key=draft.key("name"), placeholder="e.g. log_deaths")
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
            col_deps, col_cond = st.columns([3, 2])
        chosen_branches.append(col_deps.multiselect(label, parent_options, default=[d for d in deps if d in parent_options],
                                                    key=draft.key(f"branch.{i}"), format_func=lambda k: names.get(k, k)))
        chosen_conditions.append(col_cond.text_input(
            f"Condition of branch {i + 1} (optional)", value=conditions[i], key=draft.key(f"cond.{i}"),
            placeholder="e.g. remove_outliers.index == 0",
            help="Only when this path is taken: compare other transforms' branch choices with ==, in, and/or/not.",
        ) if col_cond is not None else "")
    b1, b2, _ = st.columns([2, 2, 3])
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
                        height=120, placeholder="df['log_deaths'] = np.log(df['alldeaths'] + 1)")
    st.button("▶ Run sanity check", key="tf.check", on_click=_run_check, args=(draft, user, dataset_id),
              help="Runs the code on the data after its parent transforms, in an isolated sandbox.")
    _render_check(draft.data.get("check"))
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
    save_or_cancel(prefix="tf", noun="transform", draft=draft, label=lambda saved: saved.spec_name,
                   # the check is kept by the service only if it ran exactly this code
                   save=lambda s: save_transform(session=s, actor=user, dataset_id=dataset_id, transform_id=editing,
                                                 check=draft.data.get("check"), data=TransformInput(
                                                     spec_name=name, specification=spec, verb=verb, code=code,
                                                     rationale=rationale, mapping=mapping_from_frame(mapping_df),
                                                     tags=tags.split(","),
                                                     branches=[Branch(dependencies=b, condition=c) for b, c in
                                                               zip(chosen_branches, chosen_conditions, strict=True)])))

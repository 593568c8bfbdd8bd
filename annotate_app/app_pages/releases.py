"""Releases (curators and admins): cut a versioned, immutable release; list, compare and download them."""

import re

import pandas as pd
import streamlit as st

from annotate_app import context, state
from annotate_app.text import plural
from curation.models import Role
from curation.services.drafts import discard_draft, load_draft, save_draft
from curation.services.release_exports import export_skips, release_archive
from curation.services.release_store import release_store_problems
from curation.services.releases import (
    cut_release,
    diff_release_versions,
    ground_truth_nouns,
    list_release_records,
    next_version,
    release_candidates,
    release_dataset_rows,
    release_documents,
    summary_totals,
    unreviewed_note,
    withheld_in_release,
)

user = context.require_user(Role.CURATOR, Role.ADMIN)
NOTES, NOTES_CLEAR, NOTES_KEPT = "releases.notes", "fp.releases.notes_clear", "fp.releases.notes_kept"
VERSION, DOWNLOAD = "releases.version", "releases.download"
TAB, CUT, CUT_SHOWN = "releases.tab", "Cut a release", "fp.releases.cut_shown"
PREPARED, PREPARED_FOR = "fp.releases.prepared", "fp.releases.prepared_for"  # the archives prepared, and of which


def _keep_notes(text: str) -> None:
    """Keep the notes being typed on the server when they changed; empty notes leave nothing behind."""
    if text == st.session_state.get(NOTES_KEPT, ""):
        return
    if context.succeeded(lambda s: save_draft(session=s, actor=user, name=NOTES, data={"notes": text}) if text
                         else discard_draft(session=s, actor=user, name=NOTES)):
        st.session_state[NOTES_KEPT] = text

cfg = context.settings()
artifacts = cfg.artifact_store()
st.title("📦 Releases")
st.caption("A release is an immutable, versioned snapshot of the submitted ground truth, with a checksum for every "
           "file, a dataset card and a changelog (both shown below a release's contents, and inside its zip). It is "
           "what agents are evaluated against.")

records = context.attempt(lambda s: list_release_records(session=s, actor=user)) or []
problems = context.attempt(lambda s: release_store_problems(session=s, actor=user, artifacts=artifacts)) or []
if problems:
    with st.expander(f"⚠️ {len(problems)} problem(s) in the releases folder need a person's attention"):
        st.markdown("\n".join(f"- {p}" for p in problems))
        st.caption("Nothing set aside is served. Move a folder back only once its release record is restored; "
                   "otherwise delete it from the quarantine folder.")
with_truth, empty = context.attempt(lambda s: release_candidates(session=s, actor=user)) or ([], [])
tab_list, tab_cut, tab_diff = st.tabs(["Releases", CUT, "Compare"], key=TAB, on_change="rerun")

# Release notes are kept on the server while they are typed (a reload brings them back), so they live outside a
# form (a form sends nothing before its button), under one stable key: one text area, whatever reruns.
if state.get(NOTES_CLEAR):  # the last cut used them: an empty box and the next version for the next release
    st.session_state.pop(NOTES_CLEAR, None)
    st.session_state[NOTES] = ""
    st.session_state[VERSION] = next_version(records)
elif NOTES not in st.session_state:  # a new browser session: what was typed before the reload
    kept = (context.attempt(lambda s: load_draft(session=s, actor=user, name=NOTES)) or {}).get("notes", "")
    st.session_state[NOTES] = st.session_state[NOTES_KEPT] = str(kept)

st.session_state.setdefault(VERSION, next_version(records))  # a stable key: one box through reruns
# A value put in session_state reaches the browser only on the run that put it there. When the tab is opened while
# that run is still arriving (a slow server, just after a reload), the browser drops the rest of it and draws the
# box from the next run at its empty default, and would send "" back, discarding the kept notes. So on the run that
# opens this tab, give the browser the boxes' values again.
if state.get(TAB) == CUT and state.get(CUT_SHOWN) != CUT:
    for key in (NOTES, VERSION):
        st.session_state[key] = st.session_state[key]

with tab_cut:
    c1, c2 = st.columns([1, 3])
    version = c1.text_input("Version (MAJOR.MINOR.PATCH)", key=VERSION)
    chosen = c2.multiselect("Datasets", with_truth, default=with_truth,
                            help=f"The datasets that have ground truth ({', '.join(ground_truth_nouns())}).")
    add_empty = c2.checkbox(f"Also release the datasets without ground truth yet ({', '.join(empty)}), with their "
                            "data alone", key=f"releases.include_empty.{state.form_version('cut_release')}") if empty else False
    notes = st.text_area("Release notes", placeholder="What changed, and why", height=90, key=NOTES)
    _keep_notes(notes)
    go = st.button("Cut release", type="primary", key="releases.cut")
st.session_state[CUT_SHOWN] = state.get(TAB)  # set once the tab's boxes were drawn (a run cut short sets nothing)
if go:
    bar = tab_cut.progress(0.0, text="starting…")
    record = context.attempt(lambda s: cut_release(
        session=s, actor=user, version=version, notes=notes, artifacts=artifacts, store=cfg.datasets_store,
        dataset_names=[*chosen, *(empty if add_empty else [])] if with_truth or add_empty else None, progress=lambda stage, f: bar.progress(min(max(f, 0.0), 1.0), text=stage)))
    if record is not None:
        context.attempt(lambda s: discard_draft(session=s, actor=user, name=NOTES))
        st.session_state[NOTES_CLEAR] = True  # an empty box for the next release (set before it is drawn)
        state.bump_form("cut_release")  # and the empty-datasets choice unticked again
        st.session_state[DOWNLOAD] = record.version  # the release just cut is the one shown (not drawn yet this run)
        cut = (f"Release {record.version} cut: {plural(len(record.summary), 'dataset')} (manifest "
               f"{record.manifest_sha256[:12]}).")  # not "…." : it read as a double period
        pending = unreviewed_note(record.summary)
        state.flash(f"{cut} {pending}" if pending else cut, "warning" if pending else "success")
        st.rerun()

with tab_list:
    if not records:
        st.info("No releases yet: cut the first one on the next tab.")
    else:
        totals = {r.version: summary_totals(r.summary) for r in records}
        counted = list(dict.fromkeys(k for t in totals.values() for k in t))  # what some release holds
        st.dataframe(pd.DataFrame([{
            "version": r.version, "created (UTC)": r.created_at, "datasets": ", ".join(r.summary),
            **{k: totals[r.version].get(k, 0) for k in counted}, "notes": r.notes,
            "manifest": r.manifest_sha256[:12]} for r in records]),
            hide_index=True, width="stretch",
            column_config={"created (UTC)": st.column_config.DatetimeColumn(format="YYYY-MM-DD HH:mm")})
        pick = st.selectbox("Download release", [r.version for r in records], key=DOWNLOAD)
        contents = context.attempt(lambda s: release_dataset_rows(session=s, actor=user, version=pick)) or []
        st.markdown(f"**What release {pick} holds**")
        groups: dict[str, list[dict]] = {}
        for row in contents:  # datasets holding the same things share a table (and its columns)
            groups.setdefault(row["holds"], []).append(row)
        for holds, rows in groups.items():
            about = rows[0]["about"]
            st.caption(f"{holds[:1].upper()}{holds[1:]}: {plural(len(rows), 'dataset')}" + (f". {about}" if about else ""))
            st.dataframe(pd.DataFrame(rows).drop(columns=["holds", "about"]), hide_index=True, width="stretch")
        withheld = context.attempt(lambda s: withheld_in_release(session=s, actor=user, version=pick)) or {}
        for why in withheld.values():
            st.info(why + " This release cannot be downloaded by you until then.", icon="🙈")
        docs = None if withheld else context.attempt(lambda s: release_documents(session=s, actor=user, version=pick,
                                                                                 artifacts=artifacts))
        if docs is not None:
            with st.expander("📄 Dataset card (README.md of the release)"):
                st.markdown(re.sub(r"(?m)^(#+) ", r"\1## ", docs.card))
            against = f"against release {docs.previous}" if docs.previous else "the first release"
            with st.expander(f"📝 Changelog ({against})"):
                st.markdown(re.sub(r"(?m)^(#+) ", r"\1## ", docs.changelog))
        st.markdown(f"**Zip archives of release {pick}**")
        # Prepared archives stay offered (one row per layout, full labels) until another release is picked.
        prepared: dict[str, tuple[str, bytes]] = state.get(PREPARED, {}) if state.get(PREPARED_FOR) == pick else {}
        for fmt, label in [("native", "forkpaths layout (.zip)"), ("blade", "BLADE layout (.zip)"),
                           ("discoverybench", "DiscoveryBench layout (.zip)"),
                           ("hf", "Hugging Face dataset (.zip)")]:
            skips = context.attempt(lambda s, f=fmt: export_skips(session=s, actor=user, version=pick, fmt=f)) or {}
            if len(skips) == len(contents) and skips:
                st.caption(f"No {label.split(' (')[0]}: none of this release's datasets fits it.")
                continue
            row = st.container(horizontal=True, vertical_alignment="center")
            if row.button(f"Prepare {label}", key=f"releases.prepare.{fmt}", disabled=bool(withheld)):
                archive = context.attempt(lambda s, f=fmt: release_archive(session=s, actor=user, version=pick,
                                                                           fmt=f, artifacts=artifacts))
                if archive is not None:
                    prepared[fmt] = (archive[0], archive[1])
                    state.put(PREPARED, prepared)
                    state.put(PREPARED_FOR, pick)
            if fmt in prepared:
                name, data = prepared[fmt]
                row.download_button(f"⬇ Download {name}", data, file_name=name, mime="application/zip",
                                    key=f"releases.dl.{fmt}", on_click="ignore")
            if skips:
                row.caption(f"Leaves out {', '.join(f'`{n}`' for n in skips)} (named in NOT_EXPORTED.md).")

with tab_diff:
    if len(records) < 2:
        st.info("Cut at least two releases to compare them.")
    else:
        versions = [r.version for r in records]
        c1, c2 = st.columns(2)
        old = c1.selectbox("From", versions, index=1, key="releases.old")
        new = c2.selectbox("To", versions, index=0, key="releases.new")
        comparison = context.attempt(lambda s: diff_release_versions(session=s, actor=user, old=old, new=new,
                                                                     artifacts=artifacts))
        if comparison is not None:
            for name, why in comparison.withheld.items():
                st.info(f"**`{name}` is left out of this comparison.** {why}", icon="🙈")
            # the changelog's own headings, two levels down to sit inside the page
            st.markdown(re.sub(r"(?m)^(#+) ", r"\1## ", comparison.changelog()))

"""The sanity check's display: it runs in the background with its elapsed time and a Cancel button, then shows
what the code did: the row change, the columns created or changed (first in the preview), what it printed.

Code, output and error text are shown literally (code blocks, code spans), never as Markdown.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd
import streamlit as st

from annotate_app import state
from evaluation.sandbox import JobHandle

INLINE_WAIT_S = 1.5
"""A check that finishes this fast is shown at once, without the running display."""
POLL_S = 0.5
MAX_SHOWN_OUTPUT = 5_000


@dataclass
class RunningCheck:
    handle: JobHandle[Any]
    code: str
    on_done: Callable[[dict[str, Any]], None]
    limit_s: float


def start(prefix: str, begin: Callable[[], JobHandle[Any]], *, code: str, limit_s: float,
          on_done: Callable[[dict[str, Any]], None]) -> None:
    """Button callback: start the check; show it at once if it is quick, else poll it (see :func:`render`)."""
    previous = state.check_job(prefix)
    if previous is not None:
        previous.handle.cancel()
        state.drop_check_job(prefix)
    try:
        handle = begin()
    except Exception as exc:  # noqa: BLE001 - shown with the check (isolation unavailable, unknown parent...)
        on_done({"ok": False, "error": str(exc), "error_kind": "setup", "code": code})
        return
    job = RunningCheck(handle, code, on_done, limit_s)
    try:
        handle.result(timeout=INLINE_WAIT_S)
    except TimeoutError:
        state.put_check_job(prefix, job)
        return
    except Exception:  # noqa: BLE001, S110 - _finish shows it
        pass
    _finish(prefix, job)


def _finish(prefix: str, job: RunningCheck) -> None:
    state.drop_check_job(prefix)
    try:
        check = job.handle.result().model_dump(mode="json")
    except Exception as exc:  # noqa: BLE001 - the sandbox itself failed: a sentence, shown with the check
        check = {"ok": False, "error": str(exc), "error_kind": "setup", "code": job.code}
    job.on_done(check)


@st.fragment(run_every=POLL_S)
def _running(prefix: str) -> None:
    job: RunningCheck | None = state.check_job(prefix)
    if job is None:
        return
    if job.handle.done():
        _finish(prefix, job)
        st.rerun()  # the whole page: the result and the suggestions it pre-fills
    c1, c2 = st.columns([5, 1], vertical_alignment="center")
    c1.info(f"Running the sanity check… {job.handle.elapsed:.1f} s (it is stopped at {job.limit_s:g} s)", icon="⏳")
    if c2.button("Cancel", key=f"{prefix}.check_cancel", help="Stop the check now; nothing it did is kept."):
        job.handle.cancel()
        with contextlib.suppress(Exception):  # _finish shows it
            job.handle.result(timeout=15)
        _finish(prefix, job)
        st.rerun()


def running(prefix: str) -> bool:
    """Show the running check of form ``prefix`` (elapsed time, Cancel); False when none is running."""
    if state.check_job(prefix) is None:
        return False
    _running(prefix)
    return True


def code_span(text: str) -> str:
    """``text`` as a Markdown code span, shown literally whatever it contains (backticks included)."""
    longest = run = 0
    for char in text:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _failure(title: str, check: dict[str, Any]) -> None:
    if check.get("error_kind") == "cancelled":
        st.warning("Cancelled: the code was stopped before it finished.", icon="⏹️")
    else:
        st.error(title, icon="❌")
    st.code(str(check.get("error") or "unknown error"), language=None, wrap_lines=True)
    if check.get("traceback"):
        st.code(check["traceback"], language=None)


def _printed(check: dict[str, Any]) -> None:
    text = str(check.get("stdout") or "")
    if not text:
        return
    shown = text[:MAX_SHOWN_OUTPUT]
    if len(text) > len(shown):
        shown += f"\n… {len(text) - len(shown):,} more characters not shown"
    st.caption("What the code printed")
    st.code(shown, language=None, height=200 if shown.count("\n") > 10 else "content")


def preview_frame(check: dict[str, Any]) -> pd.DataFrame:
    """The preview rows with the created, then the changed columns first."""
    frame = pd.DataFrame(check.get("preview") or [])
    change = check.get("change") or {}
    first = [c for c in [*(change.get("created") or []), *(change.get("changed") or [])] if c in frame.columns]
    return frame[first + [c for c in frame.columns if c not in first]]


def render_transform(check: dict[str, Any] | None) -> None:
    if not check:
        return
    if not check.get("ok"):
        _failure("Sanity check failed", check)
        _printed(check)
        return
    change = check.get("change") or {}
    rb, ra = change.get("rows_before"), change.get("rows_after")
    msg = f"Sanity check passed in {check.get('code_seconds', 0):.2f} s."
    if rb is not None and ra is not None:
        msg += f" Rows: {rb:,} → {ra:,}" + (f" ({ra - rb:+,})." if ra != rb else " (unchanged).")
    st.success(msg)
    parts = [f"**{label}:** " + ", ".join(code_span(str(c)) for c in change[key])
             for label, key in [("created", "created"), ("changed", "changed"), ("removed", "removed")]
             if change.get(key)]
    st.markdown(" · ".join(parts) if parts else "No column was created, changed or removed.")
    if check.get("suggested_verb"):
        st.caption(f"Verb and mapping below were filled in from what the code did "
                   f"(suggested: {check['suggested_verb']}); correct them if needed.")
    _printed(check)
    if check.get("preview"):
        st.dataframe(preview_frame(check), width="stretch", height=150, hide_index=True)


def render_model(check: dict[str, Any] | None) -> None:
    if not check:
        return
    if not check.get("ok"):
        _failure("The model could not be fitted", check)
        _printed(check)
        return
    st.success(f"The model was fitted in {check.get('code_seconds', 0):.2f} s.")
    _printed(check)
    st.caption("Summary of the fitted result")
    st.code(check.get("summary") or "", language=None)


def render_supporting(check: dict[str, Any] | None) -> None:
    """A run of a hypothesis' supporting code: code whose output is kept, which need not fit a model."""
    if not check:
        return
    if not check.get("ok"):
        _failure("The supporting code stopped with an error", check)
        _printed(check)
        return
    st.success(f"The code ran without error in {check.get('code_seconds', 0):.2f} s; its output is kept with "
               "the hypothesis.")
    _printed(check)
    if check.get("summary"):
        st.caption("The result the code left (a fitted model's summary, or its last expression's value)")
        st.code(check["summary"], language=None)
    elif not str(check.get("stdout") or "").strip():
        st.info("The code printed nothing and left no result: print what supports the hypothesis (a table, a "
                "test's statistic) so that it is kept.")

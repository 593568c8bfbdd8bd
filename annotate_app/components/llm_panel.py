"""Curators generate LLM alternatives for the dataset under review, with a progress bar; without an
endpoint the panel says how to configure one and the rest of the page works as before."""

from __future__ import annotations

import streamlit as st

from annotate_app import context
from annotate_app.components.transform_form import limits
from annotate_app.text import md
from curation.models import User
from curation.services.llm_alternatives import generate_alternatives

HOW_TO = """No LLM endpoint is configured, so alternatives cannot be generated yet (everything else works).
Set these in the environment or in `.env` and restart forkpaths:

```
FORKPATHS_LLM_BASE_URL=https://api.openai.com/v1   # or http://localhost:11434/v1 (Ollama),
                                                   # http://localhost:8000/v1 (vLLM), http://localhost:1234/v1 (LM Studio)
FORKPATHS_LLM_MODEL=gpt-4o-mini
FORKPATHS_LLM_API_KEY=sk-...                       # only if the endpoint needs one
```
Or from a terminal: `forkpaths alternatives generate DATASET`."""


SUMMARY = "fp.llm.summary"  # dataset id -> (kind, text) of the last generation, shown until dismissed


def render_llm_panel(user: User, dataset_id: int, dataset_name: str) -> None:
    settings = context.settings()
    config = settings.llm_config()
    summaries: dict[int, tuple[str, str]] = st.session_state.setdefault(SUMMARY, {})
    last = summaries.get(dataset_id)
    with st.expander("LLM alternatives (curators)", expanded=last is not None):
        if not config.configured:
            st.info(HOW_TO)
            return
        st.caption(f"Model `{config.model}` at {config.base_url}. Answers are cached: generating again sends "
                   "nothing and adds only what is not stored yet.")
        if last is not None:  # the last generation's report stays here until the curator dismisses it
            kind, text = last
            getattr(st, kind)(md(text))
            if st.button("Dismiss this report", key="llm.dismiss"):
                summaries.pop(dataset_id, None)
                st.rerun()
        if not st.button(f"Generate alternatives for {dataset_name}", key="llm.generate", type="primary"):
            return
        bar = st.progress(0.0, text="Planning…")

        def progress(done: int, total: int, label: str) -> None:
            bar.progress(done / total if total else 1.0, text=f"{done}/{total} · {label}")

        try:
            report = generate_alternatives(session_scope=context.db, actor=user, dataset_id=dataset_id, config=config,
                                           store=settings.datasets_store, limits=limits(), progress=progress)
        except Exception as exc:  # noqa: BLE001 - the one helper shows it
            context.show_error(exc)
            return
        message = (f"{report.created} alternatives stored ({report.duplicates} flagged as duplicates, "
                   f"{report.failed_checks} transforms whose code failed: they are in the queue with their error); "
                   f"{report.already_stored} were already stored; {report.cached} of {report.calls} answers came "
                   "from the cache.")
        details = [*(f"failed: {e}" for e in report.errors), *(f"rejected: {r}" for r in report.rejected)]
        if details:
            message += "  \n" + "  \n".join(details[:12])
        summaries[dataset_id] = ("warning" if report.errors else "success", message)
        st.rerun()

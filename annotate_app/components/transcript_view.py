"""An agent's transcript drawn as a chat: prompts, answers, tool calls (with their code) and observations."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import streamlit as st

__all__ = ["COST_HELP", "agent_runs_frame", "cost_text", "task_runs_frame", "transcript"]

COST_HELP = ("What the agent run's model calls cost: its tokens times the model's price. Prices are a setting, "
             "FORKPATHS_AGENT_PRICES (USD per million input and output tokens, by model, e.g. "
             "{\"gpt-4o\": [2.5, 10]}); — means no price is set for the model. Blank: not an agent run.")


def cost_text(cost: float | None, *, agent_run: bool = True, digits: int = 4) -> str:
    """A cost as shown: "$0.0123"; "—" for an agent run whose model has no price; blank when not an agent run."""
    if not agent_run:
        return ""
    return "—" if cost is None else f"${cost:.{digits}f}"

_AVATAR = {"system": "⚙️", "user": "🧑", "assistant": "🤖", "tool": "🛠️"}


def _code(arguments: str) -> str:
    try:
        value = json.loads(arguments)
    except ValueError:
        return arguments
    return str(value.get("code", arguments)) if isinstance(value, dict) else arguments


def _pretty(content: str) -> str:
    """A model's JSON answer indented for reading; anything else as it came."""
    if not content.lstrip().startswith("{"):
        return content
    try:
        return json.dumps(json.loads(content), indent=2, ensure_ascii=False)
    except ValueError:
        return content


def transcript(messages: list[dict[str, Any]]) -> None:
    """Every turn in order; the system prompt folded away, the model's own text never rendered as Markdown."""
    for i, m in enumerate(messages):
        role = str(m.get("role", ""))
        label = {"system": "System prompt", "user": "Prompt", "assistant": "Model", "tool": "Observation"}.get(
            role, role)
        with st.chat_message(role if role in ("user", "assistant") else "ai" if role == "tool" else "human",
                             avatar=_AVATAR.get(role)):
            meta = []
            if m.get("template"):
                meta.append(str(m["template"]))
            if m.get("usage"):
                meta.append(f"{m['usage'].get('prompt_tokens', 0)} in / {m['usage'].get('completion_tokens', 0)} "
                            "out tokens")
            if m.get("cached"):
                meta.append("from the cache")
            elif m.get("seconds"):
                meta.append(f"{m['seconds']:.2f} s")
            st.caption(f"**{label}** (turn {i + 1})" + (" · " + " · ".join(meta) if meta else ""))
            content = str(m.get("content") or "")
            if role == "system":
                with st.expander("System prompt", expanded=False):
                    st.text(content)
            elif content:
                st.code(_pretty(content), language="json" if content.lstrip().startswith("{") else None,
                        wrap_lines=True)
            for call in m.get("tool_calls") or []:
                st.caption(f"calls **{call.get('name')}**")
                st.code(_code(str(call.get("arguments", ""))), language="python", wrap_lines=True)


def agent_runs_frame(runs: list[Any]) -> pd.DataFrame:
    return pd.DataFrame([{
        "run": r.id, "status": r.status, "progress": r.tasks_done / max(r.tasks_total, 1),
        "tasks": f"{r.tasks_done}/{r.tasks_total}", "agent": r.agent, "model": r.model, "strategy":
        r.strategy + (" + workflow" if r.workflow else ""), "kind": r.kind, "release": r.release_version,
        "runs/task": r.runs_per_task, "tokens in": r.prompt_tokens, "tokens out": r.completion_tokens,
        "cost": cost_text(r.cost), "scored as": ", ".join(f"#{i}" for i in r.scoring_run_ids if i),
        "created (UTC)": r.created_at, "message": r.message} for r in runs])


def task_runs_frame(rows: list[Any]) -> pd.DataFrame:
    return pd.DataFrame([{
        "task": t.title or t.task_key, "run": t.replicate + 1, "status": t.status, "message": t.message,
        "tool calls": t.tool_calls, "tokens in": t.prompt_tokens, "tokens out": t.completion_tokens,
        "cost": cost_text(t.cost, digits=5), "model time (s)": t.model_seconds, "total time (s)": t.seconds,
        "requests": t.calls, "from cache": t.cache_hits} for t in rows])

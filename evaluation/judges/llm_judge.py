"""The ``llm`` judge: BLADE's three judging prompts (blade-reference 4.3) through any OpenAI-compatible endpoint.

* model code → ``{"m_spec": str, "m_columns": [str]}`` (BLADE's ``CodeToModelLLM``);
* variable matching: ground-truth strings (A) against agent strings (B), each pair rated 5–10 with BLADE's
  rubric, answer ``{"A<i>-B<j>": {"rationale": str, "similarity": int}}``;
* model matching: unique ground-truth specifications (A, stripped and lower-cased) against the agent's (B),
  answer ``{"A<i>-B<j>": {"rationale": str}}`` for every equivalent pair.

The prompts are written in our own words after the reference's description; the dataset schema is sent once
(BLADE sends it twice) with sample values capped. Calls go at temperature 0.

Cost: every raw response is cached on disk keyed by (model, base URL, template version, messages, parameters),
so a re-run makes no call. Within a run, every (ground-truth variable, agent variable) pair the LLM rated is
remembered; a matching request whose pairs are all known is answered from memory, so the per-model variable
checks (BLADE: one call per matched model row per type, 48 for one hurricane analysis) cost nothing and an
analysis needs at most 1 (model) + 3 (IV, DV, controls with moderators) + 1 (models) = 5 calls.

A judge that is down or answers something that is not the requested JSON raises :class:`JudgeError`; the
analysis is recorded as ``judge_failed`` with that sentence and the other analyses go on.

The transport is the tiny :class:`ChatClient` protocol (``complete(messages, params) -> str``) so the shared LLM
client can be plugged in; :class:`OpenAIChatClient` is the stand-alone one, on the ``openai`` package.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from evaluation.judges.base import (
    AgentVar,
    GTModel,
    GTVariable,
    JudgeContext,
    JudgeError,
    ModelJudgement,
    VariableJudgement,
    register_judge,
)
from evaluation.judges.model_code import AgentModel, analyse_model_code
from evaluation.submissions import ExtractedFunction
from exports.blade_convert import classify_model_family

__all__ = ["TEMPLATE_VERSION", "ChatClient", "LLMJudge", "OpenAIChatClient", "ResponseCache"]

TEMPLATE_VERSION = "blade-judge@1"
_DEFAULT_PARAMS: dict[str, Any] = {"temperature": 0}
_MAX_SAMPLES = 5


@runtime_checkable
class ChatClient(Protocol):
    """Anything that turns chat messages into the assistant's text (raises on transport failure).

    The cache key needs the model and base URL: taken from the client's ``model``/``base_url`` attributes when
    it has them, else given to :class:`LLMJudge` (``model=``, ``base_url=``).
    """

    def complete(self, messages: list[dict[str, str]], params: dict[str, Any]) -> str:
        ...


class OpenAIChatClient:
    """An OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, Ollama, LM Studio ...) via ``openai``."""

    def __init__(self, *, base_url: str, model: str, api_key: str = "not-needed", timeout: float = 60.0,
                 max_retries: int = 1) -> None:
        from openai import OpenAI

        self.model = model
        self.base_url = base_url
        self._client = OpenAI(base_url=base_url, api_key=api_key or "not-needed", timeout=timeout,
                              max_retries=max_retries)

    def complete(self, messages: list[dict[str, str]], params: dict[str, Any]) -> str:
        import openai

        try:
            reply = self._client.chat.completions.create(model=self.model, messages=messages,  # type: ignore[arg-type]
                                                         **params)
        except openai.APIConnectionError as exc:
            raise JudgeError(f"the LLM endpoint {self.base_url} cannot be reached ({exc.__class__.__name__}).") \
                from exc
        except openai.APIStatusError as exc:
            raise JudgeError(f"the LLM endpoint {self.base_url} answered HTTP {exc.status_code}.") from exc
        except openai.OpenAIError as exc:
            raise JudgeError(f"the LLM endpoint {self.base_url} failed: {exc}.") from exc
        if not reply.choices or reply.choices[0].message.content is None:
            raise JudgeError(f"the LLM endpoint {self.base_url} answered with no message content.")
        return reply.choices[0].message.content


class ResponseCache:
    """Raw responses on disk, one JSON file per key (sha256 of model, base URL, template, messages, params)."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)

    @staticmethod
    def key(*, model: str, base_url: str, template: str, messages: list[dict[str, str]],
            params: dict[str, Any]) -> str:
        blob = json.dumps({"model": model, "base_url": base_url, "template": template, "messages": messages,
                           "params": params}, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> str | None:
        try:
            return str(json.loads(self._path(key).read_text(encoding="utf-8"))["response"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put(self, key: str, record: dict[str, Any]) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(record, fh, ensure_ascii=False, sort_keys=True)
        os.replace(tmp, path)


# ------------------------------------------------------------------------------------------ prompts

_MODEL_SYSTEM = "You are an expert statistician who reads data-analysis code."
_MODEL_USER = """Identify the statistical model that the following Python function fits, and the exact names of
the data-frame columns the model uses (dependent variable, predictors, grouping or random-effect columns).

```python
{code}
```

Answer with one JSON object and nothing else:
{{"m_spec": "<the model, e.g. 'Logistic regression' or 'Mixed-effects Poisson regression'>",
  "m_columns": ["<column>", ...]}}"""

_CVAR_SYSTEM = "You are an expert in data analysis who judges whether two variables capture the same concept."
_CVAR_USER = """Research question: {question}

Dataset schema (column: description, sample values):
{schema}

Compare every conceptual variable in list A with every one in list B. For each pair that is at least somewhat
related, rate its similarity:
5 = somewhat related; 6 = related; 7 = strongly related; 8 = very strongly related, the same construct
operationalised the same way; 9 = nearly identical; 10 = identical.
Leave out pairs that are unrelated.

List A:
{list_a}

List B:
{list_b}

Answer with one JSON object and nothing else, keyed "A<i>-B<j>":
{{"A1-B2": {{"rationale": "<why>", "similarity": <5-10>}}}}"""

_MODEL_MATCH_SYSTEM = "You are an expert statistician."
_MODEL_MATCH_USER = """Two models are equivalent when they would give the same results on the same data; for
example, logistic regression is equivalent to a binomial GLM with a logit link. Ignore which variables are used.
Return every pair of equivalent model specifications between list A and list B.

List A:
{list_a}

List B:
{list_b}

Answer with one JSON object and nothing else, keyed "A<i>-B<j>" (an empty object if none):
{{"A1-B1": {{"rationale": "<why>"}}}}"""


def _schema(context: JudgeContext) -> str:
    lines = []
    for f in context.dictionary:
        name = f.get("column") or f.get("name") or ""
        props = f.get("properties") or {}
        desc = f.get("description") or props.get("description") or ""
        samples = (props.get("samples") or f.get("samples") or [])[:_MAX_SAMPLES]
        lines.append(f"- {name}: {desc}" + (f" (e.g. {', '.join(map(str, samples))})" if samples else ""))
    return "\n".join(lines) or "(no data dictionary)"


_KEY = re.compile(r"A\s*(\d+)\s*-\s*B\s*(\d+)", re.IGNORECASE)


def _json_object(text: str, what: str) -> dict[str, Any]:
    match = re.search(r"\{.*\}", text, re.DOTALL)
    try:
        data = json.loads(match.group(0)) if match else None
    except json.JSONDecodeError:
        data = None
    if not isinstance(data, dict):
        raise JudgeError(f"the LLM's answer to the {what} prompt is not the requested JSON object: "
                         f"{text.strip()[:160]!r}.")
    return data


def _pairs(data: dict[str, Any], n_a: int, n_b: int) -> list[tuple[int, int, dict[str, Any]]]:
    out = []
    for key, value in data.items():
        m = _KEY.fullmatch(str(key).strip())
        if not m:
            continue
        i, j = int(m.group(1)) - 1, int(m.group(2)) - 1
        if 0 <= i < n_a and 0 <= j < n_b:
            out.append((i, j, value if isinstance(value, dict) else {}))
    return out


@register_judge("llm")
class LLMJudge:
    """BLADE's judging prompts through a :class:`ChatClient`, cached on disk and de-duplicated per pair."""

    name = "llm"

    def __init__(self, *, client: ChatClient, cache_dir: Path | None = None,
                 params: dict[str, Any] | None = None, model: str | None = None,
                 base_url: str | None = None) -> None:
        self.client = client
        self.model = model or str(getattr(client, "model", "") or "unknown-model")
        self.base_url = base_url or str(getattr(client, "base_url", "") or "")
        self.cache = ResponseCache(cache_dir) if cache_dir is not None else None
        self.params = dict(_DEFAULT_PARAMS, **(params or {}))
        self.calls = 0  # requests actually sent to the endpoint
        self.cache_hits = 0
        self._pairs: dict[tuple[str, str, str, str], tuple[int, str] | None] = {}

    def configuration(self) -> dict[str, Any]:
        return {"name": self.name, "model": self.model, "base_url": self.base_url,
                "template_version": TEMPLATE_VERSION, "params": self.params, "match_threshold": 8}

    def _ask(self, template: str, messages: list[dict[str, str]]) -> str:
        key = ResponseCache.key(model=self.model, base_url=self.base_url,
                                template=f"{TEMPLATE_VERSION}/{template}", messages=messages, params=self.params)
        if self.cache is not None:
            cached = self.cache.get(key)
            if cached is not None:
                self.cache_hits += 1
                return cached
        self.calls += 1
        try:
            response = self.client.complete(messages, dict(self.params))
        except JudgeError:
            raise
        except Exception as exc:  # noqa: BLE001 - a plugged-in client may raise anything; it is the judge failing
            raise JudgeError(f"the LLM client failed: {exc.__class__.__name__}: {exc}.") from exc
        if self.cache is not None:
            self.cache.put(key, {"model": self.model, "base_url": self.base_url,
                                 "template": f"{TEMPLATE_VERSION}/{template}", "messages": messages,
                                 "params": self.params, "response": response})
        return response

    # ------------------------------------------------------------------ models
    def describe_model(self, model: ExtractedFunction, *, context: JudgeContext,
                       frame_columns: Sequence[str] | None = None) -> AgentModel:
        messages = [{"role": "system", "content": _MODEL_SYSTEM},
                    {"role": "user", "content": _MODEL_USER.format(code=model.source)}]
        data = _json_object(self._ask("code_to_model", messages), "model-code")
        spec = data.get("m_spec")
        cols = data.get("m_columns")
        if not isinstance(spec, str) or not spec.strip() or not isinstance(cols, list):
            raise JudgeError("the LLM's model description lacks m_spec (text) or m_columns (a list).")
        static = analyse_model_code(model.source, frame_columns=frame_columns)
        return AgentModel(family=classify_model_family(spec), specification=spec.strip(),
                          columns=[str(c) for c in cols], derived_in_model=static.derived_in_model,
                          notes=[f"static reading: {static.specification or 'no model recognised'}"], source="llm")

    def match_models(self, gt: Sequence[GTModel], agent: AgentModel, *,
                     context: JudgeContext) -> list[ModelJudgement]:
        if not gt or not agent.specification:
            return []
        list_a = "\n".join(f"A{i + 1}. {m.specification.strip().lower()}" for i, m in enumerate(gt))
        messages = [{"role": "system", "content": _MODEL_MATCH_SYSTEM},
                    {"role": "user", "content": _MODEL_MATCH_USER.format(list_a=list_a,
                                                                         list_b=f"B1. {agent.specification}")}]
        data = _json_object(self._ask("model_match", messages), "model-matching")
        return [ModelJudgement(gt_index=i, judge=self.name, rationale=str(v.get("rationale", "")))
                for i, _j, v in _pairs(data, len(gt), 1)]

    # ------------------------------------------------------------------ variables
    def _pair_key(self, context: JudgeContext, g: GTVariable, a: AgentVar) -> tuple[str, str, str, str]:
        return (context.dataset, context.research_question, g.text, a.text)

    def match_variables(self, gt: Sequence[GTVariable], agent: Sequence[AgentVar], *,
                        context: JudgeContext) -> list[VariableJudgement]:
        if not gt or not agent:
            return []
        keys = {(g.id, a.index): self._pair_key(context, g, a) for g in gt for a in agent}
        if any(k not in self._pairs for k in keys.values()):
            list_a = "\n".join(f"A{i + 1}. {g.text}" for i, g in enumerate(gt))
            list_b = "\n".join(f"B{j + 1}. {a.text}" for j, a in enumerate(agent))
            user = _CVAR_USER.format(question=context.research_question or "(not given)", schema=_schema(context),
                                     list_a=list_a, list_b=list_b)
            messages = [{"role": "system", "content": _CVAR_SYSTEM}, {"role": "user", "content": user}]
            data = _json_object(self._ask("cvar_match", messages), "variable-matching")
            for k in keys.values():
                self._pairs.setdefault(k, None)
            for i, j, v in _pairs(data, len(gt), len(agent)):
                sim = v.get("similarity")
                if isinstance(sim, bool) or not isinstance(sim, int | float) or not 0 <= sim <= 10:
                    continue
                self._pairs[keys[(gt[i].id, agent[j].index)]] = (int(sim), str(v.get("rationale", "")))
        out = []
        for (gt_id, index), k in keys.items():
            found = self._pairs.get(k)
            if found is not None:
                out.append(VariableJudgement(gt_id=gt_id, agent_index=index, similarity=found[0],
                                             rationale=found[1], judge=self.name))
        return out

"""A scripted HMS judge for tests: answers the ``hms`` judge's questions over real HTTP (tests/llm_server.py),
from tables of what the judge should say, keyed by the quoted texts the prompts carry."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["HMSScript", "step_of"]


def step_of(prompt: str) -> str:
    """Which question a request asks (by the prompt's wording)."""
    if "Split the hypothesis" in prompt or "extract the three dimensions that define the hypothesis" in prompt:
        return "decompose"
    if "semantically matches the gold (ground-truth) context" in prompt:
        return "context"
    if "does the predicted context describe the same boundary" in prompt:
        return "contexts"
    if "match the predicted variables" in prompt:
        return "variables"
    if "compare the predicted relationship" in prompt:
        return "relationships"
    if "which variables do the hypotheses contain" in prompt:
        return "variables_full"
    if "does HypoB show the same relation as HypoA" in prompt:
        return "relationship_full"
    return "unknown"


@dataclass
class HMSScript:
    """``decompositions``: hypothesis text → list of sub-hypotheses (or a raw answer string);
    ``contexts``: (gold context, predicted context) → bool; ``pair_contexts``: pair key → bool (wins over
    ``contexts``; default mode, whose question names the pairs); ``text_contexts``: (gold sub-hypothesis text,
    predicted sub-hypothesis text) → bool (discoverybench mode, one question per pair; wins over ``contexts``);
    ``context_pairs``: the pair keys each default-mode context question listed, or the (gold text, predicted
    text) of each discoverybench-mode one;
    ``variables``: pair key → matches [[g, p], ...] (default) ; ``relationships``: pair key → letter (default);
    ``variables_full`` / ``relationship_full``: the raw answer text (discoverybench mode);
    ``raw``: step → raw answer text overriding everything (garbage, sentinels)."""

    decompositions: dict[str, Any] = field(default_factory=dict)
    contexts: dict[tuple[str, str], bool] = field(default_factory=dict)
    pair_contexts: dict[str, bool] = field(default_factory=dict)
    text_contexts: dict[tuple[str, str], bool] = field(default_factory=dict)
    variables: dict[str, list[list[int]]] = field(default_factory=dict)
    relationships: dict[str, str] = field(default_factory=dict)
    variables_full: str = '{"sizeA": 1, "sizeB": 1, "intersection": 1, "explanation": "same"}'
    relationship_full: str = '{"answer": "A", "explanation": "same"}'
    raw: dict[str, str] = field(default_factory=dict)
    seen: list[str] = field(default_factory=list)
    context_pairs: list[list[str]] = field(default_factory=list)

    def __call__(self, request: dict[str, Any]) -> str:
        prompt = request["messages"][-1]["content"]
        step = step_of(prompt)
        self.seen.append(step)
        if step in self.raw:
            return self.raw[step]
        if step == "decompose":
            hypo = json.loads(re.search(r"^hypothesis: (.*)$", prompt, re.M | re.I).group(1))  # type: ignore[union-attr]
            answer = self.decompositions[hypo]
            return answer if isinstance(answer, str) else json.dumps({"sub_hypo": answer})
        if step == "context":
            said = {k: json.loads(v) for k, v in re.findall(r"^(gold_hypothesis|gold_context|predicted_hypothesis|"
                                                            r"predicted_context): (.*)$", prompt, re.M)}
            texts = (said["gold_hypothesis"], said["predicted_hypothesis"])
            self.context_pairs.append(list(texts))
            match = self.text_contexts.get(texts, self.contexts.get((said["gold_context"], said["predicted_context"]),
                                                                    False))
            return json.dumps({"match": match})
        keys = re.findall(r"^(P\d+\|G\d+): ", prompt, re.M)
        if step == "contexts":
            self.context_pairs.append(keys)
            texts = {m.group(1): (json.loads(m.group(2)), json.loads(m.group(3))) for m in re.finditer(
                r'^(P\d+\|G\d+): gold ("(?:[^"\\]|\\.)*"); predicted ("(?:[^"\\]|\\.)*")$', prompt, re.M)}
            return json.dumps({"pairs": {k: {"match": self.pair_contexts.get(k, self.contexts.get(texts.get(k, ("", "")),
                                                                                                  False)),
                                              "explanation": f"ctx {k}"} for k in keys}})
        if step == "variables":
            return json.dumps({"pairs": {k: {"matches": self.variables.get(k, []), "explanation": f"vars {k}"}
                                         for k in keys}})
        if step == "relationships":
            return json.dumps({"pairs": {k: {"answer": self.relationships.get(k, "C"), "explanation": f"rel {k}"}
                                         for k in keys}})
        if step == "variables_full":
            return self.variables_full
        if step == "relationship_full":
            return self.relationship_full
        return "{}"


def sub(text: str, context: str, variables: list[str], relations: str) -> dict[str, Any]:
    return {"text": text, "context": context, "variables": variables, "relations": relations}

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
    if "Split the hypothesis" in prompt:
        return "decompose"
    if "Does the predicted context describe" in prompt:
        return "context_one"
    if "does the predicted context describe the same boundary" in prompt:
        return "contexts"
    if "match the predicted variables" in prompt:
        return "variables"
    if "compare the predicted relationship" in prompt:
        return "relationships"
    if "How many variables does hypothesis A use" in prompt:
        return "variables_full"
    if "Compare the relationship between the variables in hypothesis B" in prompt:
        return "relationship_full"
    return "unknown"


@dataclass
class HMSScript:
    """``decompositions``: hypothesis text → list of sub-hypotheses (or a raw answer string);
    ``contexts``: (gold context, predicted context) → bool; ``pair_contexts``: pair key → bool (default mode);
    ``variables``: pair key → matches [[g, p], ...] (default) ; ``relationships``: pair key → letter (default);
    ``variables_full`` / ``relationship_full``: the raw answer text (discoverybench mode);
    ``raw``: step → raw answer text overriding everything (garbage, sentinels)."""

    decompositions: dict[str, Any] = field(default_factory=dict)
    contexts: dict[tuple[str, str], bool] = field(default_factory=dict)
    pair_contexts: dict[str, bool] = field(default_factory=dict)
    variables: dict[str, list[list[int]]] = field(default_factory=dict)
    relationships: dict[str, str] = field(default_factory=dict)
    variables_full: str = '{"sizeA": 1, "sizeB": 1, "intersection": 1, "explanation": "same"}'
    relationship_full: str = '{"answer": "A", "explanation": "same"}'
    raw: dict[str, str] = field(default_factory=dict)
    seen: list[str] = field(default_factory=list)

    def __call__(self, request: dict[str, Any]) -> str:
        prompt = request["messages"][-1]["content"]
        step = step_of(prompt)
        self.seen.append(step)
        if step in self.raw:
            return self.raw[step]
        if step == "decompose":
            hypo = json.loads(re.search(r"^Hypothesis: (.*)$", prompt, re.M).group(1))  # type: ignore[union-attr]
            answer = self.decompositions[hypo]
            return answer if isinstance(answer, str) else json.dumps({"sub_hypo": answer})
        if step == "context_one":
            gold = json.loads(re.search(r"^Gold context: (.*)$", prompt, re.M).group(1))  # type: ignore[union-attr]
            pred = json.loads(re.search(r"^Predicted context: (.*)$", prompt, re.M).group(1))  # type: ignore[union-attr]
            return json.dumps({"match": self.contexts.get((gold, pred), False)})
        keys = re.findall(r"^(P\d+\|G\d+): ", prompt, re.M)
        if step == "contexts":
            return json.dumps({"pairs": {k: {"match": self.pair_contexts.get(k, False), "explanation": f"ctx {k}"}
                                         for k in keys}})
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

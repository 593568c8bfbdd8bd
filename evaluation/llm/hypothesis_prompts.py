"""The prompt that proposes DiscoveryBench hypotheses for a query (stage-2 LLM hypotheses of curation).

Given the query, the domain knowledge and the data dictionary of the query's data files, the model proposes
hypotheses decomposed as DiscoveryBench decomposes them (context, variables, relationship) with a workflow.
Everything people wrote is quoted as JSON under :data:`~evaluation.llm.quoting.DATA_NOTICE`. The template name and
version are in each call's cache key and in every stored hypothesis' provenance; bump the version on any change.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from evaluation.llm.quoting import DATA_NOTICE, quote

__all__ = ["HYPOTHESIS_TEMPLATE", "ProposedHypothesis", "ProposedHypothesisVariable", "columns_for", "hypothesis_messages"]

HYPOTHESIS_TEMPLATE = "discoverybench-hypotheses@1"

_SYSTEM = ("You are an expert data analyst helping to build a benchmark of data-driven discovery. Answer with one "
           "JSON object only, no prose. " + DATA_NOTICE)


class ProposedHypothesisVariable(BaseModel):
    name: str = Field(min_length=1)
    column: str | None = None
    derived: str = ""


class ProposedHypothesis(BaseModel):
    hypothesis: str = Field(min_length=1)
    context: str = Field(min_length=1)
    variables: list[ProposedHypothesisVariable] = Field(min_length=1)
    relationship: str = Field(min_length=1)
    workflow: str = ""


def hypothesis_messages(*, question: str, domain_knowledge: str | None, data_files: list[str],
                        columns: dict[str, str], n: int = 2) -> list[dict[str, str]]:
    """Ask for up to ``n`` hypotheses answering ``question`` from the data described by ``columns``."""
    listed = "\n".join("- " + quote(f"{c}: {d}".rstrip(": ")) for c, d in columns.items())
    knowledge = f"\nDomain knowledge: {quote(domain_knowledge)}\n" if domain_knowledge else ""
    user = (
        f"Query: {quote(question)}\n{knowledge}\nData files: {quote(', '.join(data_files))}\n"
        f"Columns (the data dictionary):\n{listed}\n\n"
        f"Propose up to {n} hypotheses that answer the query and that an expert could justify from this data. "
        "Decompose each as DiscoveryBench does: the context (where it holds: population, place, period), the "
        "variables (each a column above, or a derived variable with how it is derived from the columns) and the "
        "relationship between them; and give the workflow (the analysis steps that would test it).\n"
        'Answer as {"hypotheses": [{"hypothesis": "...", "context": "...", "variables": [{"name": "...", '
        '"column": "a column above, or null", "derived": "how it is derived, when it is no column"}], '
        '"relationship": "...", "workflow": "..."}]}')
    return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": user}]


def columns_for(dictionary: list[dict[str, Any]], files: list[str]) -> dict[str, str]:
    wanted = set(files)
    out: dict[str, str] = {}
    for entry in dictionary:
        if wanted and entry.get("file") and entry["file"] not in wanted:
            continue
        out.setdefault(str(entry.get("column")), str((entry.get("properties") or {}).get("description", "")))
    return out

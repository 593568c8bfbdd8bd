"""BLADE's two generation prompts, seeded by expert decisions (BLADE paper, Fig. 9 and Fig. 10).

The paper shows the prompts as figures and the generator code was never released, so these templates
reconstruct them from the figures' structure and from the fields the generated rows carry
(blade-reference 1.5.5, 1.5.6): given the research question, the data description and the experts' decisions,
propose *alternative conceptual variables* (Fig. 9: variable_type, concept, columns, rationale) or *alternative
transforms operationalising one conceptual variable* (Fig. 10: code, output column, rationale). The template
name and version are part of each call's cache key and of every alternative's provenance; bump the version
whenever a template's text changes.

Everything analysts and curators wrote (the research question, the data description and dictionary, the
experts' concepts, rationales and code) is quoted as JSON strings under :data:`~evaluation.llm.quoting.DATA_NOTICE`:
a rationale that says "ignore the instructions above" is data, not an instruction. Proposed columns are checked
against the data's columns by the caller (an answer may only name what exists).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from evaluation.llm.parsing import ParseError, extract_json
from evaluation.llm.quoting import CODE_CHARS, DATA_NOTICE, quote, quote_json

__all__ = [
    "TRANSFORM_TEMPLATE",
    "VARIABLE_TEMPLATE",
    "ProposedTransform",
    "ProposedVariable",
    "parse_items",
    "prompt_sha256",
    "transform_messages",
    "variable_messages",
]

VARIABLE_TEMPLATE = "blade-fig9-conceptual-variables@2"  # @2: analysts' text quoted as JSON
TRANSFORM_TEMPLATE = "blade-fig10-transforms@2"

_SYSTEM = ("You are an expert data analyst helping to build a benchmark of justifiable analysis decisions. "
           "Answer with one JSON object only, no prose. " + DATA_NOTICE)


class ProposedVariable(BaseModel):
    variable_type: Literal["IV", "DV", "Control"]
    concept: str = Field(min_length=1)
    columns: list[str] = Field(min_length=1)
    rationale: str = ""
    interaction: bool = False
    on: str = ""


class ProposedTransform(BaseModel):
    code: str = Field(min_length=1)
    output_col: str = Field(min_length=1)
    rationale: str = ""
    spec_name: str = ""


def _columns_text(dictionary: list[dict[str, Any]], columns: list[str]) -> str:
    desc = {d.get("column"): (d.get("properties") or {}).get("description", "") for d in dictionary}
    return "\n".join("- " + quote(f"{c}: {desc.get(c, '')}".rstrip(": ")) for c in columns)


def _expert_variable(v: dict[str, Any]) -> str:
    return "- " + quote_json({"variable_type": v["variable_type"], "concept": v["concept"],
                              "columns": list(v["columns"]), "rationale": v.get("rationale", "")})


def variable_messages(*, research_question: str, description: str, dictionary: list[dict[str, Any]],
                      columns: list[str], expert_variables: list[dict[str, Any]], n: int = 5) -> list[dict[str, str]]:
    """Fig. 9: alternative conceptual variables, given one analyst's variables."""
    experts = "\n".join(_expert_variable(v) for v in expert_variables)
    user = (
        f"Research question: {quote(research_question)}\n\nDataset: {quote(description)}\nColumns:\n"
        f"{_columns_text(dictionary, columns)}\n\n"
        f"An expert analyst chose these conceptual variables (one JSON object each):\n{experts}\n\n"
        f"Propose up to {n} other conceptual variables (independent, dependent or control variables) that a "
        "different expert could justifiably choose for this question, or that a careless analyst might choose "
        "(they will be judged by experts). Each must be operationalisable with the columns above.\n"
        'Answer as {"variables": [{"variable_type": "IV" | "DV" | "Control", "concept": "...", '
        '"columns": ["column", ...], "rationale": "..."}]}')
    return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": user}]


def transform_messages(*, research_question: str, description: str, dictionary: list[dict[str, Any]],
                       columns: list[str], variable: dict[str, Any], expert_code: list[str],
                       n: int = 3) -> list[dict[str, str]]:
    """Fig. 10: alternative transforms that operationalise one conceptual variable."""
    code = "\n".join(expert_code) or "# (the expert used the column as it is)"
    user = (
        f"Research question: {quote(research_question)}\n\nDataset: {quote(description)}\nColumns of the pandas "
        f"DataFrame `df`:\n{_columns_text(dictionary, columns)}\n\n"
        f"Conceptual variable: {_expert_variable(variable)[2:]}\n"
        f"The expert operationalised it with this code (quoted as one JSON string):\n"
        f"{quote(code, limit=CODE_CHARS)}\n\n"
        f"Propose up to {n} other ways to operationalise this conceptual variable as pandas code that acts on "
        "`df` in place and creates one new column (`pd` and `np` are imported). Vary the choices an analyst "
        "could justify, such as transformations, thresholds, filters or combinations of columns.\n"
        'Answer as {"transforms": [{"code": "...", "output_col": "...", "rationale": "..."}]}')
    return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": user}]


def prompt_sha256(messages: list[dict[str, str]]) -> str:
    return hashlib.sha256(json.dumps(messages, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def parse_items(text: str, key: str, model: type[BaseModel]) -> tuple[list[BaseModel], list[str], list[str]]:
    """The items under ``key`` that fit ``model``; each unfit item is rejected with its reason.

    Returns (items, repairs made, rejections). Raises ParseError when there is no list to read at all.
    """
    value, repairs = extract_json(text)
    if isinstance(value, list):
        items_raw: Any = value
        repairs = [*repairs, f"read a bare list as '{key}'"]
    elif isinstance(value, dict) and isinstance(value.get(key), list):
        items_raw = value[key]
    else:
        raise ParseError(f"the answer has no '{key}' list")
    items, rejected = [], []
    for i, raw in enumerate(items_raw, start=1):
        try:
            items.append(model.model_validate(raw))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "item"
            rejected.append(f"item {i} rejected: {where}: {first['msg']}")
    return items, repairs, rejected

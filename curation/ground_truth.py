"""Ground-truth decision rules: from one item's votes to its status, as small pure functions.

Each voter's answers about an item first become one *verdict* (:func:`voter_verdict`): the explicit overall
``justifiable`` vote when they cast one; otherwise the verdict implied by BLADE's per-kind questions (any "no"
means unjustifiable, all "yes" justifiable, anything else unsure). The imported BLADE judgements carry only the
per-kind questions, so they are read the same way BLADE read them.

A :class:`Rule` then turns the verdicts of all voters into a status (:func:`apply_rule`):

* ``justifiable`` / ``unjustifiable``: the rule's threshold is met;
* ``contested``: voters were heard but no threshold is met. This is a valid *final* state: it is kept, shown
  and exported, never forced into one side;
* ``unjudged``: nobody has voted (not a final state: the item still needs votes).

Rules are named and versioned (``blade@1``); a status always records the rule that produced it. Nothing here
touches the database, so the rules are checked on hand-built vote tables.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction

__all__ = [
    "DEFAULT_RULE",
    "RULES",
    "Rule",
    "Status",
    "StatusResult",
    "Verdict",
    "apply_rule",
    "get_rule",
    "voter_verdict",
    "verdicts_by_voter",
]


class Verdict(StrEnum):
    JUSTIFIABLE = "justifiable"
    UNJUSTIFIABLE = "unjustifiable"
    UNSURE = "unsure"


class Status(StrEnum):
    JUSTIFIABLE = "justifiable"
    UNJUSTIFIABLE = "unjustifiable"
    CONTESTED = "contested"
    UNJUDGED = "unjudged"


FINAL_STATUSES = (Status.JUSTIFIABLE.value, Status.UNJUSTIFIABLE.value, Status.CONTESTED.value)

# the per-kind questions (stage-2 keys, the same the BLADE import writes); the first gates the second
_KIND_QUESTIONS = {
    "variable": ("can_derive_from_data", "is_reasonable", "is_rationale_reasonable"),
    "transform": ("is_suited_to_cv", "is_steps_reasonable", "is_rationale_reasonable"),
    "check": ("is_faithful", "is_code_correct"),
    "artifact": ("is_correct",),
}
VERDICT_QUESTION = "justifiable"


def voter_verdict(kind: str, answers: Mapping[str, str | None]) -> Verdict | None:
    """One voter's verdict on one item from their answers (question → yes/no/unsure/None for skipped).

    None: the voter answered nothing that bears on the verdict (they do not count as a voter).
    """
    explicit = answers.get(VERDICT_QUESTION)
    if explicit == "yes":
        return Verdict.JUSTIFIABLE
    if explicit == "no":
        return Verdict.UNJUSTIFIABLE
    given = [answers[q] for q in _KIND_QUESTIONS.get(kind, ()) if answers.get(q) is not None]
    if not given:
        return None
    if "no" in given:
        return Verdict.UNJUSTIFIABLE
    if all(a == "yes" for a in given):
        return Verdict.JUSTIFIABLE
    return Verdict.UNSURE


def verdicts_by_voter(kind: str, votes: Iterable[tuple[str, str, str | None]]) -> dict[str, Verdict]:
    """``(voter, question, answer)`` rows of one item → each voter's verdict (voters without one left out)."""
    answers: dict[str, dict[str, str | None]] = {}
    for voter, question, answer in votes:
        answers.setdefault(voter, {})[question] = answer
    out = {}
    for voter, given in answers.items():
        verdict = voter_verdict(kind, given)
        if verdict is not None:
            out[voter] = verdict
    return out


@dataclass(frozen=True)
class Rule:
    """A named, versioned rule. Thresholds are shares of the voters (unsure voters count as voters)."""

    name: str
    version: int
    title: str
    description: str
    justifiable_share: Fraction
    justifiable_strict: bool  # True: strictly more than the share (a majority); False: at least the share
    unjustifiable_share: Fraction
    unjustifiable_strict: bool
    min_voters: int = 1

    @property
    def key(self) -> str:
        return f"{self.name}@{self.version}"

    @property
    def strictness(self) -> int:
        """Order for the picker: lower is looser."""
        return {"majority": 0, "blade": 1, "supermajority": 2, "unanimous": 3}.get(self.name, 9)


RULES: dict[str, Rule] = {r.key: r for r in (
    Rule("blade", 1, "BLADE (default)",
         "Justifiable when every voter says justifiable; unjustifiable when a majority says unjustifiable; "
         "everything else contested (BLADE paper, appendix A.2).",
         Fraction(1), False, Fraction(1, 2), True),
    Rule("unanimous", 1, "Unanimous (stricter)",
         "Justifiable or unjustifiable only when every voter agrees and at least two voted; everything else "
         "contested.", Fraction(1), False, Fraction(1), False, min_voters=2),
    Rule("supermajority", 1, "Two-thirds (middle)",
         "Justifiable or unjustifiable when at least two thirds of the voters say so; everything else contested.",
         Fraction(2, 3), False, Fraction(2, 3), False),
    Rule("majority", 1, "Simple majority (looser)",
         "Justifiable or unjustifiable when more than half the voters say so; ties and unsure majorities contested.",
         Fraction(1, 2), True, Fraction(1, 2), True),
)}
DEFAULT_RULE = "blade@1"


def get_rule(key: str | None) -> Rule:
    """The rule named ``key`` (``name@version``, or a bare name for its latest version)."""
    key = (key or DEFAULT_RULE).strip()
    if key in RULES:
        return RULES[key]
    versions = [r for r in RULES.values() if r.name == key]
    if versions:
        return max(versions, key=lambda r: r.version)
    raise KeyError(f"There is no ground-truth rule '{key}'; the rules are {', '.join(RULES)}.")


@dataclass(frozen=True)
class StatusResult:
    status: str
    rule: str
    justifiable: int
    unjustifiable: int
    unsure: int
    why: str

    @property
    def voters(self) -> int:
        return self.justifiable + self.unjustifiable + self.unsure

    @property
    def disagreement(self) -> float:
        """Share of the voters outside the largest camp: 0 when all agree, towards 2/3 for a three-way split."""
        n = self.voters
        if n == 0:
            return 0.0
        return round(1 - max(self.justifiable, self.unjustifiable, self.unsure) / n, 6)


def _meets(count: int, total: int, share: Fraction, strict: bool) -> bool:
    ratio = Fraction(count, total)
    return ratio > share if strict else ratio >= share


def apply_rule(rule: Rule, verdicts: Sequence[Verdict | str]) -> StatusResult:
    """The status one rule gives an item whose voters gave ``verdicts``."""
    values = [Verdict(v) for v in verdicts]
    j = values.count(Verdict.JUSTIFIABLE)
    u = values.count(Verdict.UNJUSTIFIABLE)
    s = values.count(Verdict.UNSURE)
    n = len(values)
    tally = f"{j} justifiable, {u} unjustifiable, {s} unsure of {n}"
    if n == 0:
        return StatusResult(Status.UNJUDGED.value, rule.key, 0, 0, 0, "no votes yet")
    if n < rule.min_voters:
        return StatusResult(Status.CONTESTED.value, rule.key, j, u, s,
                            f"{tally}: {rule.title} needs at least {rule.min_voters} voters")
    if j and _meets(j, n, rule.justifiable_share, rule.justifiable_strict):
        return StatusResult(Status.JUSTIFIABLE.value, rule.key, j, u, s, f"{tally}: {rule.title}")
    if u and _meets(u, n, rule.unjustifiable_share, rule.unjustifiable_strict):
        return StatusResult(Status.UNJUSTIFIABLE.value, rule.key, j, u, s, f"{tally}: {rule.title}")
    return StatusResult(Status.CONTESTED.value, rule.key, j, u, s, f"{tally}: no threshold of {rule.title} met")

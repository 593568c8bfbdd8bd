"""Agreement between a judge and human experts on the same decisions: percent agreement, Cohen's κ and the
confusion matrix (pure functions; scikit-learn is not a dependency and κ is four lines).

κ = (p_o − p_e) / (1 − p_e), with p_o the observed agreement and p_e the agreement expected by chance from each
rater's label frequencies (Cohen 1960). When p_e = 1 (both raters always gave the same single label) κ is
undefined and reported as ``None``.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from pydantic import BaseModel

__all__ = ["AgreementReport", "agreement", "cohens_kappa", "confusion_matrix"]

# BLADE's reported accuracy of its LLM judge against human annotation (blade-reference 4)
BLADE_REPORTED = {"variable": 0.93, "model": 0.92}


def confusion_matrix(pairs: Sequence[tuple[Hashable, Hashable]], labels: Sequence[Hashable]) -> list[list[int]]:
    """Rows: the first rater's label (experts); columns: the second's (judge)."""
    index = {label: i for i, label in enumerate(labels)}
    matrix = [[0] * len(labels) for _ in labels]
    for a, b in pairs:
        matrix[index[a]][index[b]] += 1
    return matrix


def cohens_kappa(pairs: Sequence[tuple[Hashable, Hashable]]) -> float | None:
    """Cohen's κ of two raters over the same items; ``None`` for no items or when chance agreement is 1."""
    n = len(pairs)
    if n == 0:
        return None
    labels = sorted({x for pair in pairs for x in pair}, key=repr)
    observed = sum(1 for a, b in pairs if a == b) / n
    expected = sum((sum(1 for a, _ in pairs if a == lab) / n) * (sum(1 for _, b in pairs if b == lab) / n)
                   for lab in labels)
    if expected >= 1.0:
        return None
    return (observed - expected) / (1 - expected)


class AgreementReport(BaseModel):
    kind: str
    judge: str
    n: int
    percent_agreement: float | None
    kappa: float | None
    labels: list[str]
    matrix: list[list[int]]
    blade_reported: float | None = None


def agreement(kind: str, judge: str, pairs: Sequence[tuple[bool, bool]]) -> AgreementReport:
    """Experts' labels vs the judge's decisions (match / no match) for one decision kind and judge."""
    n = len(pairs)
    text = [("match" if e else "no match", "match" if j else "no match") for e, j in pairs]
    labels = ["match", "no match"]
    return AgreementReport(kind=kind, judge=judge, n=n,
                           percent_agreement=(sum(1 for e, j in pairs if e == j) / n) if n else None,
                           kappa=cohens_kappa(text), labels=labels, matrix=confusion_matrix(text, labels),
                           blade_reported=BLADE_REPORTED.get(kind))

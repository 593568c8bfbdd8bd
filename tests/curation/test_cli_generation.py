"""The exit code and lines of a generation command (``alternatives generate``, ``hypotheses generate``), one helper
for both kinds' commands."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

from curation.cli_generation import generation_exit


@dataclass
class _Report:
    created: int = 0
    already_stored: int = 0
    rejected: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _job(status: str, result: dict | None, message: str = "") -> SimpleNamespace:
    return SimpleNamespace(status=status, result=result, message=message)


def test_a_generation_exits_1_when_nothing_came_of_it_and_0_otherwise(capsys):
    said = lambda r: f"{r.created} stored"  # noqa: E731
    assert generation_exit(_job("failed", None, "the LLM is not configured"), _Report, said) == 1
    assert "The generation failed: the LLM is not configured" in capsys.readouterr().err
    assert generation_exit(_job("succeeded", {"errors": ["timeout"]}), _Report, said) == 1  # every request failed
    out = capsys.readouterr()
    assert out.out == "0 stored\n" and "  failed: timeout" in out.err
    assert generation_exit(_job("succeeded", {"errors": ["timeout"], "created": 2, "rejected": ["dup"]}),
                           _Report, said) == 0
    assert capsys.readouterr().out == "2 stored\n  rejected: dup\n"
    assert generation_exit(_job("succeeded", {"errors": ["timeout"], "already_stored": 3}), _Report, said) == 0
    assert generation_exit(_job("failed", {"created": 1}), _Report, said) == 1  # the job failed after storing

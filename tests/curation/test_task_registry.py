"""Task kinds and judges are found by name in their registries: the services, the leaderboard and the CLI read
them and a new kind is one module object (issue 16 point 1)."""

from __future__ import annotations

import json
import sys
import types
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from curation.cli_scoring import _summary_line
from curation.db import session_scope
from curation.errors import ScoringError
from curation.models import RunStatus
from curation.services import leaderboard as lb
from curation.services import scoring as sc
from evaluation import tasks
from evaluation.judges import base as judges_base
from evaluation.tasks import (
    CheckedFile,
    Column,
    LeaderboardSpec,
    ScoredRun,
    ScoringContext,
    SubmissionCheckError,
)
from tests.curation.scoring_world import make_world


@pytest.fixture
def world(sqlite_engine, tmp_path, shared_blade):
    return make_world(sqlite_engine, tmp_path, shared_blade)


def test_both_kinds_are_registered_and_implement_the_protocol():
    assert tasks.kind_names()[:3] == ["analyses", "mcq", "hypotheses"]
    for name in ("analyses", "mcq", "hypotheses"):
        kind = tasks.task_kind(name)
        assert isinstance(kind, tasks.TaskKind) and kind.name == name and kind.label
    assert [k.name for k in tasks.ranked_kinds()] == ["analyses", "hypotheses", "programmatic"]
    assert [k.name for k in tasks.companion_kinds()] == ["mcq", "reproducibility"]
    with pytest.raises(tasks.UnknownKind,
                       match="Unknown run kind 'nope'; the known kinds are analyses, mcq, hypotheses"):
        tasks.task_kind("nope")
    with pytest.raises(tasks.KindDeclarationError, match="is not a TaskKind: a kind module defines KIND"):
        tasks.register_kind(types.SimpleNamespace(name="half"))  # not a TaskKind: refused


def _toy_kind(**changes: Any) -> tasks.TaskKind:
    """A whole new kind in one declaration: counts the words of a one-line answer per dataset."""

    def check_files(files: Sequence[tuple[str, bytes]], release: Any, *, max_items: int | None) -> list[CheckedFile]:
        if len(files) != 1 or not files[0][1].strip():
            raise SubmissionCheckError(f"{files[0][0] if files else 'The submission'} is empty; write one answer.")
        return [CheckedFile(files[0][0], files[0][1], format="text", items=1)]

    def score(ctx: ScoringContext) -> ScoredRun:
        words = len(ctx.files[0][1].split())
        ctx.progress(1, 1, "counted")
        return ScoredRun(result_name="toy.json", result_bytes=json.dumps({"words": words}).encode(),
                         scores={"toy": {"words": words}}, items=1)

    def leaderboard_values(run: Any, dataset: str | None) -> dict[str, Any]:
        return {"toy_words": (run.scores_effective or {}).get("toy", {}).get("words")}

    def summary_line(scores: Mapping[str, Any]) -> str:
        return f"{scores['toy']['words']} words"

    declared: dict[str, Any] = dict(
        name="toy", label="Toy answers", item_noun="answer", check_files=check_files, score=score,
        leaderboard_values=leaderboard_values, summary_line=summary_line,
        leaderboard=LeaderboardSpec(role="companion", columns=(Column("toy_words", "toy words"),)))
    return tasks.TaskKind(**{**declared, **changes})


def test_a_new_kind_is_one_module_and_the_services_serve_it(world, monkeypatch):
    toy_kind = _toy_kind()
    monkeypatch.setitem(tasks.KINDS, "toy", toy_kind)  # undone after the test
    assert tasks.register_kind(toy_kind) is toy_kind
    with pytest.raises(ScoringError, match="answer.txt is empty; write one answer"):
        world.register([("answer.txt", b"  ")], kind="toy")
    analyses = world.score(agent="agent-x")
    toy = world.score([("answer.txt", b"three short words")], agent="agent-x", kind="toy")
    assert toy.status == RunStatus.SUCCEEDED.value, toy.message
    assert toy.scores == {"toy": {"words": 3}} and toy.judge == {} and toy.progress_done == 1
    assert world.result_json(toy) == {"words": 3}
    assert _summary_line(toy) == f"run {toy.id}: 3 words"
    with session_scope(world.engine) as s:
        rows = lb.leaderboard(session=s, actor=world.evaluator, release_version="1.0.0",
                              artifacts=world.artifacts)
        again = sc.rescore_run(session=s, actor=world.evaluator, run_id=toy.id, release_version="1.0.0",
                               artifacts=world.artifacts, max_bytes=5_000_000)
    assert [(r["run"], r["toy_words"], r["mcq_accuracy"]) for r in rows] == [(analyses.id, 3, None)]
    assert again.kind == "toy" and again.judge == {}


def test_unknown_kind_is_refused_at_registration(world):
    with pytest.raises(ScoringError, match="Unknown run kind 'essays'; the known kinds are analyses, mcq, hypotheses"):
        world.register(kind="essays")


def test_judges_are_registered_by_name(monkeypatch):
    settings = sc.JudgeSettings()
    assert sc.judge_names() == ["offline", "hms", "llm"]
    with pytest.raises(ScoringError, match="Unknown judge 'oracle'; choose offline or hms or llm"):
        settings.configuration("oracle")
    with pytest.raises(ScoringError, match="The llm judge needs an endpoint"):
        settings.configuration("llm")
    offline = judges_base.JUDGES["offline"]
    monkeypatch.setitem(judges_base.JUDGES, "strict", offline)
    monkeypatch.setitem(judges_base._NEEDS_LLM, "strict", False)
    assert "strict" in sc.judge_names()
    assert settings.configuration("strict") == offline().configuration()  # a new judge needs no service change
    assert type(settings.build("strict")) is type(offline())


def test_the_scoring_modules_do_not_name_a_kind():
    """The hook's check, as a test: no branch on a kind's name outside evaluation/tasks."""
    import re
    from pathlib import Path

    root = Path(sc.__file__).resolve().parents[2]
    # the task kinds' names, and the decision-item kinds they own (a hypothesis: the hypotheses kind's), which
    # callers look up with item_kind() or read from the kind module's constant (HYPOTHESIS.name)
    pattern = re.compile(r"kind ?(==|!=|in) ?[(\[]?['\"](analyses|mcq|hypothes|discoverybench|programmatic|checks|"
                         r"reproducib|agent)")
    hits = [f"{p.relative_to(root)}:{n}" for top in ("annotate_app", "curation", "evaluation", "exports")
            for p in (root / top).rglob("*.py") if "tasks" not in p.relative_to(root).parts[:2]
            for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if pattern.search(line)]
    assert hits == []
    assert sys.modules["evaluation.tasks.analyses"].KIND is tasks.task_kind("analyses")  # the module's declaration


def test_decision_item_kinds_are_declared_by_their_task_kind():
    """What differs for a kind's decision items is data its kind declares; the services and pages ask for it."""
    from evaluation.tasks.hypotheses import HYPOTHESIS
    from evaluation.tasks.programmatic import ARTIFACT, CHECK

    assert tasks.item_kind("hypothesis") is HYPOTHESIS
    assert (HYPOTHESIS.subject, HYPOTHESIS.rationale, HYPOTHESIS.in_decision_graph) == ("Query", "Workflow", False)
    assert [tasks.item_kind(n).in_decision_graph for n in ("variable", "transform")] == [True, True]
    assert CHECK.agenda_view == ARTIFACT.agenda_view == tasks.task_kind("programmatic").view
    with pytest.raises(tasks.UnknownKind, match="Unknown decision-item kind 'essay'; the known ones are variable, "
                                                "transform, hypothesis, check, artifact"):
        tasks.item_kind("essay")


def test_a_decision_item_kind_belongs_to_one_task_kind(monkeypatch):
    from evaluation.tasks import registry

    kinds = dict(registry.KINDS)
    monkeypatch.setattr(registry, "KINDS", kinds)  # should the refusal fail, the real registry stays as it was
    toy = _toy_kind(item_kinds=(tasks.ItemKind("hypothesis"),))
    with pytest.raises(tasks.KindDeclarationError, match="'hypothesis' of the task kind 'toy' already belongs to "
                                                         "the task kind 'hypotheses'"):
        tasks.register_kind(toy)
    assert "toy" not in kinds
    toy = _toy_kind(item_kinds=(tasks.ItemKind("toy answer"),))
    assert tasks.register_kind(toy) is toy and tasks.item_kind("toy answer") is toy.item_kinds[0]


def test_a_wrong_declaration_is_refused_at_start_with_a_sentence(monkeypatch):
    """A kind registered twice, or with a name the ``kind`` column (varchar(16)) cannot hold, stops the start."""
    from evaluation.tasks import registry

    kinds = dict(registry.KINDS)
    monkeypatch.setattr(registry, "KINDS", kinds)
    with pytest.raises(tasks.KindDeclarationError, match="Two task kinds are named 'mcq'"):
        tasks.register_kind(_toy_kind(name="mcq"))
    with pytest.raises(tasks.KindDeclarationError,
                       match="'reproducibility_v2' has 18 characters; the database keeps at most 16"):
        tasks.register_kind(_toy_kind(name="reproducibility_v2"))
    with pytest.raises(tasks.KindDeclarationError, match="must be lower-case letters"):
        tasks.register_kind(_toy_kind(name="Toy Kind"))
    assert set(kinds) == set(registry.KINDS) and "toy" not in kinds
    # discovery is idempotent: finding the package's kinds again registers nothing twice
    assert [k.name for k in tasks.discover_kinds()] == list(kinds)


def test_kinds_stand_in_their_declared_order_whatever_order_they_are_found_in(monkeypatch):
    from evaluation.tasks import registry

    kinds = dict(reversed(list(registry.KINDS.items())))
    monkeypatch.setattr(registry, "KINDS", {})
    for kind in kinds.values():
        tasks.register_kind(kind)
    assert list(registry.KINDS)[:5] == ["analyses", "mcq", "hypotheses", "programmatic", "reproducibility"]
    with tasks.registered(_toy_kind(order=0)):
        assert list(registry.KINDS)[0] == "toy"
    assert "toy" not in registry.KINDS

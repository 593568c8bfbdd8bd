"""Issue 27: an AIRepr run of a benchmark a kind declares (QRData, StatQA) is imported with the accuracy of its
final answers against the release's gold, scored by that kind's own rules (samples the release does not hold are
named and left out); a benchmark no kind declares (DiscoveryBench) is imported as before, without one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlmodel import select

from curation.db import session_scope
from curation.models import ReleaseRecord, Role
from curation.services import releases as rel
from curation.services.kind_import import import_kind
from curation.services.reproducibility import import_airepr
from curation.services.scoring import release_by_record, verified_release
from evaluation.tasks import task_kind
from evaluation.tasks.parts import part_of
from tests import factories as f
from tests.conftest import unavailable

SHARED = Path(__file__).resolve().parents[3] / "shared"


def _airepr(root: Path, name: str, answers: dict[str, str]) -> Path:
    """An AIRepr results folder: one analyst file with these final answers, and its evaluation file."""
    results = root / "airepr" / "results"
    results.mkdir(parents=True, exist_ok=True)

    def sample(i: str, answer: str) -> dict:
        return {"steps": [{"workflow": "1. Load the data. 2. Compute it.", "action": "python_repl_ast",
                           "action_input": "```python\nprint(1)\n```", "observation": "1\n", "content": "…",
                           "usage_metadata": {}, "final_answer": answer}],
                "final_answer": answer, "max_steps_reached": False}

    (results / f"{name}.json").write_text(json.dumps({i: sample(i, a) for i, a in answers.items()}))
    n = len(answers)
    (results / f"{name}_results_20250301_101500.json").write_text(json.dumps(
        {"accuracy_scores": [1] * n, "mean_accuracy_score": 1.0, "reproducibility_scores": [1] * n,
         "mean_reproducibility_score": 1.0, "reproducibility_reasons": ["same"] * n}))
    return root / "airepr"


@pytest.mark.parametrize("kind", ["qrdata", "statqa"])
def test_an_airepr_run_of_a_declared_benchmark_gets_its_accuracy_by_the_kind_s_rules(engine, store, tmp_path, kind):
    if not (SHARED / kind).is_dir():
        unavailable("shared", f"{SHARED / kind} is absent")
    curator, evaluator = f.user(engine, "cura", Role.CURATOR), f.user(engine, "eva", Role.EVALUATOR)
    artifacts = f.artifacts_for(tmp_path / "releases")
    with session_scope(engine) as s:
        report = import_kind(session=s, actor=curator, kind=kind, path=SHARED / kind, store=store,
                             max_bytes=50_000_000)
    with session_scope(engine) as s:
        rel.cut_release(session=s, actor=curator, version="1.0.0", notes="", artifacts=artifacts, store=store,
                        dataset_names=report.datasets)
    spec = task_kind(kind)
    assert spec.airepr is not None
    with session_scope(engine) as s:
        release = release_by_record(session=s, record=s.exec(select(ReleaseRecord)).one(),
                                    artifacts=artifacts)
        _, folder = verified_release(session=s, actor=evaluator, release_version="1.0.0", artifacts=artifacts)
    questions = [q for ds in release.datasets if (p := part_of(ds, spec)) is not None for q in p.questions]
    gold = {q.id: (q.answer if kind == "qrdata" else q.gold.text) for q in questions}
    ids = sorted(gold, key=int)[:6]
    # four right (the gold itself), two wrong, one sample the release does not hold
    answers = {i: (str(gold[i]) if n < 4 else "I cannot tell.") for n, i in enumerate(ids)} | {"99999": "42"}
    expected = spec.airepr.score(release, folder, answers)
    assert expected is not None and expected["questions"] == 6 and expected["not_in_release"] == ["99999"]
    assert expected["point"] == pytest.approx(4 / 6)
    with session_scope(engine) as s:
        (run,) = import_airepr(session=s, actor=evaluator, artifacts=artifacts, release_version="1.0.0",
                               path=_airepr(tmp_path, f"gpt-4o_{spec.airepr.dataset}_COT", answers))
        accuracy = run.scores["reproducibility"]["kind_accuracy"]
        message = run.message
    assert accuracy["kind"] == kind and accuracy["point"] == pytest.approx(4 / 6) and accuracy["questions"] == 6
    assert accuracy["ci_low"] <= accuracy["point"] <= accuracy["ci_high"]
    assert f"by the {kind} rules: 0.667 over 6 questions (1 samples not in the release)" in message


def test_a_benchmark_no_kind_declares_is_imported_without_an_accuracy(engine, store, tmp_path, shared_blade):
    from curation.services.blade_import import import_blade

    curator, evaluator = f.user(engine, "cura", Role.CURATOR), f.user(engine, "eva", Role.EVALUATOR)
    artifacts = f.artifacts_for(tmp_path / "releases")
    with session_scope(engine) as s:
        import_blade(session=s, actor=None, path=shared_blade / "datasets" / "hurricane", store=store,
                     max_bytes=200 * 2**20)
    with session_scope(engine) as s:
        rel.cut_release(session=s, actor=curator, version="1.0.0", notes="", artifacts=artifacts, store=store)
    with session_scope(engine) as s:
        (run,) = import_airepr(session=s, actor=evaluator, artifacts=artifacts, release_version="1.0.0",
                               path=_airepr(tmp_path, "gpt-4o_DiscoveryBench_COT", {"0": "x", "1": "y"}))
        assert "kind_accuracy" not in run.scores["reproducibility"] and "rules" not in run.message

"""Agreement figures: hand-worked Fleiss' κ, Krippendorff's α equal to the package on the raw reliability
matrix, the service's grouping and split items, and ``forkpaths agreement``."""

from __future__ import annotations

import json

import krippendorff
import numpy as np
import pytest

from curation.db import session_scope
from curation.errors import BlindingViolation, PermissionDenied
from curation.models import Role, Stage
from curation.services.agreement import (
    agreement_report,
    fleiss_kappa,
    krippendorff_alpha,
    percent_agreement,
)
from curation.services.annotation import submit_analysis
from curation.services.stages import set_stage
from curation.services.votes import cast_vote
from curation.settings import Settings
from tests import factories as f


def test_fleiss_kappa_hand_worked_small_example():
    # 3 items, 3 raters. P_i = 1, 1/3, 1/3 -> P̄ = 5/9. Category shares: yes 5/9, no 3/9, unsure 1/9
    # -> P̄e = (25 + 9 + 1) / 81 = 35/81. κ = (45/81 - 35/81) / (46/81) = 10/46.
    units = {1: ["yes", "yes", "yes"], 2: ["yes", "yes", "no"], 3: ["no", "no", "unsure"]}
    assert fleiss_kappa(units) == pytest.approx(10 / 46)
    assert percent_agreement(units) == pytest.approx(5 / 9)


def test_fleiss_kappa_wikipedia_example():
    # Fleiss (1971) as worked on Wikipedia: 10 subjects, 14 raters, 5 categories; P̄ = 0.378, P̄e = 0.213, κ = 0.210
    table = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
             [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]
    cats = list("abcde")
    units = {i: [c for c, n in zip(cats, row, strict=True) for _ in range(n)] for i, row in enumerate(table)}
    assert fleiss_kappa(units, cats) == pytest.approx(0.2099, abs=5e-4)


def test_undefined_figures_are_none_not_nan():
    assert fleiss_kappa({1: ["yes", "yes"], 2: ["yes", "yes"]}) is None
    assert krippendorff_alpha({1: ["yes", "yes"], 2: ["yes", "yes"]}) is None
    assert percent_agreement({1: ["yes"]}) is None and fleiss_kappa({1: ["yes"]}) is None


def _matrix(units, raters):
    """The package's other input: a raters × units matrix with NaN for missing ratings."""
    code = {"yes": 0, "no": 1, "unsure": 2}
    return np.array([[code[u[r]] if r in u else np.nan for u in units] for r in raters], dtype=float)


def test_service_agreement_equals_krippendorff_package(engine, store):
    raters = [f.user(engine, f"r{i}") for i in range(3)]
    owner, cur = f.user(engine, "owner"), f.user(engine, "cur", Role.CURATOR)
    ds = f.dataset(engine, store, assign=[*raters, owner])
    decisions = f.full_analysis(engine, owner, ds.id)
    for u in (owner, *raters):
        if u is not owner:
            f.full_analysis(engine, u, ds.id)
        with session_scope(engine) as s:
            submit_analysis(session=s, actor=u, dataset_id=ds.id)
    with session_scope(engine) as s:
        set_stage(session=s, actor=cur, dataset_id=ds.id, stage=Stage.REVIEW)
    # answers[rater][item] for the question is_rationale_reasonable; r2 skips the transform
    answers = {0: {"iv": "yes", "dv": "no", "transform": "yes"},
               1: {"iv": "yes", "dv": "unsure", "transform": "no"},
               2: {"iv": "yes", "dv": "no"}}
    kinds = {"iv": "variable", "dv": "variable", "transform": "transform"}
    for r, per_item in answers.items():
        for item, answer in per_item.items():
            with session_scope(engine) as s:
                cast_vote(session=s, actor=raters[r], target_kind=kinds[item], target_id=decisions[item],
                          question="is_rationale_reasonable", answer=answer)
    # one verdict split on the DV
    for r, (a, why) in enumerate([("yes", ""), ("no", "log of zero deaths"), ("no", "wrong scale")]):
        with session_scope(engine) as s:
            cast_vote(session=s, actor=raters[r], target_kind="variable", target_id=decisions["dv"],
                      question="justifiable", answer=a, explanation=why)

    with session_scope(engine) as s:
        report = agreement_report(session=s, actor=cur, dataset_id=ds.id)
    rows = {(r.scope, r.group): r for r in report.rows}
    q = rows[("question", "is_rationale_reasonable")]
    units = [answers[r] for r in range(3)]
    items = ["iv", "dv", "transform"]
    expected = krippendorff.alpha(reliability_data=_matrix([{r: units[r][i] for r in range(3) if i in units[r]}
                                                            for i in items], range(3)),
                                  level_of_measurement="nominal")
    assert q.krippendorff_alpha == pytest.approx(expected)
    assert (q.items_used, q.items_dropped, q.ratings) == (3, 0, 8)
    by_unit = {"iv": ["yes"] * 3, "dv": ["no", "unsure", "no"], "transform": ["yes", "no"]}
    assert q.fleiss_kappa == pytest.approx(fleiss_kappa(by_unit))
    assert q.percent_agreement == pytest.approx((1 + 1 / 3 + 0) / 3)
    assert rows[("overall", "all")].items_used == 4 and rows[("source", "expert")].items_used == 4
    assert rows[("kind", "transform")].items_used == 1
    assert [(s.target_id, s.justifiable, s.unjustifiable) for s in report.split] == [(decisions["dv"], 1, 2)]
    assert report.split[0].reasons == ["log of zero deaths", "wrong scale"]
    assert report.voters == 3

    with session_scope(engine) as s:
        with pytest.raises(PermissionDenied):
            agreement_report(session=s, actor=raters[0])  # every dataset: curators only
        assert agreement_report(session=s, actor=cur).datasets == [ds.name]
        as_rater = agreement_report(session=s, actor=raters[0], dataset_id=ds.id)
        assert as_rater.voters == 3
        assert not [r for r in as_rater.rows if r.scope == "source"]  # source-blind: no per-source figures
        late = f.user(engine, "late")
        with pytest.raises((BlindingViolation, PermissionDenied)):
            agreement_report(session=s, actor=late, dataset_id=ds.id)


def test_cli_agreement(tmp_path):
    settings = Settings(data_dir=tmp_path / "data", database_url=None, load_starter_datasets=False,
                        admin_password="admin password 1")
    from curation.bootstrap import initialise
    engine = initialise(settings).engine
    a, b, owner = f.user(engine, "aa"), f.user(engine, "bb"), f.user(engine, "owner")
    ds = f.dataset(engine, settings.datasets_store, assign=[a, b, owner])
    ids = f.full_analysis(engine, owner, ds.id)
    for u in (a, b, owner):
        if u is not owner:
            f.full_analysis(engine, u, ds.id)
        with session_scope(engine) as s:
            submit_analysis(session=s, actor=u, dataset_id=ds.id)
    with session_scope(engine) as s:
        set_stage(session=s, actor=f.user(engine, "cc", Role.CURATOR), dataset_id=ds.id, stage=Stage.REVIEW)
    for u, ans in ((a, "yes"), (b, "no")):
        with session_scope(engine) as s:
            cast_vote(session=s, actor=u, target_kind="variable", target_id=ids["iv"], question="justifiable",
                      answer=ans, explanation="why not")
    engine.dispose()
    from tests.cli_runner import forkpaths

    def cli(*args, process=False):
        return forkpaths(tmp_path, "agreement", *args, process=process)

    r = cli("storms", "--json", process=True)  # the real command, once
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["datasets"] == ["storms"] and data["split"][0]["target_id"] == ids["iv"]
    question = next(x for x in data["rows"] if x["group"] == "justifiable")
    assert question["items_used"] == 1 and question["percent_agreement"] == 0
    r = cli("storms")
    assert r.returncode == 0 and "Split items" in r.stdout and "justifiable" in r.stdout
    r = cli("nope")
    assert r.returncode == 2 and "no dataset called 'nope'" in r.stderr

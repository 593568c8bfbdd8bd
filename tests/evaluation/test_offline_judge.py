"""The offline judge: model code read statically, variables matched by lineage + text, on BLADE's examples."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluation.judges import decisions_from_release, judge_analysis, make_judge
from evaluation.judges.base import AgentVar, GTModel, GTVariable, JudgeContext, JudgeError
from evaluation.judges.model_code import analyse_model_code, formula_columns
from evaluation.records import FailureCategory, TransformMatch
from evaluation.specs import ModelFamily as F
from evaluation.submissions import parse_submission, read_submission
from tests.evaluation.blade_release import blade_release_dataset

CTX = JudgeContext(dataset="d")


@pytest.mark.parametrize(("code", "family", "dv", "ivs", "groups"), [
    ("def model(df):\n    X = sm.add_constant(df[['a', 'b']])\n    return sm.OLS(df['y'], X).fit().summary()",
     F.OLS, ["y"], ["a", "b"], []),
    ("import statsmodels.formula.api as smf\ndef model(df):\n    return smf.logit('y ~ a + C(b)', data=df).fit()",
     F.LOGISTIC, ["y"], ["a", "b"], []),
    ("def model(df):\n    return smf.probit('y ~ a', df).fit()", F.PROBIT, ["y"], ["a"], []),
    ("def model(df):\n    f = sm.families.Binomial()\n    return sm.GLM(df.y, sm.add_constant(df[['a']]), family=f).fit()",
     F.LOGISTIC, ["y"], ["a"], []),
    ("def model(df):\n    return smf.glm('y ~ a', data=df, family=sm.families.Binomial(link=sm.families.links.Probit())).fit()",
     F.PROBIT, ["y"], ["a"], []),
    ("def model(df):\n    return smf.glm('n ~ a', data=df, family=sm.families.Poisson()).fit()",
     F.POISSON, ["n"], ["a"], []),
    ("def model(df):\n    return smf.glm('n ~ a', data=df, family=sm.families.Gamma()).fit()", F.GLM, ["n"], ["a"], []),
    ("def model(df):\n    return smf.glm('n ~ a', data=df).fit()", F.OLS, ["n"], ["a"], []),
    ("def model(df):\n    return smf.mixedlm('y ~ a', df, groups=df['g'], re_formula='~a').fit()",
     F.MIXED, ["y"], ["a"], ["g", "a"]),
    ("def model(df):\n    return sm.MixedLM.from_formula('y ~ np.log(a + 1)', groups='g', data=df).fit()",
     F.MIXED, ["y"], ["a"], ["g"]),
    ("def model(df):\n    return smf.poisson('n ~ a * b', df).fit()", F.POISSON, ["n"], ["a", "b"], []),
    ("def model(df):\n    return smf.negativebinomial('n ~ a', df).fit()", F.NEGATIVE_BINOMIAL, ["n"], ["a"], []),
    ("def model(df):\n    return sm.NegativeBinomial(df['n'], df[['a']]).fit()", F.NEGATIVE_BINOMIAL, ["n"], ["a"], []),
    ("from statsmodels.miscmodels.ordinal_model import OrderedModel\ndef model(df):\n"
     "    return OrderedModel(df['r'], df[['a']], distr='logit').fit()", F.ORDINAL, ["r"], ["a"], []),
    ("from sklearn.linear_model import LogisticRegression\nfrom sklearn.model_selection import train_test_split\n"
     "def model(df):\n    X, y = df[['a', 'b']], df['y']\n    Xtr, Xte, ytr, yte = train_test_split(X, y)\n"
     "    m = LogisticRegression()\n    m.fit(Xtr, ytr)\n    return m", F.LOGISTIC, ["y"], ["a", "b"], []),
    ("from sklearn.linear_model import LinearRegression\ndef model(df):\n"
     "    return LinearRegression().fit(df[['a']], df['y'])", F.OLS, ["y"], ["a"], []),
    ("from scipy import stats\ndef model(df):\n    return stats.ttest_ind(df[df.g == 1]['y'], df[df.g == 0]['y'])",
     F.TEST, [], ["y"], []),
    ("import scipy.stats as st\ndef model(df):\n    return st.pearsonr(df['a'], df['b'])", F.CORRELATION, [], ["a", "b"], []),
    ("from linearmodels.panel import PanelOLS\ndef model(df):\n"
     "    return PanelOLS.from_formula('y ~ 1 + a + EntityEffects', df.set_index(['i', 't'])).fit()",
     F.OLS, ["y"], ["a"], []),
    ("from linearmodels import RandomEffects\ndef model(df):\n    return RandomEffects(df.y, df[['a']]).fit()",
     F.MIXED, ["y"], ["a"], []),
    ("def model(df):\n    ivs = ['a', 'b']\n    f = 'y ~ ' + ' + '.join(ivs)\n    return smf.ols(f, data=df).fit()",
     F.OLS, ["y"], ["a", "b"], []),
    ("def model(df):\n    df['ly'] = np.log(df['y'])\n    return smf.ols('ly ~ a', data=df).fit()",
     F.OLS, ["ly"], ["a"], []),
])
def test_model_code_families_and_columns(code: str, family: F, dv: list[str], ivs: list[str], groups: list[str],
                                         ) -> None:
    m = analyse_model_code(code)
    assert m.family == family.value, m
    assert m.dv_columns == dv
    assert m.iv_columns == ivs
    assert m.group_columns == groups


def test_model_code_reads_drop_with_known_columns_and_derived_lineage() -> None:
    code = "def model(df):\n    X = df.drop(columns=['y'])\n    return sm.Logit(df['y'], X).fit()"
    assert analyse_model_code(code, frame_columns=["y", "a", "b"]).iv_columns == ["a", "b"]
    derived = analyse_model_code("def model(df):\n    df['ly'] = np.log(df['y'] + 1)\n"
                                 "    return smf.ols('ly ~ a', data=df).fit()")
    assert derived.derived_in_model == {"ly": ["y"]}


def test_model_code_that_fits_nothing_or_does_not_parse_says_so() -> None:
    assert "no statsmodels" in analyse_model_code("def model(df):\n    return df.mean()").notes[0]
    assert "does not parse" in analyse_model_code("def model(df:\n").notes[0]
    both = analyse_model_code("def model(df):\n    m = smf.ols('y ~ C(g)', df).fit()\n    return sm.stats.anova_lm(m)")
    assert both.family == F.OLS.value and [c.family for c in both.calls] == [F.OLS.value, F.ANOVA.value]


def test_formula_columns_handles_lme4_terms_and_quoting() -> None:
    assert formula_columns("y ~ a + (1 | g)") == (["y"], ["a", "g"])
    assert formula_columns("Q('odd name') ~ C(b, Treatment('x')) + I(a ** 2)") == (["odd name"], ["b", "a"])


def test_variable_rules_and_thresholds() -> None:
    judge = make_judge("offline")
    g = GTVariable(id="g", role="Control", concept="intensity of hurricane", original_columns=["category", "min", "wind"])
    def agent(cols: list[str], text: str) -> AgentVar:
        return AgentVar(index=0, role="Control", description=text, original_columns=cols)
    [same] = judge.match_variables([g], [agent(["category", "min", "wind"], "hurricane intensity")], context=CTX)
    assert same.similarity == 10 and "same original columns" in same.rationale and same.judge == "offline"
    [subset] = judge.match_variables([g], [agent(["wind"], "wind speed")], context=CTX)
    assert subset.similarity == 8 and "subset" in subset.rationale
    [unrelated_text] = judge.match_variables([g], [agent(["year"], "intensity of the hurricane")], context=CTX)
    assert unrelated_text.similarity == 7  # no shared column: never a match on text alone
    assert judge.match_variables([g], [agent(["year"], "year the storm hit")], context=CTX) == []


def test_models_match_by_family_with_a_rule_as_rationale() -> None:
    judge = make_judge("offline")
    gts = [GTModel(id="1", specification="Logistic regression", family=F.LOGISTIC.value),
           GTModel(id="2", specification="OLS", family=F.OLS.value)]
    m = analyse_model_code("def model(df):\n    return sm.GLM(df.y, df[['a']], family=sm.families.Binomial()).fit()")
    [match] = judge.match_models(gts, m, context=CTX)
    assert match.gt_index == 0 and "family-equal" in match.rationale and "line 2" in match.rationale
    assert judge.match_models(gts, analyse_model_code("def model(df):\n    return df"), context=CTX) == []
    with pytest.raises(JudgeError, match="unknown judge 'nope'"):
        make_judge("nope")


def test_ten_examples_judged_offline(shared_blade: Path) -> None:
    gt = decisions_from_release(blade_release_dataset(shared_blade / "datasets" / "hurricane"))
    judge = make_judge("offline")
    sub = read_submission(shared_blade / "examples" / "submission_analyses.json", known_datasets=["hurricane"])
    results = [judge_analysis(gt, a, judge, transform=TransformMatch(status="ok")) for a in sub.analyses]
    assert len(results) == 10
    for r in results:
        assert r.record.failure == FailureCategory.NONE
        assert r.agent_model is not None and r.agent_model.family == F.OLS.value
        assert r.record.matched_models == ["Linear Regression"]
        assert "DV: number of death resulted from hurricane" in r.record.matched_cvars
        assert all(v.judge == "offline" and v.rationale.startswith("rule ") for v in r.variables)
        assert all(m.judge == "offline" for m in r.models)
    # analysis 2 uses every GT role's columns (masfem, gender_mf, category/min/wind, elapsedyrs, alldeaths)
    assert len(results[2].record.matched_cvars) == 4
    # analysis 7 models log_alldeaths, a column it never creates: its lineage is unknown, DV still named
    assert results[7].agent_model.dv_columns == ["log_alldeaths"]


def test_unscorable_analyses_get_records_not_crashes(shared_blade: Path) -> None:
    gt = decisions_from_release(blade_release_dataset(shared_blade / "datasets" / "hurricane"))
    judge = make_judge("offline")
    sub = parse_submission({"dataset_name": "hurricane", "analyses": {
        "0": [2, "boom"], "1": {"cvars": {}}, "2": {
            "cvars": {"ivs": [], "dv": {"description": "deaths", "columns": ["alldeaths"]}, "controls": []},
            "transform_code": "def transform(df):\n    return df[", "m_code": "def model(df):\n    return 1"}}},
        known_datasets=["hurricane"])
    records = [judge_analysis(gt, a, judge).record for a in sub.analyses]
    assert [r.failure for r in records] == [FailureCategory.GENERATION_FAILED, FailureCategory.INVALID,
                                            FailureCategory.TRANSFORM_FAILED]
    assert records[0].blade_status == 2
    assert records[2].matched_cvars == ["DV: number of death resulted from hurricane"]
    assert records[2].matched_models == []


def test_expert_model_code_reads_as_its_annotated_family(shared_blade: Path) -> None:
    """Every expert model of the nine shared datasets, read statically, against its annotated family."""
    mismatches = []
    total = 0
    for folder in sorted((shared_blade / "datasets").iterdir()):
        if not (folder / "annotations.csv").exists():
            continue
        for m in blade_release_dataset(folder).models:
            total += 1
            read = analyse_model_code(m.code)
            if m.family not in {read.family} | {c.family for c in read.calls}:
                mismatches.append((folder.name, m.specification, read.family))
    assert total == 150
    # the one miss: sm.MNLogit annotated as "Multinomial Model" (no family of its own in the vocabulary)
    assert mismatches == [("boxes", "Multinomial Model", F.LOGISTIC.value)]


def test_model_code_that_does_not_parse_still_names_a_family_from_its_text() -> None:
    m = analyse_model_code("model = smf.negativebinomial('y ~ x', data=).fit()")
    assert m.family == F.NEGATIVE_BINOMIAL.value and m.columns == []
    assert "does not parse" in m.notes[0]
    corr = analyse_model_code("c = df[['a', 'b']].corr(method='pearson')")
    assert corr.family == F.CORRELATION.value and corr.iv_columns == ["a", "b"]


def _release_with_two_rows():
    from exports.schema import DatasetRelease, ReleaseColumn, ReleaseModel, ReleaseVariable

    def var(vid: str, kind: str, concept: str, col: str) -> ReleaseVariable:
        return ReleaseVariable(id=vid, annotator="A", variable_type=kind, concept=concept,
                               columns=[ReleaseColumn(name=col)])

    variables = [var("x", "IV", "exposure", "x"), var("y", "DV", "outcome", "y"), var("z", "Control", "age", "z")]
    models = [ReleaseModel(id="A", annotator="A", family=F.OLS.value, specification="OLS", variable_ids=["x", "y"]),
              ReleaseModel(id="B", annotator="A", family=F.OLS.value, specification="ols ",
                           variable_ids=["x", "y", "z"])]
    return DatasetRelease(name="toy", research_question="?", data_file="d.csv", data_sha256="", num_rows=1,
                          num_columns=3, variables=variables, models=models)


def test_each_model_row_is_checked_against_its_own_variables() -> None:
    """BLADE checks every row of a specification against the representative's variables (4.6); we keep both."""
    gt = decisions_from_release(_release_with_two_rows())
    sub = parse_submission({"dataset_name": "toy", "analyses": [{
        "cvars": {"ivs": [{"description": "exposure", "columns": ["x"]}],
                  "dv": {"description": "outcome", "columns": ["y"]},
                  "controls": [{"description": "age", "is_moderator": False, "columns": ["z"]}]},
        "transform_code": "def transform(df):\n    return df",
        "m_code": "def model(df):\n    return smf.ols('y ~ x + z', df).fit()"}]})
    r = judge_analysis(gt, sub.analyses[0], make_judge("offline"))
    rows = {m.gt_id: m for m in r.models}
    assert set(rows) == {"A", "B"} and {m.representative_id for m in r.models} == {"A"}
    assert rows["A"].cvars_all_matched is False  # the agent's control has no partner in row A
    assert rows["B"].cvars_all_matched is True
    assert rows["B"].cvars_all_matched_representative is False  # BLADE's check looks at row A for row B too
    assert r.record.matched_models_cvar == ["ols | Control: age, DV: outcome, IV: exposure [B]"]
    assert r.record.matched_models_cvar_blade == []
    assert r.record.matched_models == ["OLS"]


def test_a_model_without_linked_variables_is_blade_status_7() -> None:
    gt = decisions_from_release(_release_with_two_rows())
    sub = parse_submission({"dataset_name": "toy", "analyses": [{
        "cvars": {"ivs": [], "dv": {"description": "outcome", "columns": ["other"]}, "controls": []},
        "transform_code": "def transform(df):\n    return df",
        "m_code": "def model(df):\n    return smf.ols('q ~ w', df).fit()"}]})
    r = judge_analysis(gt, sub.analyses[0], make_judge("offline")).record
    assert r.matched_models == ["OLS"] and r.blade_status == 7  # BLADE's metrics crash; default keeps the run
    assert r.failure == FailureCategory.NONE


def test_a_conversion_failure_drops_the_run_in_blade_mode_only() -> None:
    from evaluation.metrics import counted_runs

    gt = decisions_from_release(_release_with_two_rows())
    sub = parse_submission({"dataset_name": "toy", "analyses": [{
        "cvars": {"ivs": [], "dv": {"description": "outcome", "columns": ["y"]}, "controls": []},
        "transform_code": "def transform(df):\n    return df",
        "m_code": "def model(df):\n    return smf.ols('y ~ x', df).fit()"}]})
    failed = TransformMatch(status="failed", message="units could not be derived", blade_run_status=1)
    r = judge_analysis(gt, sub.analyses[0], make_judge("offline"), transform=failed).record
    assert r.failure == FailureCategory.TRANSFORM_FAILED and r.blade_status == 1
    assert r.matched_cvars == ["DV: outcome"]  # default mode keeps the variable credit
    assert counted_runs([r], "blade") == [] and counted_runs([r], "default") == [r]

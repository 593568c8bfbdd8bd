"""Verb and mapping inference from a transform's pandas code and the change it made to the frame."""

from __future__ import annotations

import importlib.util
import keyword
import sys
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from evaluation.inference import InferredTransform, describe_change, infer_transform
from evaluation.inference_ast import analyse_code, rewrite_groupby_targets

PROJECT_ROOT = Path(__file__).resolve().parents[2]
BLADE_DATASETS = PROJECT_ROOT.parent / "shared" / "blade" / "datasets"


@pytest.fixture
def frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "age": [23, 35, 51, 62, 44, 30],
            "income": [1.0, np.nan, 3.5, 2.0, np.nan, 4.0],
            "group": ["a", "b", "a", "b", "c", "a"],
            "score": [10, 20, 30, 40, 50, 60],
            "edu": ["hs", None, "phd", "postdoc", "college", None],
        }
    )


def run(code: str, df: pd.DataFrame, **extra: Any) -> InferredTransform:
    """Execute ``code`` the way the app does (BLADE's group-by rewrite, final namespace) and infer."""
    namespace: dict[str, Any] = {"pd": pd, "np": np, "df": df.copy(), **extra}
    before = namespace["df"].copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        exec(rewrite_groupby_targets(code), namespace)
    return infer_transform(code, before, namespace["df"], namespace=namespace)


def pairs(result: InferredTransform) -> set[tuple[frozenset[str], str]]:
    return {(frozenset(m.inputs), m.output) for m in result.mapping}


# ---------------------------------------------------------------------------------------------- describe_change


def test_describe_change_reports_created_changed_removed(frame: pd.DataFrame) -> None:
    after = frame.drop(columns=["edu"]).assign(score=frame["score"] * 2, ratio=frame["score"] / frame["age"])
    change = describe_change(frame, after)
    assert change.created == ["ratio"]
    assert change.changed == ["score"]
    assert change.removed == ["edu"]
    assert (change.rows_before, change.rows_after, change.result_kind) == (6, 6, "dataframe")
    assert change.comparison == "aligned"


def test_describe_change_is_nan_aware_and_counts_dtype_changes(frame: pd.DataFrame) -> None:
    after = frame.copy()
    after["income"] = after["income"].copy()  # same values, same NaNs: not a change
    after["age"] = after["age"].astype(float)  # same numbers, new dtype: a change
    assert describe_change(frame, after).changed == ["age"]


def test_describe_change_compares_filtered_and_sorted_rows_on_their_labels(frame: pd.DataFrame) -> None:
    filtered = describe_change(frame, frame[frame["age"] > 30])
    assert (filtered.rows_after, filtered.changed, filtered.comparison) == (4, [], "common_index")
    assert describe_change(frame, frame.sort_values("income")).changed == []
    fixed = frame.sort_values("age", ascending=False)
    fixed.loc[0, "score"] = -1
    assert describe_change(frame, fixed).changed == ["score"]


def test_describe_change_gives_up_on_duplicate_labels(frame: pd.DataFrame) -> None:
    doubled = pd.concat([frame, frame])
    change = describe_change(frame, doubled)
    assert (change.comparison, change.changed, change.rows_after) == ("none", [], 12)


def test_describe_change_result_kinds(frame: pd.DataFrame) -> None:
    grouped = describe_change(frame, frame.groupby("group"))
    assert (grouped.result_kind, grouped.rows_after, grouped.created) == ("groupby", 6, [])
    other = describe_change(frame, frame["age"])
    assert (other.result_kind, other.rows_after) == ("other", None)


# ---------------------------------------------------------------------------------------------- derive


def test_multi_output_derive_gets_one_pair_per_output(frame: pd.DataFrame) -> None:
    result = run("df['ratio'] = df['score'] / df['age']\ndf['older'] = (df['age'] > 40).astype(int)", frame)
    assert result.verb == "derive"
    assert pairs(result) == {(frozenset({"score", "age"}), "ratio"), (frozenset({"age"}), "older")}


def test_derive_through_local_variables_and_functions(frame: pd.DataFrame) -> None:
    code = (
        "mean_age = df['age'].mean()\n"
        "def band(x):\n"
        "    if x > 40:\n"
        "        return 'old'\n"
        "    return 'young'\n"
        "centred = df.age - mean_age\n"
        "df['age_band'] = df['age'].apply(band)\n"
        "df['age_c'] = centred * df['score']\n"
    )
    result = run(code, frame)
    assert result.verb == "derive"
    assert pairs(result) == {(frozenset({"age"}), "age_band"), (frozenset({"age", "score"}), "age_c")}


def test_row_wise_apply_reads_the_fields_the_lambda_uses(frame: pd.DataFrame) -> None:
    code = "df['pick'] = df.apply(lambda row: row['score'] if row['age'] > 40 else row['income'], axis=1)"
    assert pairs(run(code, frame)) == {(frozenset({"score", "age", "income"}), "pick")}


def test_helper_column_read_by_another_output_is_not_an_output(frame: pd.DataFrame) -> None:
    # the experts' convention (panda_nuts age_sex_interaction): follow the helper through to the final output
    code = "df['adult'] = (df['age'] >= 40).astype(int)\ndf['adult_score'] = df['adult'] * df['score']"
    result = run(code, frame)
    assert pairs(result) == {(frozenset({"age", "score"}), "adult_score")}


def test_astype_overwrite_is_a_derive_of_the_column_itself(frame: pd.DataFrame) -> None:
    result = run("df['score'] = df['score'].astype(float)", frame)
    assert (result.verb, pairs(result)) == ("derive", {(frozenset({"score"}), "score")})


def test_rename_assign_insert_and_attribute_writes(frame: pd.DataFrame) -> None:
    assert pairs(run("df = df.rename(columns={'score': 'points'})", frame)) == {
        (frozenset({"score"}), "points")
    }
    code = "df = df.assign(a2=lambda d: d.age * 2, s2=df.score + 1)"
    assert pairs(run(code, frame)) == {(frozenset({"age"}), "a2"), (frozenset({"score"}), "s2")}
    assert pairs(run("df.insert(0, 'sq', df['age'] ** 2)", frame)) == {(frozenset({"age"}), "sq")}
    assert pairs(run("df.score = df.score * 10", frame)) == {(frozenset({"score"}), "score")}
    assert pairs(run("df['score'] += df['age']", frame)) == {(frozenset({"score", "age"}), "score")}


def test_loops_and_comprehensions_over_column_lists(frame: pd.DataFrame) -> None:
    loop = "for col in ['age', 'score']:\n    df[col + '_z'] = (df[col] - df[col].mean()) / df[col].std()"
    assert pairs(run(loop, frame)) == {(frozenset({"age"}), "age_z"), (frozenset({"score"}), "score_z")}
    listed = "cols = ['age', 'score']\ndf[[f'{c}_c' for c in cols]] = df[cols] - df[cols].mean()"
    assert pairs(run(listed, frame)) == {(frozenset({"age"}), "age_c"), (frozenset({"score"}), "score_c")}


def test_dummies_give_one_pair_per_dummy_column(frame: pd.DataFrame) -> None:
    result = run("df = pd.get_dummies(df, columns=['group'], drop_first=True)", frame)
    assert (result.verb, pairs(result)) == (
        "derive",
        {(frozenset({"group"}), "group_b"), (frozenset({"group"}), "group_c")},
    )
    code = "one_hot = pd.get_dummies(df['group'], prefix='g')\ndf = pd.concat([df, one_hot], axis=1)"
    assert {o for _, o in pairs(run(code, frame))} == {"g_a", "g_b", "g_c"}


def test_masked_assignment_reads_mask_and_value_not_the_target(frame: pd.DataFrame) -> None:
    # BLADE experts (reading edu_trans2, boxes y_majority_no_middle) list the mask's columns only
    recode = "df.loc[(df['edu'] == 'phd') | (df['edu'] == 'postdoc'), 'edu'] = 'doctorate'"
    assert run(recode, frame).verb == "derive"
    assert pairs(run(recode, frame)) == {(frozenset({"edu"}), "edu")}
    build = "df.loc[df['age'] > 40, 'band'] = 1\ndf.loc[df['age'] <= 40, 'band'] = 0"
    assert pairs(run(build, frame)) == {(frozenset({"age"}), "band")}


def test_group_transform_merged_back_stays_derive(frame: pd.DataFrame) -> None:
    result = run("df['group_mean'] = df.groupby('group')['score'].transform('mean')", frame)
    assert (result.verb, pairs(result)) == ("derive", {(frozenset({"score", "group"}), "group_mean")})


# ---------------------------------------------------------------------------------------------- impute


@pytest.mark.parametrize(
    "code, output",
    [
        ("df['income_filled'] = df['income'].fillna(df['income'].median())", "income_filled"),
        ("df['income'] = df['income'].fillna(0)", "income"),
        ("df['income'].fillna(0, inplace=True)", "income"),
        ("df.fillna({'income': 0}, inplace=True)", "income"),
        ("df['income'] = df['income'].interpolate()", "income"),
        ("df.loc[df['income'].isna(), 'income'] = -1", "income"),
        ("df['income2'] = df['income'].copy()\ndf.loc[pd.isna(df['income']), 'income2'] = 0", "income2"),
    ],
)
def test_filling_missing_values_is_impute(frame: pd.DataFrame, code: str, output: str) -> None:
    result = run(code, frame)
    assert (result.verb, pairs(result)) == ("impute", {(frozenset({"income"}), output)})


def test_whole_frame_fillna_only_reports_columns_that_had_gaps(frame: pd.DataFrame) -> None:
    result = run("df = df.fillna({'income': 0, 'edu': 'none'})", frame)
    assert (result.verb, pairs(result)) == (
        "impute",
        {(frozenset({"income"}), "income"), (frozenset({"edu"}), "edu")},
    )
    assert pairs(run("df = df.fillna(0)", frame)) == {
        (frozenset({"income"}), "income"),
        (frozenset({"edu"}), "edu"),
    }


def test_fillna_on_complete_data_is_still_impute_by_the_code(frame: pd.DataFrame) -> None:
    assert run("df['score'] = df['score'].fillna(0)", frame).verb == "impute"


def test_arithmetic_on_a_filled_column_is_derive(frame: pd.DataFrame) -> None:
    result = run("df['income_k'] = df['income'].fillna(0) * 1000", frame)
    assert (result.verb, pairs(result)) == ("derive", {(frozenset({"income"}), "income_k")})


# ---------------------------------------------------------------------------------------------- whole frame


@pytest.mark.parametrize(
    "code, inputs",
    [
        ("df = df[df['age'] <= 50]", {"age"}),
        (
            "lo = df['age'].mean() - df['age'].std()\ndf = df[(df['age'] >= lo) & (df.group != 'c')]",
            {"age", "group"},
        ),
        ("df = df.loc[df['score'] > 15].reset_index(drop=True)", {"score"}),
        ("cut = 40\ndf = df.query('age > @cut and score < 60')", {"age", "score"}),
        ("df = df.drop(df[df['score'] > 50].index)", {"score"}),
        ("df = df.dropna(subset=['income'])", {"income"}),
        ("df.dropna(subset=['edu'], inplace=True)", {"edu"}),
        ("df = df.dropna(axis=0)", set()),
        ("df = df.dropna()", set()),
    ],
)
def test_row_filters_list_the_predicate_columns(frame: pd.DataFrame, code: str, inputs: set[str]) -> None:
    result = run(code, frame)
    assert (result.verb, pairs(result)) == ("filter", {(frozenset(inputs), "")})


def test_filter_through_a_helper_column_follows_the_helper(frame: pd.DataFrame) -> None:
    code = "df['z'] = (df['age'] - df['age'].mean()) / df['age'].std()\ndf = df[df['z'].abs() < 1]"
    result = run(code, frame)
    assert (result.verb, pairs(result)) == ("filter", {(frozenset({"age"}), "")})


def test_filtering_into_another_variable_leaves_df_alone(frame: pd.DataFrame) -> None:
    # boxes df_clean: the expert called this 'other'
    result = run("df_clean = df.dropna(subset=['income'])", frame)
    assert (result.verb, pairs(result)) == ("other", {(frozenset({"income"}), "")})
    assert result.notes


def test_deduplicate_orderby_and_column_drop(frame: pd.DataFrame) -> None:
    dedup = run("df = df.drop_duplicates(subset=['group'])", frame)
    assert (dedup.verb, pairs(dedup)) == ("deduplicate", {(frozenset({"group"}), "")})
    order = run("df = df.sort_values(['group', 'age'])", frame)
    assert (order.verb, pairs(order)) == ("orderby", {(frozenset({"group", "age"}), "")})
    dropped = run("df = df.drop(columns=['edu'])", frame)
    assert (dropped.verb, pairs(dropped)) == ("other_impact_cols", {(frozenset({"edu"}), "")})


# ---------------------------------------------------------------------------------------------- groupby / rollup


def test_groupby_spec_with_blade_rewrite(frame: pd.DataFrame) -> None:
    code = "df_by_group = df.groupby(['group', 'edu'])"
    assert rewrite_groupby_targets(code) == "df_by_group_grp = df.groupby(['group', 'edu'])"
    result = run(code, frame)
    assert (result.verb, pairs(result)) == ("groupby", {(frozenset({"group", "edu"}), "")})


def test_groupby_object_left_in_df_is_groupby(frame: pd.DataFrame) -> None:
    grouped = frame.groupby("group")
    result = infer_transform("df = df.groupby('group')", frame, grouped)
    assert (result.verb, pairs(result), result.change.result_kind) == (
        "groupby",
        {(frozenset({"group"}), "")},
        "groupby",
    )


def test_rollup_named_aggregation_over_a_parent_groupby(frame: pd.DataFrame) -> None:
    grp = frame.groupby("group", as_index=False)
    code = "df = df_summed_grp.agg(age_mean=('age', 'mean'), score_max=('score', 'max'))"
    result = run(code, frame, df_summed_grp=grp)
    assert (result.verb, pairs(result)) == (
        "rollup",
        {(frozenset({"age"}), "age_mean"), (frozenset({"score"}), "score_max")},
    )


def test_rollup_dict_aggregation_then_rename(frame: pd.DataFrame) -> None:
    code = (
        "df = df_summed_grp.agg({'score': lambda x: (x > 25).any(), 'age': 'max'}).reset_index()\n"
        "df = df.rename(columns={'score': 'any_high', 'age': 'oldest'})"
    )
    result = run(code, frame, df_summed_grp=frame.groupby("group"))
    assert (result.verb, pairs(result)) == (
        "rollup",
        {(frozenset({"score"}), "any_high"), (frozenset({"age"}), "oldest")},
    )


def test_rollup_merged_back_into_the_rows(frame: pd.DataFrame) -> None:
    code = (
        "totals = df_summed_grp['score'].sum().reset_index()\n"
        "totals.columns = ['group', 'group_total']\n"
        "df = pd.merge(df, totals[['group', 'group_total']], on='group', how='left')"
    )
    result = run(code, frame, df_summed_grp=frame.groupby("group"))
    assert (result.verb, pairs(result)) == ("rollup", {(frozenset({"score"}), "group_total")})


def test_group_names_are_recognised_without_a_namespace(frame: pd.DataFrame) -> None:
    after = frame.copy()
    after["share"] = frame["score"] / frame.groupby("group")["score"].transform("sum")
    code = "df['share'] = df['score'] / df_g_grp['score'].transform('sum')"
    result = infer_transform(code, frame, after)
    assert (result.verb, pairs(result)) == ("derive", {(frozenset({"score"}), "share")})


# ---------------------------------------------------------------------------------------------- robustness


def test_unparsable_code_falls_back_to_the_observed_change(frame: pd.DataFrame) -> None:
    after = frame.assign(new=1)
    result = infer_transform("df['new'] = (", frame, after)
    assert result.verb == "derive"
    assert [m.output for m in result.mapping] == ["new"]
    assert result.notes


def test_rewrite_leaves_other_statements_untouched() -> None:
    code = "x = df.groupby('a').sum()  # not a bare groupby\ndf2   = df.groupby('a')\ndf['b'] = 1\n"
    assert rewrite_groupby_targets(code) == (
        "x = df.groupby('a').sum()  # not a bare groupby\ndf2_grp   = df.groupby('a')\ndf['b'] = 1\n"
    )


def test_analysis_of_runaway_loops_is_bounded() -> None:
    code = "for i in range(300):\n    for j in range(300):\n        for k in range(300):\n            df['x'] = df['a']\n"
    effects = analyse_code(code, ["a"])
    assert effects.error is not None
    assert effects.df is not None and effects.df.cols["x"].deps == frozenset({"a"})


# ---------------------------------------------------------------------------------------------- properties

_names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_ 0123456789", min_size=1, max_size=10).filter(
    lambda s: s.strip() == s and not keyword.iskeyword(s)
)


@st.composite
def _expression(draw: st.DrawFn, columns: list[str]) -> tuple[str, set[str]]:
    """A random arithmetic expression over ``df[...]`` columns and constants; returns (code, columns used)."""
    depth = draw(st.integers(0, 3))

    def build(level: int) -> tuple[str, set[str]]:
        if level == 0 or draw(st.booleans()):
            if draw(st.integers(0, 4)) == 0:
                return str(draw(st.integers(1, 9))), set()
            col = draw(st.sampled_from(columns))
            access = f"df[{col!r}]"
            if col.isidentifier() and draw(st.booleans()):
                access = f"df.{col}"  # attribute access where the name allows it
            return access, {col}
        op = draw(st.sampled_from(["+", "-", "*", "/"]))
        (left, lcols), (right, rcols) = build(level - 1), build(level - 1)
        wrap = draw(st.sampled_from(["({} {} {})", "np.abs({} {} {})", "np.round({} {} {}, 2)"]))
        return wrap.format(left, op, right), lcols | rcols

    code, used = build(depth)
    if not used:
        col = draw(st.sampled_from(columns))
        code, used = f"({code} + df[{col!r}])", {col}
    return code, used


_RESERVED = set(dir(pd.DataFrame)) | {"df", "np", "pd", "out"}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.data(),
    columns=st.lists(_names.filter(lambda s: s not in _RESERVED), min_size=1, max_size=6, unique=True),
)
def test_inferred_inputs_are_exactly_the_columns_an_expression_reads(
    data: st.DataObject, columns: list[str]
) -> None:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({c: rng.integers(1, 50, 8).astype(float) for c in columns})
    expr, used = data.draw(_expression(columns))
    via_local = data.draw(st.booleans())
    code = f"tmp = {expr}\ndf['out'] = tmp" if via_local else f"df['out'] = {expr}"
    with np.errstate(all="ignore"):
        result = run(code, frame)
    assert result.verb == "derive"
    assert pairs(result) == {(frozenset(used), "out")}


@settings(max_examples=40, deadline=None)
@given(data=st.data(), columns=st.lists(_names, min_size=1, max_size=5, unique=True))
def test_filter_inputs_are_exactly_the_predicate_columns(data: st.DataObject, columns: list[str]) -> None:
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({c: rng.integers(0, 10, 12) for c in columns})
    used = data.draw(st.lists(st.sampled_from(columns), min_size=1, max_size=3, unique=True))
    terms = [
        f"(df[{c!r}] {data.draw(st.sampled_from(['>', '<=', '!=']))} {data.draw(st.integers(0, 9))})"
        for c in used
    ]
    joiner = data.draw(st.sampled_from([" & ", " | "]))
    code = f"df = df[{joiner.join(terms)}]"
    result = run(code, frame)
    assert (result.verb, pairs(result)) == ("filter", {(frozenset(used), "")})


@settings(max_examples=30, deadline=None)
@given(
    columns=st.lists(_names, min_size=1, max_size=6, unique=True),
    suffix=st.sampled_from(["_sq", "_log", "2"]),
)
def test_a_loop_over_a_column_list_gives_one_pair_per_column(columns: list[str], suffix: str) -> None:
    assume(not {c + suffix for c in columns} & set(columns))  # no output doubles as a later input
    frame = pd.DataFrame({c: [1.0, 2.0, 3.0] for c in columns})
    code = f"for c in {columns!r}:\n    df[c + {suffix!r}] = np.log1p(df[c] ** 2)"
    result = run(code, frame)
    assert result.verb == "derive"
    assert pairs(result) == {(frozenset({c}), c + suffix) for c in columns}


@settings(max_examples=40, deadline=None)
@given(
    n_cols=st.integers(1, 6),
    ops=st.lists(st.sampled_from(["keep", "change", "drop", "retype"]), min_size=6, max_size=6),
    n_new=st.integers(0, 3),
)
def test_describe_change_finds_exactly_the_modified_columns(n_cols: int, ops: list[str], n_new: int) -> None:
    rng = np.random.default_rng(2)
    before = pd.DataFrame({f"c{i}": rng.normal(size=10) for i in range(n_cols)})
    before.iloc[::3, 0] = np.nan
    after = before.copy()
    expect_changed, expect_removed = [], []
    for i, op in zip(range(n_cols), ops, strict=False):
        name = f"c{i}"
        if op == "change":
            after[name] = after[name] + 1
            expect_changed.append(name)
        elif op == "drop":
            after = after.drop(columns=[name])
            expect_removed.append(name)
        elif op == "retype":
            after[name] = after[name].astype(object)
            expect_changed.append(name)
    for j in range(n_new):
        after[f"new{j}"] = j
    change = describe_change(before, after)
    assert change.changed == expect_changed
    assert change.removed == expect_removed
    assert change.created == [f"new{j}" for j in range(n_new)]


# ---------------------------------------------------------------------------------------------- the experts


def _load_benchmark() -> ModuleType:
    path = PROJECT_ROOT / "benchmarks" / "extractor_fidelity.py"
    spec = importlib.util.spec_from_file_location("extractor_fidelity", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)  # dataclasses look their module up while the file executes
    spec.loader.exec_module(module)
    return module


def test_agreement_with_blade_experts() -> None:
    if not BLADE_DATASETS.is_dir():
        from tests.conftest import unavailable

        unavailable("shared", f"the shared BLADE datasets are not at {BLADE_DATASETS} (../shared/blade)")
    bench = _load_benchmark()
    results = bench.run_all(BLADE_DATASETS)
    assert len(results) == 100
    assert not [r for r in results if r.error]
    consistent = [r for r in results if r.inconsistent is None]
    overall, checked = bench.shares(results), bench.shares(consistent)
    misses = [(r.dataset, r.spec_name) for r in consistent if not r.both_ok]
    assert checked.verb >= 0.97, misses
    assert checked.mapping >= 0.97, misses
    assert overall.verb >= 0.97
    # every annotation listed as contradicting its own code must really disagree (else the list is stale)
    still_listed = {(r.dataset, r.spec_name) for r in results if r.inconsistent is not None and not r.both_ok}
    assert still_listed == set(bench.EXPERT_INCONSISTENCIES)

"""The libraries analysis code can import (scikit-learn, scipy) inside bubblewrap, and a missing one named.

BLADE's reviewed transforms call scikit-learn (caschools' scalers, boxes' one-hot encoders); BLADE recorded
the value hash of each one's output column (``state_col_val_hash``). Adopted as ground truth, they must now
build to those very hashes, with every path complete. Code importing a library that is not installed fails
with the library's name: in ``gt build`` (a warning naming dataset, transform and paths), in the sanity check
and in scoring.
"""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from curation.cli import main
from evaluation.groundtruth import DatasetSource, build_dataset, sources_from_blade_folders
from evaluation.groundtruth.build import cache_key
from evaluation.sandbox import check_model, check_transform
from evaluation.submissions import parse_submission
from evaluation.transform_credit import transform_credit
from exports.native import write_release
from exports.schema import Release, ReleaseBranch, ReleaseMapping, ReleaseTransform

pytestmark = pytest.mark.usefixtures("os_sandbox")

ROOT = "ROOT_SPEC_ID"
ABSENT = "forkpaths_absent_library"


def _reference(shared_blade: Path) -> dict:
    return json.loads((shared_blade / "reference" / "blade_loader_reference.json").read_text())


def _adopt_sklearn_alternatives(source: DatasetSource) -> tuple[DatasetSource, dict[str, str]]:
    """The dataset with its reviewed scikit-learn alternatives adopted as transforms below ROOT; and, per
    output column, the value hash BLADE recorded for it."""
    ds = source.dataset.model_copy(deep=True)
    expected: dict[str, str] = {}
    for alt in ds.alternatives:
        code = str(alt.payload.get("code") or "")
        if alt.kind != "transform" or "sklearn" not in code:
            continue
        out = str(alt.payload["output_col"])
        expected[out] = alt.extra["blade"]["state_col_val_hash"]
        ds.transforms.append(ReleaseTransform(
            id=f"adopted_{out}", annotator="A", spec_name=f"adopted_{out}", verbs=["derive"], code=code,
            mapping=[ReleaseMapping(inputs=[], output=out)], branches=[ReleaseBranch(dependencies=[ROOT])]))
    return DatasetSource(ds, source.data_path), expected


def test_blade_sklearn_transforms_build_to_blades_own_hashes(shared_blade: Path) -> None:
    # caschools' two reviewed scalers ran on the raw table (boxes' and amtl's encoders ran after transforms
    # whose ids BLADE did not keep, so their recorded hashes cannot be reproduced from the release)
    name = "caschools"
    source = sources_from_blade_folders([shared_blade / "datasets" / name])[0]
    adopted, expected = _adopt_sklearn_alternatives(source)
    assert expected, f"{name} has reviewed transforms that call scikit-learn"
    ref = _reference(shared_blade)[name]
    state = build_dataset(adopted).state
    assert state.errors == []
    assert state.meta["failed_transforms"] == []
    # every path complete: the expert ones as BLADE's loader built them, plus the adopted sklearn ones
    assert len(state.paths) >= ref["num_paths"] + 1
    assert set(ref["value_hashes"]) <= set(state.value_hashes)
    assert set(ref["graph_hashes"]) <= set(state.graph_hashes)
    for out, blade_hash in expected.items():
        unit = next(uid for uid, u in state.units.items() if u.output == out)
        columns = [c for c in state.columns if c.unit == unit]
        assert columns and all(c.graph_hash for c in columns), out
        assert blade_hash in {c.value_hash for c in columns}, out


def test_sklearn_and_scipy_import_in_the_sanity_check(shared_blade: Path) -> None:
    data = shared_blade / "datasets" / "caschools" / "data.csv"
    check = check_transform(data_path=data, parent_codes=[], code=(
        "from sklearn.ensemble import IsolationForest\n"
        "df['outlier'] = IsolationForest(random_state=0).fit_predict(df[['expenditure']])\n"
        "import scipy.stats as st\ndf['z'] = st.zscore(df['expenditure'])"))
    assert check.ok, check.error
    assert set(check.change.created) == {"outlier", "z"}  # type: ignore[union-attr]
    model = check_model(data_path=data, transform_codes=[], code=(
        "from sklearn.linear_model import LinearRegression\n"
        "model = LinearRegression().fit(df[['expenditure']], df['read'])"))
    assert model.ok, model.error


def test_a_missing_library_is_named_by_the_sanity_check(shared_blade: Path) -> None:
    data = shared_blade / "datasets" / "caschools" / "data.csv"
    check = check_transform(data_path=data, parent_codes=[], code=f"df['x'] = 1\nfrom {ABSENT}.sub import f")
    assert not check.ok
    assert f"the library '{ABSENT}' is not installed in the sandbox" in (check.error or "")
    assert "scikit-learn (sklearn)" in (check.error or "")  # and what it can import instead


def _hand_source(tmp_path: Path, *transforms: ReleaseTransform) -> DatasetSource:
    from exports.manifest import sha256_file
    from exports.schema import DatasetRelease

    data = tmp_path / "data.csv"
    data.write_text("a,b\n1,5\n2,6\n3,7\n4,8\n")
    ds = DatasetRelease(name="hand", research_question="?", data_file="data/hand/data.csv",
                        data_sha256=sha256_file(data),
                        num_rows=4, num_columns=2, transforms=list(transforms))
    return DatasetSource(ds, data)


def _t(tid: str, code: str, output: str, *deps: str) -> ReleaseTransform:
    return ReleaseTransform(id=tid, annotator="A", spec_name=tid, verbs=["derive"], code=code,
                            mapping=[ReleaseMapping(inputs=["a"], output=output)],
                            branches=[ReleaseBranch(dependencies=list(deps or [ROOT]))])


def test_gt_build_warns_which_dataset_transform_and_paths_a_missing_library_cut(
        tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    src = _hand_source(tmp_path,
                       _t("fine", "df['x'] = df['a'] * 2", "x"),
                       _t("needs_lib", f"import {ABSENT}\ndf['y'] = df['a'] + 1", "y"),
                       _t("after", "df['z'] = df['y'] + 1", "z", "needs_lib"),
                       _t("after_fine", "df['w'] = df['x'] + 1", "w", "fine"))
    state = build_dataset(src).state
    [failed] = state.meta["failed_transforms"]
    assert failed["transform"] == "needs_lib" and failed["missing_library"] == ABSENT
    assert len(failed["paths"]) == 1 and state.paths[failed["paths"][0]].order[-1] == "after"
    [error] = state.errors
    assert "dataset 'hand'" in error and "'needs_lib'" in error and f"No module named '{ABSENT}'" in error
    assert "1 of 2 analysis paths stops there" in error

    release = Release(version="1.0.0", created_at=datetime(2026, 1, 1, tzinfo=UTC), app_version="test",
                      datasets=[src.dataset])
    folder = write_release(release, {"hand": src.data_path}, tmp_path / "releases")
    monkeypatch.setenv("FORKPATHS_DATA_DIR", str(tmp_path / "data"))
    for flags in (["--json"], []):
        assert main(["gt", "build", str(folder), *flags]) == 0
        out, err = capsys.readouterr()
        assert err.startswith("warning: dataset 'hand': transform 'needs_lib' raised ModuleNotFoundError")
        assert f"the library '{ABSENT}' is not installed in the sandbox" in err
        if flags:
            line = json.loads(out)
            assert line["failed_transforms"][0]["missing_library"] == ABSENT
            assert line["errors"] == [err.strip().removeprefix("warning: ")]


def test_scoring_names_the_missing_library_of_an_agents_transform(shared_blade: Path) -> None:
    source = sources_from_blade_folders([shared_blade / "datasets" / "caschools"])[0]
    credit = transform_credit(source.dataset, source.data_path)
    raw = {"dataset_name": "caschools", "analyses": [{
        "cvars": {"ivs": [], "dv": {"description": "reading", "columns": ["read"]}, "controls": []},
        "transform_code": f"def transform(df):\n    import {ABSENT}\n    return df",
        "m_code": "def model(df):\n    return None"}]}
    [analysis] = parse_submission(copy.deepcopy(raw)).analyses
    match = credit.match(analysis)
    assert match.status == "failed"
    assert f"the library '{ABSENT}' is not installed in the sandbox" in match.message


def test_the_ground_truth_cache_is_keyed_by_the_analysis_libraries(shared_blade: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A state built while scikit-learn was missing has paths cut short: installing it must rebuild."""
    from importlib import metadata

    source = sources_from_blade_folders([shared_blade / "datasets" / "caschools"])[0]
    installed = cache_key(source)
    real = metadata.version

    def without_sklearn(name: str) -> str:
        if name == "scikit-learn":
            raise metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(metadata, "version", without_sklearn)
    assert cache_key(source) != installed


def test_a_listed_library_that_went_missing_asks_for_a_reinstall(monkeypatch: pytest.MonkeyPatch) -> None:
    from evaluation.sandbox import libraries
    from evaluation.sandbox.libraries import missing_library, missing_library_sentence

    monkeypatch.setitem(libraries.ANALYSIS_LIBRARIES, "forkpaths_gone_lib", "forkpaths-gone-lib")
    try:
        try:
            raise ModuleNotFoundError("No module named 'forkpaths_gone_lib'", name="forkpaths_gone_lib.sub")
        except ModuleNotFoundError as inner:
            raise RuntimeError("while encoding") from inner
    except RuntimeError as exc:
        name = missing_library(exc)
    assert name == "forkpaths_gone_lib"
    sentence = missing_library_sentence(name)
    assert "'forkpaths_gone_lib' (forkpaths-gone-lib) should be installed" in sentence
    assert "reinstall forkpaths" in sentence
    assert missing_library(KeyError("x")) is None


def test_a_missing_module_of_an_installed_library_does_not_ask_for_a_reinstall() -> None:
    """``import sklearn.nonexistent_mod`` (a typo, or a module of another version) blamed the installation:
    "the library 'sklearn' should be installed but is missing: reinstall forkpaths". sklearn is there."""
    from evaluation.sandbox.libraries import missing_library, missing_library_sentence

    try:
        import sklearn.nonexistent_mod  # type: ignore[import-not-found]  # noqa: F401
    except ModuleNotFoundError as exc:
        assert missing_library(exc) is None
    try:
        import forkpaths_no_such_lib.sub  # type: ignore[import-not-found]  # noqa: F401
    except ModuleNotFoundError as exc:
        assert missing_library(exc) == "forkpaths_no_such_lib"
    evil = missing_library_sentence("\x1b[2Jevil\u202e")  # importlib.import_module takes any string
    assert "'\\x1b[2Jevil\\u202e' is not installed" in evil
    assert not any(ord(c) < 32 or c == "\u202e" for c in evil)

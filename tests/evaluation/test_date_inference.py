"""Value hashes that depend on pandas' date inference are flagged (issue 15, point 6).

BLADE hashed object columns that parse as dates with pandas 1.5, which read each value on its own (dateutil:
``01.08.1983`` is 8 January). pandas 2 infers one format from the first value for the whole column
(``31.08.1983`` first: every value is day-first), or, when a later value breaks that format, does not parse
the column at all and it is hashed as text. Such columns get value hashes that can differ from BLADE's
published ones; ``gt build --json`` lists them per dataset under ``date_inferred_columns``.
"""

from __future__ import annotations

import hashlib
import io
import json
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import pytest
from dateutil import parser as dateutil_parser

from curation.cli import main
from evaluation.groundtruth import DatasetSource, build_dataset
from evaluation.groundtruth.hashing import blade_value_hash, date_parse_depends_on_inference
from exports.manifest import sha256_file
from exports.native import write_release
from exports.schema import DatasetRelease, Release, ReleaseBranch, ReleaseMapping, ReleaseTransform

pytestmark = pytest.mark.usefixtures("os_sandbox")

CSV = """player,club,goals,birthday,joined,seen
Ana,FC Köln,3,31.08.1983,01.07.2010,2012-03-04
Ben,FC Köln,0,01.08.1983,15.07.2011,2012-05-06
Cem,Bayern,5,12.03.1990,02.01.2012,2013-07-08
Dan,Bayern,2,05.11.1988,20.08.2009,2014-09-10
"""


def _blade15_hash(values: list[str]) -> str:
    """BLADE's value hash of a date column as its pandas 1.5 computed it: every value parsed on its own."""
    return hashlib.sha256(":".join(dateutil_parser.parse(v).strftime("%Y-%m-%d %H:%M:%S")
                                   for v in values).encode()).hexdigest()


@pytest.mark.filterwarnings("ignore:Parsing dates in:UserWarning", "ignore:Could not infer format:UserWarning")
def test_the_flag_marks_exactly_the_columns_whose_reading_differs() -> None:
    frame = pd.read_csv(io.StringIO(CSV))
    # birthday: pandas 2 reads all day-first (from 31.08.1983); pandas 1.5 read 01.08.1983 as 8 January
    assert pd.to_datetime(frame["birthday"])[1] == pd.Timestamp("1983-08-01")
    assert dateutil_parser.parse("01.08.1983") == datetime(1983, 1, 8)
    assert blade_value_hash(frame["birthday"]) != _blade15_hash(list(frame["birthday"]))
    # joined: pandas 2 infers month-first from 01.07.2010, fails on 15.07.2011 and hashes text; 1.5 parsed it
    with pytest.raises(ValueError):
        pd.to_datetime(frame["joined"])
    assert blade_value_hash(frame["joined"]) != _blade15_hash(list(frame["joined"]))
    # seen (ISO dates) reads the same either way; text and numbers are not dates
    assert blade_value_hash(frame["seen"]) == _blade15_hash(list(frame["seen"]))
    flagged = {c for c in frame.columns if date_parse_depends_on_inference(frame[c])}
    assert flagged == {"birthday", "joined"}


def test_gt_build_json_flags_the_date_inferred_columns_per_dataset(
        tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "data.csv"
    data.write_text(CSV, encoding="utf-8")
    transform = ReleaseTransform(
        id="scorers", annotator="A", spec_name="scorers", verbs=["filter"], code="df = df[df['goals'] > 0]",
        mapping=[ReleaseMapping(inputs=["goals"], output="")], branches=[ReleaseBranch(dependencies=[])])
    ds = DatasetRelease(name="players", research_question="?", data_file="data/players/data.csv",
                        data_sha256=sha256_file(data), num_rows=4, num_columns=6, transforms=[transform])
    state = build_dataset(DatasetSource(ds, data)).state
    flagged = state.meta["date_inferred_columns"]
    assert set(flagged) == {"birthday", "joined"}
    kept = pd.read_csv(data).query("goals > 0")
    assert flagged["birthday"] == [blade_value_hash(kept["birthday"])]  # the hash after the filter
    assert set(flagged["birthday"]) <= set(state.value_hashes)

    release = Release(version="1.0.0", created_at=datetime(2026, 1, 1, tzinfo=UTC), app_version="test",
                      datasets=[ds])
    folder = write_release(release, {"players": data}, tmp_path / "releases")
    monkeypatch.setenv("FORKPATHS_DATA_DIR", str(tmp_path / "home"))
    assert main(["gt", "build", str(folder), "--json"]) == 0
    line = json.loads(capsys.readouterr().out)
    assert line["date_inferred_columns"] == flagged
    assert main(["gt", "build", str(folder)]) == 0
    assert "read as dates by pandas' inference (value hashes may differ from BLADE's published ones): " \
           "birthday, joined" in capsys.readouterr().out


@pytest.mark.filterwarnings("ignore:Parsing dates in:UserWarning", "ignore:Could not infer format:UserWarning")
def test_columns_the_expert_code_derives_from_dates_are_attributed(
        tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    """BLADE's soccer derives two columns from ``birthday`` with pd.to_datetime (its annotations: specs
    calculate_age and player_age_days). The year is the same however ``01.08.1983`` is read, so ``age`` hashes as
    in BLADE; the days are not, so ``player_age_days`` (and a column computed from it) hash differently: soccer's
    second differing hash. ``gt build --json`` lists those under ``date_derived_columns``."""
    data = tmp_path / "data.csv"
    data.write_text(CSV, encoding="utf-8")

    def spec(sid: str, code: str, inputs: list[str], output: str, deps: list[str] | None = None) -> ReleaseTransform:
        return ReleaseTransform(id=sid, annotator="A", spec_name=sid, verbs=["derive"], code=code,
                                mapping=[ReleaseMapping(inputs=inputs, output=output)],
                                branches=[ReleaseBranch(dependencies=deps or [])])

    transforms = [
        spec("calculate_age", "df['age'] = 2013 - pd.to_datetime(df['birthday']).dt.year", ["birthday"], "age"),
        spec("player_age_days", "df['player_age_days'] = (pd.to_datetime('2013-01-01') - "
             "pd.to_datetime(df['birthday'])).dt.days", ["birthday"], "player_age_days", ["calculate_age"]),
        spec("age_years", "df['age_years'] = df['player_age_days'] / 365.25", ["player_age_days"], "age_years",
             ["player_age_days"]),
        spec("goals_sq", "df['goals_sq'] = df['goals'] ** 2", ["goals"], "goals_sq", ["age_years"])]
    ds = DatasetRelease(name="players", research_question="?", data_file="data/players/data.csv",
                        data_sha256=sha256_file(data), num_rows=4, num_columns=6, transforms=transforms)
    state = build_dataset(DatasetSource(ds, data)).state
    derived = state.meta["date_derived_columns"]
    assert set(derived) == {"player_age_days", "age_years"}  # not age (same year), not goals_sq
    frame = pd.read_csv(data)
    pandas2 = (pd.Timestamp("2013-01-01") - pd.to_datetime(frame["birthday"])).dt.days
    pandas15 = (pd.Timestamp("2013-01-01") - pd.to_datetime(frame["birthday"], format="mixed")).dt.days
    assert list(pandas2 != pandas15) == [False, True, True, True]  # only 31.08.1983 reads the same both ways
    assert derived["player_age_days"] == [blade_value_hash(pandas2.rename("player_age_days"))]
    assert set(derived["player_age_days"]) <= set(state.value_hashes)
    assert set(state.meta["date_inferred_columns"]) == {"birthday", "joined"}  # the hasher's own reading

    release = Release(version="1.0.0", created_at=datetime(2026, 1, 1, tzinfo=UTC), app_version="test",
                      datasets=[ds])
    folder = write_release(release, {"players": data}, tmp_path / "releases")
    monkeypatch.setenv("FORKPATHS_DATA_DIR", str(tmp_path / "home"))
    assert main(["gt", "build", str(folder), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["date_derived_columns"] == derived
    assert main(["gt", "build", str(folder)]) == 0
    assert "computed by the expert code from dates pandas 2 reads differently from BLADE's pandas 1.5 " \
           "(value hashes differ from BLADE's published ones): age_years, player_age_days" in capsys.readouterr().out

"""``forkpaths check``: the annotate page's sanity check from a terminal, for curators and scripts."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from curation.bootstrap import initialise
from curation.db import session_scope
from curation.models import Role, User
from curation.services.datasets import assign_analysts
from curation.settings import Settings
from tests import factories as f
from tests.cli_runner import forkpaths

ADMIN_PASSWORD = "admin password 1"


@pytest.fixture
def setup(tmp_path: Path) -> dict[str, str]:
    """A data folder with the storms dataset, an analyst 'ana' with a full analysis, and the admin."""
    settings = Settings(data_dir=tmp_path / "data", database_url=None, load_starter_datasets=False,
                        admin_password=ADMIN_PASSWORD)
    engine = initialise(settings).engine
    ana = f.user(engine, "ana")
    ds = f.dataset(engine, settings.datasets_store)
    with session_scope(engine) as s:
        admin = s.get(User, 1)
        assert admin is not None and admin.role == Role.ADMIN.value
        assign_analysts(session=s, actor=admin, dataset_id=ds.id or 0, user_ids=[ana.id or 0, admin.id or 0])
    ids = f.full_analysis(engine, ana, ds.id or 0)
    engine.dispose()
    return ids


def cli(tmp_path: Path, *args: str, stdin: str = "", process: bool = False) -> subprocess.CompletedProcess[str]:
    """``forkpaths check ARGS`` in this process (``process``: the real command)."""
    return forkpaths(tmp_path, "check", *args, stdin=stdin, process=process)


def test_transform_check_prints_rows_columns_verb_and_output(tmp_path: Path, setup: dict[str, str]) -> None:
    code = tmp_path / "t.py"
    code.write_text("df['w2'] = df['wind'] * 2\nprint('hello from the check')\n")

    r = cli(tmp_path, "storms", "--code-file", str(code), "--as", "ana", process=True)  # the real command, once

    assert r.returncode == 0, r.stderr
    assert "OK: the code ran in" in r.stdout and "Rows: 4 → 4." in r.stdout
    assert "created: w2" in r.stdout and "suggested verb: derive; mapping: wind → w2" in r.stdout
    assert "printed:\nhello from the check" in r.stdout


def test_after_uses_the_users_own_transforms_by_name_or_id(tmp_path: Path, setup: dict[str, str]) -> None:
    code = tmp_path / "t.py"
    code.write_text("df['twice'] = df['log_deaths'] * 2")

    by_name = cli(tmp_path, "storms", "--code-file", str(code), "--after", "log_deaths", "--as", "ana", "--json")
    by_id = cli(tmp_path, "storms", "--code-file", str(code), "--after", setup["transform"], "--as", "ana")
    without = cli(tmp_path, "storms", "--code-file", str(code), "--as", "ana")

    assert by_name.returncode == 0, by_name.stderr
    check = json.loads(by_name.stdout)
    assert check["ok"] and check["change"]["created"] == ["twice"] and check["code"] == code.read_text()
    assert by_id.returncode == 0, by_id.stderr
    assert without.returncode == 1
    assert "FAILED: Line 1 of this transform's code raised KeyError: 'log_deaths'" in without.stdout


def test_model_check_prints_the_summary(tmp_path: Path, setup: dict[str, str]) -> None:
    code = "import statsmodels.formula.api as smf\nmodel = smf.ols('log_deaths ~ masfem', data=df).fit()\n"

    r = cli(tmp_path, "storms", "--code-file", "-", "--model", "--after", "log_deaths", "--as", "ana", stdin=code)

    assert r.returncode == 0, r.stderr
    assert "OK: the model was fitted in" in r.stdout and "OLS Regression Results" in r.stdout


def test_bad_input_gets_a_sentence(tmp_path: Path, setup: dict[str, str]) -> None:
    code = tmp_path / "t.py"
    code.write_text("df['a'] = 1")

    missing_file = cli(tmp_path, "storms", "--code-file", str(tmp_path / "nope.py"))
    no_dataset = cli(tmp_path, "rainfall", "--code-file", str(code))
    no_transform = cli(tmp_path, "storms", "--code-file", str(code), "--after", "nope", "--as", "ana")
    no_user = cli(tmp_path, "storms", "--code-file", str(code), "--as", "ghost")
    # The admin has no analysis of this dataset: the analyst's transforms are not theirs to run.
    peers = cli(tmp_path, "storms", "--code-file", str(code), "--after", "log_deaths")

    for r in (missing_file, no_dataset, no_transform, no_user, peers):
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert "Could not read the code file" in missing_file.stderr
    assert "There is no dataset called 'rainfall'" in no_dataset.stderr
    assert "You have no transform 'nope' in this dataset; yours: log_deaths (" in no_transform.stderr
    assert "No active user 'ghost'" in no_user.stderr
    assert "You have no transform 'log_deaths' in this dataset; yours: none yet." in peers.stderr

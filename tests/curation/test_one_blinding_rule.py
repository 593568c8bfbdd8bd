"""One blinding rule everywhere (issue 15, point 2).

``gt build``, ``score`` (its result file), Run details and release exports withhold a dataset's ground truth from
whoever is blind to it, with the same sentence. The rule hides peers' work, so where there is none nothing is
hidden: a fresh install's first admin, assigned to the empty starter datasets, can cut and export a release.
A new release holds the datasets that have ground truth; empty ones are listed and left out unless asked for.
``--as USER`` works anywhere on the command line.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from sqlmodel import select

from curation.bootstrap import initialise
from curation.cli import _take_as, main
from curation.db import session_scope
from curation.errors import BlindingViolation, CurationError
from curation.models import Dataset, Role, User
from curation.services import release_exports as rex
from curation.services import releases as rel
from curation.services.annotation import submit_analysis
from curation.services.blinding import blinding_reason
from curation.services.datasets import assign_analysts
from curation.services.leaderboard import viewable_result
from curation.settings import Settings
from tests import factories as f
from tests.cli_runner import forkpaths
from tests.factories import artifacts_for

STARTERS = ("affairs_redbook", "anes96", "rand_hie")


def _fresh_cli(tmp_path: Path, *args: str, process: bool = False) -> subprocess.CompletedProcess[str]:
    """``forkpaths`` as a fresh clone runs it: starter datasets on, SQLite in the data folder (in this process;
    ``process``: the real command)."""
    return forkpaths(tmp_path, *args, starters=True, process=process)


def test_a_fresh_install_imports_cuts_and_exports_as_the_first_admin(tmp_path, shared_blade):
    init = _fresh_cli(tmp_path, "init", process=True)  # the real command, once
    assert init.returncode == 0, init.stderr
    imported = _fresh_cli(tmp_path, "import-blade", str(shared_blade / "datasets" / "hurricane"))
    assert imported.returncode == 0, imported.stderr
    cut = _fresh_cli(tmp_path, "release", "create", "--version", "0.1.0")
    assert cut.returncode == 0, cut.stderr
    # The starters come with accepted programmatic checks (ground truth of their own), so none is left out.
    assert "Left out" not in cut.stdout, cut.stdout
    record = json.loads((tmp_path / "data" / "releases" / "0.1.0" / "release.json").read_text())
    assert {d["name"] for d in record["datasets"]} == {"hurricane", *STARTERS}
    assert all(d["parts"]["programmatic"]["tasks"] for d in record["datasets"] if d["name"] in STARTERS)
    out = tmp_path / "X"
    export = _fresh_cli(tmp_path, "release", "export", "0.1.0", "--format", "blade", "--out", str(out))
    assert export.returncode == 0, export.stderr
    assert (out / "0.1.0-blade" / "hurricane" / "annotations.csv").is_file()
    # Asked for, the empty starters are released too; they hold no peers' work, so nothing is hidden from the
    # admin assigned to them (--as given after the subcommand, where the user types it last).
    cut = _fresh_cli(tmp_path, "release", "create", "--version", "0.2.0", "--include-empty", "--as", "admin")
    assert cut.returncode == 0 and "Left out" not in cut.stdout, cut.stderr
    listed = _fresh_cli(tmp_path, "--as", "admin", "release", "list")
    assert listed.returncode == 0 and "withheld" not in listed.stdout, listed.stdout + listed.stderr
    assert all(name in listed.stdout for name in STARTERS)
    export = _fresh_cli(tmp_path, "release", "export", "0.2.0", "--as=admin", "--out", str(out))
    assert export.returncode == 0, export.stderr
    assert {p.name for p in (out / "0.2.0" / "data").iterdir()} == {"hurricane", *STARTERS}


@pytest.fixture
def blind_curator(tmp_path, monkeypatch, shared_blade):
    """Hurricane imported (BLADE's experts' work) and released; curator 'cass' is assigned to annotate it and
    has not submitted; evaluator 'evie' is not."""
    monkeypatch.setenv("FORKPATHS_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("FORKPATHS_ADMIN_PASSWORD", "admin password 1")
    monkeypatch.setenv("FORKPATHS_LOAD_STARTER_DATASETS", "false")
    monkeypatch.delenv("FORKPATHS_DATABASE_URL", raising=False)
    settings = Settings()
    engine = initialise(settings).engine
    assert main(["import-blade", str(shared_blade / "datasets" / "hurricane")]) == 0
    cass, evie = f.user(engine, "cass", Role.CURATOR), f.user(engine, "evie", Role.EVALUATOR)
    with session_scope(engine) as s:
        admin = s.exec(select(User).where(User.username == "admin")).one()
        hurricane = s.exec(select(Dataset).where(Dataset.name == "hurricane")).one()
        assign_analysts(session=s, actor=admin, dataset_id=hurricane.id, user_ids=[cass.id])
    assert main(["release", "create", "--version", "1.0.0"]) == 0
    yield settings, engine, cass, evie
    engine.dispose()


def test_a_blind_curator_is_refused_hurricanes_ground_truth_everywhere_with_one_reason(
        blind_curator, tmp_path, shared_blade, capsys):
    settings, engine, cass, evie = blind_curator
    why = blinding_reason("hurricane", started=False, assigned=True)
    capsys.readouterr()
    # The export: refused, with the reason.
    assert main(["release", "export", "1.0.0", "--as", "cass", "--out", str(tmp_path / "x")]) == 2
    refused = capsys.readouterr().err
    assert why in refused and not (tmp_path / "x").exists()
    # gt build, by version and by the release's folder: refused with the same reason, no hashes printed.
    for release in ("1.0.0", str(settings.releases_store / "1.0.0")):
        assert main(["gt", "build", release, "--json", "--as", "cass"]) == 2
        out = capsys.readouterr()
        assert why in out.err and "value_hashes" not in out.out
    # score: refused before anything runs, so no result file (and no run) exists.
    sub = shared_blade / "examples" / "multirun_analyses.json"
    result = tmp_path / "result.json"
    assert main(["score", "--as", "cass", "--release", "1.0.0", "--submission", str(sub), "--out", str(result)]) == 2
    assert why in capsys.readouterr().err and not result.exists()
    assert main(["runs", "list", "--json"]) == 0 and json.loads(capsys.readouterr().out) == []
    # An evaluator who annotates nothing scores it; Run details leave hurricane out for cass, with the reason.
    assert main(["score", "--release", "1.0.0", "--submission", str(sub), "--out", str(result), "--as", "evie"]) == 0
    assert "hurricane" in result.read_text()
    with session_scope(engine) as s:
        shown, withheld = viewable_result(session=s, actor=cass, run_id=1, artifacts=settings.artifact_store())
        assert withheld == {"hurricane": why} and shown.datasets == []
        shown, withheld = viewable_result(session=s, actor=evie, run_id=1, artifacts=settings.artifact_store())
        assert withheld == {} and [d.dataset for d in shown.datasets] == ["hurricane"]
    # Once an admin removes the assignment (cass had not started), nothing is withheld any more.
    with session_scope(engine) as s:
        admin = s.exec(select(User).where(User.username == "admin")).one()
        assign_analysts(session=s, actor=admin, dataset_id=_hurricane_id(engine), user_ids=[])
    capsys.readouterr()
    assert main(["gt", "build", "1.0.0", "--as", "cass", "--json"]) == 0
    assert "value_hashes" in capsys.readouterr().out
    with session_scope(engine) as s:
        assert viewable_result(session=s, actor=cass, run_id=1, artifacts=settings.artifact_store())[1] == {}


def _hurricane_id(engine) -> int:
    with session_scope(engine) as s:
        return s.exec(select(Dataset).where(Dataset.name == "hurricane")).one().id


def test_a_refusal_gives_one_sentence_per_cause(engine, store, tmp_path):
    boss, peer, cur = f.user(engine, "boss-c", Role.ADMIN), f.user(engine, "peer-c"), f.user(engine, "cur-c", Role.CURATOR)
    names = ("alpha", "beta", "gamma", "empty")
    ids = {n: f.dataset(engine, store, name=n, assign=[boss, peer]).id for n in names}
    for n in ("alpha", "beta", "gamma"):  # peers' work on three of them; 'empty' holds none
        f.full_analysis(engine, peer, ids[n])
        with session_scope(engine) as s:
            submit_analysis(session=s, actor=peer, dataset_id=ids[n])
    f.full_analysis(engine, boss, ids["gamma"], checked=False)  # started on gamma, not submitted
    root = tmp_path / "releases"
    with session_scope(engine) as s:
        record = rel.cut_release(session=s, actor=cur, version="1.0.0", notes="", artifacts=artifacts_for(root), store=store,
                                 include_empty=True)
    assert set(record.summary) == set(names)
    with session_scope(engine) as s, pytest.raises(BlindingViolation) as refused:
        rex.export_release(session=s, actor=boss, version="1.0.0", fmt="native", out=tmp_path / "x",
                           artifacts=artifacts_for(root))
    message = str(refused.value)
    assert message.count("You are assigned to annotate") == 1
    assert "You are assigned to annotate 'alpha' and 'beta' and have not submitted" in message
    assert message.count("You have an unsubmitted stage-1 analysis of 'gamma'") == 1
    assert "'empty'" not in message  # no peers' work there: nothing hidden, nothing to say
    with session_scope(engine) as s:
        assert set(rel.withheld_in_release(session=s, actor=boss, version="1.0.0")) == {"alpha", "beta", "gamma"}


def test_a_new_release_holds_what_has_ground_truth_unless_empty_ones_are_asked_for(engine, store, tmp_path):
    cur, ana = f.user(engine, "cur-d", Role.CURATOR), f.user(engine, "ana-d")
    ids = {n: f.dataset(engine, store, name=n, assign=[ana]).id for n in ("done", "empty")}
    f.full_analysis(engine, ana, ids["done"])
    with session_scope(engine) as s:
        submit_analysis(session=s, actor=ana, dataset_id=ids["done"])
    root = tmp_path / "releases"
    with session_scope(engine) as s:
        assert rel.release_candidates(session=s, actor=cur) == (["done"], ["empty"])
        assert list(rel.cut_release(session=s, actor=cur, version="1.0.0", notes="", artifacts=artifacts_for(root),
                                    store=store).summary) == ["done"]
    with session_scope(engine) as s:
        assert list(rel.cut_release(session=s, actor=cur, version="1.0.1", notes="", artifacts=artifacts_for(root), store=store,
                                    include_empty=True).summary) == ["done", "empty"]
    with session_scope(engine) as s:  # named: asked for
        assert list(rel.cut_release(session=s, actor=cur, version="1.0.2", notes="", artifacts=artifacts_for(root), store=store,
                                    dataset_names=["empty"]).summary) == ["empty"]


def test_as_user_is_taken_wherever_it_stands():
    assert _take_as(["--as", "cass", "release", "list"]) == (["release", "list"], "cass")
    assert _take_as(["release", "list", "--as", "cass"]) == (["release", "list"], "cass")
    assert _take_as(["gt", "build", "--as=cass", "1.0.0"]) == (["gt", "build", "1.0.0"], "cass")
    assert _take_as(["check", "ds", "--code-file", "-", "--", "--as", "x"]) == (
        ["check", "ds", "--code-file", "-", "--", "--as", "x"], None)
    with pytest.raises(CurationError, match="given twice"):
        _take_as(["--as", "a", "release", "list", "--as", "b"])
    with pytest.raises(CurationError, match="needs a user name"):
        _take_as(["release", "list", "--as"])


def test_as_user_on_a_command_that_acts_as_nobody_is_refused(capsys):
    assert main(["init", "--as", "cass"]) == 2
    assert "does not act as a user" in capsys.readouterr().err


def test_mcq_commands_without_as_act_as_the_operator_and_follow_the_blinding_rule(tmp_path, shared_blade):
    """``mcq audit`` / ``mcq generate`` used to run as nobody without ``--as``, skipping the blinding rule that
    every other command applies to the operator (the first admin)."""
    assert _fresh_cli(tmp_path, "init").returncode == 0
    assert _fresh_cli(tmp_path, "import-blade", str(shared_blade / "datasets" / "hurricane")).returncode == 0
    audit = _fresh_cli(tmp_path, "mcq", "audit", "hurricane", "--json")
    assert audit.returncode == 0, audit.stderr  # the admin annotates nothing here: nothing is hidden
    assert _fresh_cli(tmp_path, "assign", "hurricane", "admin").returncode == 0
    for args in (("mcq", "audit", "hurricane", "--json"), ("mcq", "generate", "hurricane")):
        refused = _fresh_cli(tmp_path, *args)
        assert refused.returncode == 2, refused.stdout
        assert "assigned to annotate 'hurricane'" in refused.stderr, refused.stderr
        with_as = _fresh_cli(tmp_path, *args, "--as", "admin")
        assert with_as.returncode == 2 and with_as.stderr == refused.stderr

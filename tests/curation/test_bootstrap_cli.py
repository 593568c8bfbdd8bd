"""First start and the forkpaths command, as a newcomer and an operator use them."""

from __future__ import annotations

import stat
from pathlib import Path

from sqlmodel import select

from curation.bootstrap import PASSWORD_FILE, initialise
from curation.db import session_scope
from curation.models import Dataset, DatasetAssignment, User
from curation.services.accounts import authenticate
from curation.settings import PROJECT_ROOT, Settings
from tests import factories as f
from tests.cli_runner import forkpaths


def _settings(tmp_path: Path, **kw) -> Settings:
    return Settings(data_dir=tmp_path / "data", database_url=None, **kw)


def test_first_start_creates_admin_password_file_and_starter_datasets(tmp_path):
    report = initialise(_settings(tmp_path))
    assert report.generated_password and report.password_file is not None
    assert stat.S_IMODE(report.password_file.stat().st_mode) == 0o600
    assert report.generated_password in report.password_file.read_text()
    assert sorted(report.starters_registered) == sorted(p.name for p in (PROJECT_ROOT / "datasets").iterdir()
                                                        if (p / "info.json").is_file())
    with session_scope(report.engine) as s:
        admin = authenticate(session=s, username="admin", password=report.generated_password)
        assigned = s.exec(select(DatasetAssignment).where(DatasetAssignment.user_id == admin.id)).all()
        assert len(assigned) == len(report.starters_registered)  # the newcomer can annotate at once
        assert all(d.research_question for d in s.exec(select(Dataset)).all())
    again = initialise(_settings(tmp_path))  # idempotent: no second admin, no duplicate datasets
    assert again.generated_password is None and again.starters_registered == []
    with session_scope(again.engine) as s:
        assert len(s.exec(select(User)).all()) == 1


def test_admin_password_from_settings(tmp_path):
    report = initialise(_settings(tmp_path, admin_password="from settings 123", admin_username="chief",
                                  load_starter_datasets=False))
    assert report.generated_password is None and not (tmp_path / "data" / PASSWORD_FILE).exists()
    with session_scope(report.engine) as s:
        assert authenticate(session=s, username="chief", password="from settings 123").role == "admin"


_cli = forkpaths  # in this process; process=True for the real command


def test_cli_create_user_add_dataset_assign(tmp_path):
    r = _cli(tmp_path, "create-user", "boss", "--role", "admin", "--password-stdin", stdin="a long password\n",
             process=True)  # the real command, once
    assert r.returncode == 0, r.stderr
    assert "Created admin 'boss'" in r.stdout
    r = _cli(tmp_path, "create-user", "ana")
    assert r.returncode == 0 and "Generated password:" in r.stdout
    folder = f.tiny_blade_folder(tmp_path / "src", "storms")
    r = _cli(tmp_path, "add-dataset", str(folder))
    assert r.returncode == 0, r.stderr
    assert "Registered dataset 'storms': 4 rows × 4 columns" in r.stdout
    r = _cli(tmp_path, "assign", "storms", "ana")
    assert r.returncode == 0, r.stderr
    settings = _settings(tmp_path, load_starter_datasets=False, admin_password="admin password 1")
    with session_scope(initialise(settings).engine) as s:
        boss = authenticate(session=s, username="boss", password="a long password")
        assert boss.role == "admin"
        assert len(s.exec(select(DatasetAssignment)).all()) == 1


def test_cli_reports_bad_input_without_a_traceback(tmp_path):
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "info.json").write_text("{ nope")
    (folder / "data.csv").write_text("a\n1\n")
    r = _cli(tmp_path, "add-dataset", str(folder))
    assert r.returncode == 2
    assert "error:" in r.stderr and "info.json" in r.stderr and "Traceback" not in r.stderr
    r = _cli(tmp_path, "create-user", "x y", "--password-stdin", stdin="a long password\n")
    assert r.returncode == 2 and "not allowed" in r.stderr


def test_cli_import_blade_and_release_commands(tmp_path, shared_blade):
    r = _cli(tmp_path, "import-blade", str(shared_blade / "datasets" / "hurricane"))
    assert r.returncode == 0, r.stderr
    assert "Imported 'hurricane': 4 variables, 6 transforms, 18 models, 44 reviewed alternatives" in r.stdout
    r = _cli(tmp_path, "release", "create", "--version", "1.0.0", "--notes", "first cut")
    assert r.returncode == 0, r.stderr
    assert "Release 1.0.0 cut" in r.stdout
    # not a terminal: no progress lines and no INFO logs, only the summary (and warnings, were there any)
    assert "%]" not in r.stdout + r.stderr and "INFO" not in r.stderr, r.stdout + r.stderr
    assert len(r.stdout.strip().splitlines()) <= 2, r.stdout
    r = _cli(tmp_path, "release", "create", "--version", "1.0.0")
    assert r.returncode == 2 and "already exists" in r.stderr
    r = _cli(tmp_path, "release", "create", "--version", "1.1.0", "--notes", "again", "--verbose")
    assert r.returncode == 0, r.stderr
    assert "INFO exports.native: wrote release 1.1.0" in r.stderr  # --verbose, even after the subcommand
    r = _cli(tmp_path, "release", "list")
    assert r.returncode == 0 and r.stdout.index("1.1.0") < r.stdout.index("1.0.0") and "first cut" in r.stdout
    r = _cli(tmp_path, "release", "diff", "1.0.0", "1.1.0")
    assert r.returncode == 0 and "1.1.0" in r.stdout
    r = _cli(tmp_path, "release", "export", "1.0.0", "--format", "blade", "--out", str(tmp_path / "out"))
    assert r.returncode == 0, r.stderr
    exported = tmp_path / "out" / "1.0.0-blade" / "hurricane"
    assert sorted(p.name for p in exported.iterdir()) == ["annotations.csv", "data.csv", "info.json",
                                                           "mcq_dataset.json"]
    r = _cli(tmp_path, "release", "export", "1.0.0", "--format", "native", "--out", str(tmp_path / "out"))
    assert r.returncode == 0 and (tmp_path / "out" / "1.0.0" / "MANIFEST").is_file()
    (tmp_path / "data" / "releases" / "1.0.0" / "README.md").write_text("tampered")
    r = _cli(tmp_path, "release", "export", "1.0.0", "--format", "blade", "--out", str(tmp_path / "out2"))
    assert r.returncode == 2 and "README.md" in r.stderr and "modified after it was cut" in r.stderr
    r = _cli(tmp_path, "import-blade", str(tmp_path / "nowhere"))
    assert r.returncode == 2 and "does not exist" in r.stderr


def test_a_bad_setting_gets_a_sentence_naming_the_variable(tmp_path, monkeypatch, capsys):
    """A setting that does not parse (FORKPATHS_SCORE_ANALYSIS_TIMEOUT_S=abc) printed pydantic's traceback."""
    from curation.cli import main

    monkeypatch.setenv("FORKPATHS_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("FORKPATHS_SCORE_ANALYSIS_TIMEOUT_S", "abc")
    monkeypatch.setenv("FORKPATHS_MAX_ANALYSES_PER_SUBMISSION", "0")
    assert main(["runs", "list"]) == 2
    err = capsys.readouterr().err
    assert "FORKPATHS_SCORE_ANALYSIS_TIMEOUT_S='abc'" in err and "valid number" in err
    assert "FORKPATHS_MAX_ANALYSES_PER_SUBMISSION='0'" in err and "greater than or equal to 1" in err
    assert "Traceback" not in err and "pydantic" not in err


def test_an_argument_that_is_not_utf8_gets_a_sentence(tmp_path, monkeypatch, capsys):
    """A terminal's non-UTF-8 byte reaches Python as a lone surrogate (surrogateescape): release notes or a
    display name holding one crashed with UnicodeEncodeError deep in the database or the release writer."""
    from curation.cli import main

    monkeypatch.setenv("FORKPATHS_DATA_DIR", str(tmp_path / "data"))
    assert main(["release", "create", "--version", "0.1.0", "--notes", "notes \udcff"]) == 2
    err = capsys.readouterr().err
    assert "error: the argument 'notes \\udcff' is not UTF-8 text" in err and "Traceback" not in err
    assert not (tmp_path / "data").exists()  # refused before anything was created


def test_release_create_of_named_datasets_does_not_list_others_as_left_out(tmp_path, monkeypatch, capsys):
    """``release create --dataset anes96`` said the datasets nobody asked for were "left out, with no ground
    truth yet" (add --include-empty), as if they would have been in the release."""
    from curation.cli import main

    monkeypatch.setenv("FORKPATHS_DATA_DIR", str(tmp_path / "data"))
    assert main(["release", "create", "--version", "0.1.0", "--dataset", "anes96"]) == 0
    out = capsys.readouterr().out
    assert "Release 0.1.0 cut" in out and "Left out" not in out and "affairs_redbook" not in out


def test_run_says_when_its_port_is_taken_and_takes_the_next_free_one(tmp_path):
    """Issue 29 point 14: `forkpaths run` printed "Open http://localhost:8501" while someone else's app held that
    port, then failed; now it checks first, says so, and opens on the next free port, which it names."""
    import os
    import signal
    import socket
    import subprocess
    import sys

    from curation.cli_app import port_taken

    with socket.socket() as holder:  # someone else's app on the asked port
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        taken = holder.getsockname()[1]
        assert port_taken(None, taken) and port_taken("127.0.0.1", taken)
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("FORKPATHS_")},
               "FORKPATHS_DATA_DIR": str(tmp_path / "data"), "FORKPATHS_LOAD_STARTER_DATASETS": "false",
               "FORKPATHS_ADMIN_PASSWORD": "a long password 1"}
        app = subprocess.Popen([sys.executable, "-m", "curation.cli", "run", "--port", str(taken), "--address",
                                "127.0.0.1", "--no-install"], cwd=PROJECT_ROOT, env=env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            lines = []
            assert app.stdout is not None
            for line in app.stdout:  # until the line a newcomer follows
                lines.append(line)
                if "Open http" in line:
                    break
        finally:
            os.killpg(app.pid, signal.SIGTERM)
            app.wait(timeout=60)
    said = "".join(lines)
    assert f"Port {taken} is taken" in said, said
    opened = int(said.split("Open http://127.0.0.1:")[1].split()[0])
    assert opened != taken and said.index("is taken") < said.index("Open http")
    assert f"Using port {opened} instead" in said

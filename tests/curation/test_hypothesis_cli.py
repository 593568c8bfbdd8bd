"""``forkpaths hypotheses generate`` (LLM hypotheses against a scripted endpoint on 127.0.0.1) and
``forkpaths hypotheses gold`` (per query: candidates, statuses, the gold and its provenance)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from sqlmodel import select

from curation.bootstrap import initialise
from curation.db import session_scope
from curation.models import Stage, User
from curation.services.hypotheses import decide_gold, save_hypothesis, submit_hypotheses
from curation.services.stages import set_stage
from curation.services.votes import cast_vote
from curation.settings import Settings
from tests import factories as f
from tests.cli_runner import run_cli, run_cli_process
from tests.curation.hypothesis_world import import_folder
from tests.curation.test_hypothesis_curation import LLM_ANSWER, _input
from tests.llm_server import ScriptedLLM


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FORKPATHS_")}
    return {**env, "FORKPATHS_DATA_DIR": str(tmp_path / "data"), "FORKPATHS_LOAD_STARTER_DATASETS": "false",
            "FORKPATHS_ADMIN_PASSWORD": "admin password 1", **extra}


def _cli(tmp_path: Path, *args: str, process: bool = False, **extra: str) -> subprocess.CompletedProcess[str]:
    """In this process (tests/cli_runner.py); ``process``: the real command."""
    return (run_cli_process if process else run_cli)(args, env=_env(tmp_path, **extra), cwd=tmp_path)


def test_generate_then_gold_from_the_command_line(tmp_path, monkeypatch):
    for k, v in _env(tmp_path).items():
        if k.startswith("FORKPATHS_"):
            monkeypatch.setenv(k, v)
    monkeypatch.delenv("FORKPATHS_DATABASE_URL", raising=False)
    settings = Settings()
    engine = initialise(settings).engine
    with session_scope(engine) as s:
        admin = s.exec(select(User).where(User.username == "admin")).one()
        s.expunge(admin)
    ana, bob = f.user(engine, "ana"), f.user(engine, "bob")
    ds, tasks = import_folder(engine, settings.datasets_store, tmp_path / "src", admin, [ana, bob])
    ids = {}
    for user, text in ((ana, "BMI rises with age."), (bob, "BMI falls with age.")):
        with session_scope(engine) as s:
            ids[user.username] = save_hypothesis(session=s, actor=user, task_id=tasks["q0"].id,
                                                 data=_input(hypothesis=text)).id
        with session_scope(engine) as s:
            submit_hypotheses(session=s, actor=user, dataset_id=ds.id)
    r = _cli(tmp_path, "hypotheses", "generate", ds.name, FORKPATHS_LLM_BASE_URL=ScriptedLLM.down_url(),
             FORKPATHS_LLM_MODEL="m")
    assert r.returncode == 2 and "stage 2" in r.stderr, r.stderr  # checked before anything is recorded
    with session_scope(engine) as s:
        set_stage(session=s, actor=admin, dataset_id=ds.id, stage=Stage.REVIEW)
    with ScriptedLLM(lambda _req: json.dumps(LLM_ANSWER)) as server:
        r = _cli(tmp_path, "hypotheses", "generate", ds.name, FORKPATHS_LLM_BASE_URL=server.url,
                 FORKPATHS_LLM_MODEL="scripted", process=True)  # the real command, once
    assert r.returncode == 0, r.stderr
    assert "2 LLM hypotheses stored" in r.stdout and "'HEIGHT' is not a column" in r.stdout
    with session_scope(engine) as s:
        cast_vote(session=s, actor=bob, target_kind="hypothesis", target_id=ids["ana"], question="justifiable",
                  answer="yes", explanation="clear slope")
    with session_scope(engine) as s:
        set_stage(session=s, actor=admin, dataset_id=ds.id, stage=Stage.CLOSED)
    with session_scope(engine) as s:
        decide_gold(session=s, actor=admin, task_id=tasks["q0"].id, target_kind="hypothesis", target_id=ids["ana"])
    r = _cli(tmp_path, "hypotheses", "gold", ds.name, "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    q0 = next(q for q in out["queries"] if q["task"] == tasks["q0"].key)
    assert q0["gold"] == "BMI rises with age." and q0["provenance"]["rule"] == "blade@1"
    assert {c["status"] for c in q0["candidates"]} == {"justifiable", "unjudged"}
    r = _cli(tmp_path, "hypotheses", "gold", "nowhere")
    assert r.returncode == 2 and "There is no dataset called 'nowhere'" in r.stderr
    engine.dispose()

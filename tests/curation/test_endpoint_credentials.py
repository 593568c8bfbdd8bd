"""Credentials go only where they were configured: the server's LLM key (a canary here) reaches the server's own
base URL and no address an evaluator types; a typed endpoint gets a key typed with it or the one an admin set for
that URL (FORKPATHS_AGENT_ENDPOINT_KEYS). Checked on what listeners on 127.0.0.1 received, through the service
(the Agent runs page calls the same ``start_agent_run`` and job) and through ``forkpaths agent run``."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from curation.db import session_scope
from curation.services import agent_runs as ar
from curation.services.background_jobs import execute_job
from curation.settings import PROJECT_ROOT, Settings, endpoint_identity
from tests.cli_runner import forkpaths
from tests.curation.scoring_world import make_world
from tests.llm_server import ScriptedLLM

CANARY = "sk-canary-server-key-0451"
ANSWER = {"cvars": {"ivs": [{"description": "name femininity", "columns": ["masfem"]}],
                    "dv": {"description": "deaths", "columns": ["alldeaths"]}, "controls": []},
          "transform_code": "def transform(df):\n    return df",
          "m_code": "def model(df):\n    import statsmodels.formula.api as smf\n"
                    "    return smf.ols('alldeaths ~ masfem', data=df).fit()"}


def _answering() -> ScriptedLLM:
    return ScriptedLLM(responder=lambda _req: json.dumps(ANSWER))


def _leaked(llm: ScriptedLLM, secret: str) -> list[str | None]:
    return [a for a in llm.authorizations if a and secret in a]


def test_endpoint_identity_is_scheme_host_port_and_path():
    same = ["http://127.0.0.1:8000/v1", "HTTP://127.0.0.1:8000/v1/", "http://127.0.0.1:8000/v1//"]
    assert len({endpoint_identity(u) for u in same}) == 1
    assert endpoint_identity("https://api.example.com/v1") == endpoint_identity("https://API.example.com:443/v1")
    assert endpoint_identity("http://api.example.com/v1") == endpoint_identity("http://api.example.com:80/v1/")
    others = ["https://127.0.0.1:8000/v1", "http://127.0.0.1:8001/v1", "http://127.0.0.1:8000/v2",
              "http://127.0.0.1:8000", "http://localhost:8000/v1", "http://127.0.0.1:8000/v1/x"]
    assert endpoint_identity("http://127.0.0.1:8000/v1") not in {endpoint_identity(u) for u in others}
    assert endpoint_identity("ftp://127.0.0.1/v1") is None and endpoint_identity("http://:99999/v1") is None


def test_which_key_goes_where():
    settings = Settings(llm_base_url="http://127.0.0.1:8000/v1", llm_api_key=CANARY,
                        agent_endpoint_keys={"https://api.example.com/v1": "sk-example"})
    assert settings.agent_endpoint_key("http://127.0.0.1:8000/v1/").get_secret_value() == CANARY
    assert settings.agent_endpoint_key("http://127.0.0.1:8001/v1") is None
    assert settings.agent_endpoint_key("http://127.0.0.1:8000/v1/../v1") is None
    assert settings.agent_endpoint_key("https://api.example.com:443/v1").get_secret_value() == "sk-example"
    assert settings.agent_endpoint_key("http://api.example.com/v1") is None  # same host, other scheme
    agent_key = Settings(llm_base_url="http://127.0.0.1:8000/v1", llm_api_key=CANARY, agent_api_key="sk-agent")
    assert agent_key.agent_endpoint_key("http://127.0.0.1:8000/v1").get_secret_value() == "sk-agent"
    assert agent_key.agent_endpoint_key("http://127.0.0.1:9/v1") is None
    typed = settings.with_endpoint_key("http://127.0.0.1:9/v1", "sk-typed")
    assert typed.agent_endpoint_key("http://127.0.0.1:9/v1/").get_secret_value() == "sk-typed"
    assert typed.agent_endpoint_key("http://127.0.0.1:8000/v1").get_secret_value() == CANARY
    with pytest.raises(ValidationError, match="not an http.s. URL with a host"):
        Settings(agent_endpoint_keys={"api.example.com": "sk"})


def test_a_bad_endpoint_key_map_is_named_without_echoing_the_keys(tmp_path):
    bad = forkpaths(tmp_path, "agent", "list", FORKPATHS_AGENT_ENDPOINT_KEYS='{"api.example.com/v1": "sk-secret-1"}')
    assert bad.returncode == 2 and "FORKPATHS_AGENT_ENDPOINT_KEYS=(hidden)" in bad.stderr
    assert "'api.example.com/v1' is not an http(s) URL with a host" in bad.stderr and "sk-secret-1" not in bad.stderr


@pytest.fixture
def world(engine, tmp_path, shared_blade):
    return make_world(engine, tmp_path, shared_blade)


def _agent_run(world, url: str, settings: Settings) -> str:
    with session_scope(world.engine) as s:
        run = ar.start_agent_run(session=s, actor=world.evaluator, release_version="1.0.0", model="scripted",
                                 base_url=url, strategy="oneshot", runs_per_task=1, artifacts=world.artifacts)
        job_id, run_id = run.job_id, run.id
    execute_job(world.engine, job_id, settings)
    with session_scope(world.engine) as s:
        got = ar.get_agent_run(session=s, actor=world.evaluator, run_id=run_id)
        return f"{got.status}: {got.message}"


def test_the_server_key_reaches_only_the_server_endpoint(world, tmp_path):
    with _answering() as server, _answering() as typed, _answering() as configured:
        settings = Settings(data_dir=tmp_path, llm_max_retries=0, llm_base_url=server.url,
                            llm_model="judge", llm_api_key=CANARY,
                            agent_endpoint_keys={configured.url + "/": "sk-configured-for-this-url"})
        assert _agent_run(world, typed.url, settings).startswith("succeeded: 1 of 1 task runs answered")
        assert typed.authorizations and not _leaked(typed, CANARY)
        assert not _leaked(typed, "sk-configured")
        assert _agent_run(world, configured.url, settings).startswith("succeeded: 1 of 1 task runs answered")
        assert configured.authorizations == ["Bearer sk-configured-for-this-url"]
        # the server's own URL, written another way, still gets the server's key
        assert _agent_run(world, server.url + "/", settings).startswith("succeeded: 1 of 1 task runs answered")
        assert server.authorizations == [f"Bearer {CANARY}"]


def _cli(tmp_path, *args: str, **env: str):
    return forkpaths(tmp_path, *args, cwd=PROJECT_ROOT, FORKPATHS_LLM_MAX_RETRIES="0", **env)


def test_agent_run_from_the_terminal_sends_the_server_key_nowhere_else(tmp_path, shared_blade):
    assert _cli(tmp_path, "import-blade", str(shared_blade / "datasets" / "hurricane")).returncode == 0
    assert _cli(tmp_path, "release", "create", "--version", "1.0.0").returncode == 0
    with _answering() as server, _answering() as typed:
        env = {"FORKPATHS_LLM_BASE_URL": server.url, "FORKPATHS_LLM_MODEL": "judge", "FORKPATHS_LLM_API_KEY": CANARY,
               "FORKPATHS_AGENT_API_KEY": CANARY + "-agent"}
        done = _cli(tmp_path, "agent", "run", "--release", "1.0.0", "--model", "scripted", "--base-url", typed.url,
                    **env)
        assert done.returncode == 0, done.stderr
        assert typed.authorizations and not _leaked(typed, CANARY)
        with_key = _cli(tmp_path, "agent", "run", "--release", "1.0.0", "--model", "other", "--base-url", typed.url,
                        "--api-key-env", "MY_ENDPOINT_KEY", MY_ENDPOINT_KEY="sk-typed-by-the-evaluator", **env)
        assert with_key.returncode == 0, with_key.stderr
        assert typed.authorizations[-1] == "Bearer sk-typed-by-the-evaluator"
        assert not server.authorizations  # the scoring of these runs asked no judge
        unset = _cli(tmp_path, "agent", "run", "--release", "1.0.0", "--model", "m", "--base-url", typed.url,
                     "--api-key-env", "NOT_SET_ANYWHERE", **env)
        assert unset.returncode == 2 and "NOT_SET_ANYWHERE is not set" in unset.stderr
        queued = _cli(tmp_path, "agent", "run", "--release", "1.0.0", "--model", "m", "--base-url", typed.url,
                      "--api-key-env", "MY_ENDPOINT_KEY", "--enqueue", MY_ENDPOINT_KEY="k", **env)
        assert queued.returncode == 2
        own = _cli(tmp_path, "agent", "run", "--release", "1.0.0", "--model", "scripted", **env)
        assert own.returncode == 0, own.stderr
        assert server.authorizations == [f"Bearer {CANARY}-agent"]
        assert not _leaked(typed, CANARY)

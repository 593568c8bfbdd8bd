"""One LLM configuration, read once from the settings: the llm judge and the MCQ model under test honour
FORKPATHS_LLM_TIMEOUT_S and FORKPATHS_LLM_MAX_RETRIES, and share one cache folder with generation."""

from __future__ import annotations

import json
from pathlib import Path

from curation.services.scoring import JudgeSettings
from curation.settings import Settings
from evaluation.judges import decisions_from_release, judge_analysis
from evaluation.records import FailureCategory
from evaluation.submissions import read_submission
from tests.evaluation.blade_release import blade_release_dataset
from tests.llm_server import ScriptedLLM


def _settings(tmp_path: Path, url: str, **kw) -> Settings:
    return Settings(_env_file=None, data_dir=tmp_path, llm_base_url=url, llm_model="judge-1", **kw)  # type: ignore[call-arg]


def test_the_llm_judge_honours_the_timeout_and_retry_settings(tmp_path: Path, shared_blade: Path) -> None:
    gt = decisions_from_release(blade_release_dataset(shared_blade / "datasets" / "hurricane"))
    sub = read_submission(shared_blade / "examples" / "submission_analyses.json", known_datasets=["hurricane"])
    answer = json.dumps({"m_spec": "OLS", "m_columns": ["alldeaths"]})
    with ScriptedLLM(lambda req: answer) as server:
        # with a 0.5 s timeout the slow first answer is abandoned; 2 retries then meet two 429s: 3 requests
        server.script = [{"delay": 1.5, "content": answer}, {"status": 429}, {"status": 429}]
        settings = _settings(tmp_path, server.url, llm_timeout_s=0.5, llm_max_retries=2)
        judge = JudgeSettings.from_settings(settings).build("llm")
        record = judge_analysis(gt, sub.analyses[0], judge).record
        assert len(server.requests) == 3
    assert record.failure == FailureCategory.JUDGE_FAILED
    assert "after 3 attempts: HTTP 429" in record.failure_message
    assert judge.configuration()["model"] == "judge-1"


def test_one_cache_folder_for_every_llm_feature(tmp_path: Path) -> None:
    settings = _settings(tmp_path, "http://127.0.0.1:9/v1")
    assert JudgeSettings.from_settings(settings).llm.cache_dir == settings.llm_config().cache_dir \
        == settings.resolved_data_dir / "llm-cache"
    assert JudgeSettings.from_settings(settings).llm.timeout_s == settings.llm_timeout_s

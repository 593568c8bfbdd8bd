"""The LLM client against a real chat-completions server on 127.0.0.1: cache, retries, failures, parsing."""

from __future__ import annotations

import contextlib
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from evaluation.llm import LLMCallError, LLMConfig, LLMNotConfigured, ParseError, chat_json, parse_structured
from evaluation.llm.prompts import ProposedTransform, parse_items
from tests.llm_server import ScriptedLLM

MESSAGES = [{"role": "user", "content": "propose"}]


def _config(url, tmp_path, **kw):
    return LLMConfig(base_url=url, model="scripted", cache_dir=tmp_path / "cache", backoff_s=0.01, **kw)


def test_not_configured_says_how_to_configure():
    with pytest.raises(LLMNotConfigured, match="FORKPATHS_LLM_BASE_URL"):
        chat_json(LLMConfig(), template="t@1", messages=MESSAGES)


def test_answer_is_cached_on_disk_and_a_second_call_sends_nothing(tmp_path):
    with ScriptedLLM(lambda req: '{"ok": true}') as server:
        cfg = _config(server.url, tmp_path)
        first = chat_json(cfg, template="t@1", messages=MESSAGES)
        again = chat_json(cfg, template="t@1", messages=MESSAGES)
        assert len(server.requests) == 1
        assert not first.cached and again.cached and again.content == first.content == '{"ok": true}'
        assert again.raw["choices"][0]["message"]["content"] == '{"ok": true}'  # the raw response is kept
        assert server.requests[0]["temperature"] == 0.0 and server.requests[0]["model"] == "scripted"
        chat_json(cfg, template="t@2", messages=MESSAGES)  # another template version is another key
        chat_json(cfg.model_copy(update={"temperature": 0.7}), template="t@1", messages=MESSAGES)
        assert len(server.requests) == 3
        stored = list((tmp_path / "cache").rglob("*.json"))
        assert len(stored) == 3 and json.loads(stored[0].read_text())["cache_key"]


def test_rate_limits_and_server_errors_are_retried_with_backoff(tmp_path):
    with ScriptedLLM(lambda req: '{"ok": 1}') as server:
        server.script = [{"status": 429}, {"status": 503}, {"status": 429}]
        result = chat_json(_config(server.url, tmp_path), template="t@1", messages=MESSAGES)
        assert result.attempts == 4 and len(server.requests) == 4


def test_giving_up_says_why(tmp_path):
    with ScriptedLLM() as server:
        server.script = [{"status": 429}] * 3
        with pytest.raises(LLMCallError, match="after 3 attempts: HTTP 429"):
            chat_json(_config(server.url, tmp_path, max_retries=2), template="t@1", messages=MESSAGES)
        server.script = [{"status": 401}]
        with pytest.raises(LLMCallError, match="HTTP 401"):
            chat_json(_config(server.url, tmp_path), template="t@2", messages=MESSAGES)
        assert len(server.requests) == 4  # a 401 is not retried
    assert not list((tmp_path / "cache").rglob("*.json"))  # failures are never cached


def test_down_and_slow_endpoints(tmp_path):
    with pytest.raises(LLMCallError, match="cannot connect"):
        chat_json(_config(ScriptedLLM.down_url(), tmp_path, max_retries=1), template="t@1", messages=MESSAGES)
    with ScriptedLLM(lambda req: '{"late": 1}') as server:
        server.script = [{"delay": 1.5, "content": "{}"}] * 2
        with pytest.raises(LLMCallError, match="no answer within 0.5 s"):
            chat_json(_config(server.url, tmp_path, timeout_s=0.5, max_retries=1), template="t@1", messages=MESSAGES)
        server.script = [{"delay": 1.5, "content": "{}"}]
        ok = chat_json(_config(server.url, tmp_path, timeout_s=0.5, max_retries=1), template="t@1", messages=MESSAGES)
        assert ok.content == '{"late": 1}' and ok.attempts == 2


def test_malformed_http_body_is_an_error_not_a_crash(tmp_path):
    with ScriptedLLM() as server:
        server.script = [{"raw": '{"choices": [{"message": {"content": "tru'}]
        with pytest.raises(LLMCallError):
            chat_json(_config(server.url, tmp_path, max_retries=0), template="t@1", messages=MESSAGES)


class Pair(BaseModel):
    a: int
    b: str


def test_structured_output_parsed_repaired_or_rejected():
    assert parse_structured('{"a": 1, "b": "x"}', Pair) == (Pair(a=1, b="x"), [])
    value, repairs = parse_structured('```json\n{"a": 1, "b": "x"}\n```', Pair)
    assert value.a == 1 and repairs == ["removed a Markdown code fence"]
    value, repairs = parse_structured('Sure! Here it is: {"a": 2, "b": "y"} Hope it helps.', Pair)
    assert value.a == 2 and "removed text around the JSON" in repairs
    value, repairs = parse_structured('{"b": "x", "a": 3, "c": "trunc', Pair)
    assert value.a == 3 and "closed a truncated answer" in repairs
    with pytest.raises(ParseError, match="no JSON"):
        parse_structured("I cannot help with that.", Pair)
    with pytest.raises(ParseError, match="a: "):
        parse_structured('{"a": "__import__(\'os\').system(\'x\')", "b": "x"}', Pair)  # text, never evaluated
    items, repairs, rejected = parse_items(
        '{"transforms": [{"code": "df[\'x\'] = 1", "output_col": "x"}, {"code": "", "output_col": "y"}, '
        '{"code": "df[\'z\'] = 2", "output_col": "z", "rationale": "cut sh', "transforms", ProposedTransform)
    assert [i.output_col for i in items] == ["x", "z"] and len(rejected) == 1 and "item 2" in rejected[0]


@given(st.text(max_size=200))
def test_parsing_never_raises_anything_but_parse_error(text):
    with contextlib.suppress(ParseError):
        parse_structured(text, Pair)

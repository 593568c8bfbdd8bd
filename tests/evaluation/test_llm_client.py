"""The LLM client against a real chat-completions server on 127.0.0.1: cache, retries, failures, parsing."""

from __future__ import annotations

import contextlib
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from evaluation.llm import (
    LLMAnswerError,
    LLMCallError,
    LLMClient,
    LLMConfig,
    LLMNotConfigured,
    ParseError,
    parse_structured,
)
from evaluation.llm.parsing import extract_json
from evaluation.llm.prompts import ProposedTransform, parse_items
from tests.llm_server import ScriptedLLM

MESSAGES = [{"role": "user", "content": "propose"}]
PROXY_PAGE = "<!DOCTYPE html><html><body><h1>502 Bad Gateway</h1>nginx</body></html>"


def _config(url, tmp_path, **kw):
    return LLMConfig(base_url=url, model="scripted", cache_dir=tmp_path / "cache", backoff_s=0.01, **kw)


def _json(text: str) -> object:
    return extract_json(text)[0]


def _ask(config: LLMConfig, template: str = "t@1", parse=_json):
    return LLMClient(config).ask(template=template, messages=MESSAGES, parse=parse).result


def test_not_configured_says_how_to_configure():
    with pytest.raises(LLMNotConfigured, match="FORKPATHS_LLM_BASE_URL"):
        LLMClient(LLMConfig())


def test_answer_is_cached_on_disk_and_a_second_call_sends_nothing(tmp_path):
    with ScriptedLLM(lambda req: '{"ok": true}') as server:
        cfg = _config(server.url, tmp_path)
        first = _ask(cfg)
        again = _ask(cfg)
        assert len(server.requests) == 1
        assert not first.cached and again.cached and again.content == first.content == '{"ok": true}'
        assert again.raw["choices"][0]["message"]["content"] == '{"ok": true}'  # the raw response is kept
        assert server.requests[0]["temperature"] == 0.0 and server.requests[0]["model"] == "scripted"
        _ask(cfg, template="t@2")  # another template version is another key
        _ask(cfg.model_copy(update={"temperature": 0.7}))  # other parameters, another key
        _ask(cfg.model_copy(update={"model": "other"}))
        _ask(cfg.model_copy(update={"base_url": server.url + "/"}))  # the same endpoint: the same key
        assert len(server.requests) == 4
        stored = list((tmp_path / "cache").rglob("*.json"))
        assert len(stored) == 4 and json.loads(stored[0].read_text())["cache_key"]
        assert json.loads(stored[0].read_text())["messages"] == MESSAGES


def test_rate_limits_and_server_errors_are_retried_with_backoff(tmp_path):
    with ScriptedLLM(lambda req: '{"ok": 1}') as server:
        server.script = [{"status": 429}, {"status": 503}, {"status": 429}]
        result = _ask(_config(server.url, tmp_path))
        assert result.attempts == 4 and len(server.requests) == 4


def test_a_proxy_html_page_with_http_200_is_retried_like_a_502(tmp_path):
    """A 200 whose body is an HTML error page gets the retries and the sentence a 502 gets (not AttributeError)."""
    with ScriptedLLM(lambda req: '{"ok": 1}') as server:
        server.script = [{"raw": PROXY_PAGE, "content_type": "text/html"}, {"status": 502},
                         {"raw": "upstream timed out", "content_type": "text/plain"}]
        result = _ask(_config(server.url, tmp_path))
        assert result.attempts == 4 and result.content == '{"ok": 1}'
        server.script = [{"raw": PROXY_PAGE, "content_type": "text/html"}] * 3
        with pytest.raises(LLMCallError) as info:
            _ask(_config(server.url, tmp_path, max_retries=2), template="t@2")
        assert "after 3 attempts: HTTP 200 with an HTML page instead of a chat completion" in str(info.value)
        assert "502 Bad Gateway" in str(info.value)
        server.script = [{"raw": PROXY_PAGE}]  # even when the proxy calls it JSON
        with pytest.raises(LLMCallError, match="HTTP 200 with an HTML page"):
            _ask(_config(server.url, tmp_path, max_retries=0), template="t@3")
        server.script = [{"raw": '{"error": "quota"}'}]
        with pytest.raises(LLMCallError, match="JSON that is not a chat completion"):
            _ask(_config(server.url, tmp_path, max_retries=0), template="t@4")
    assert not list((tmp_path / "cache").rglob("*.json"))[1:]  # only the answer that came through is cached


def test_giving_up_says_why(tmp_path):
    with ScriptedLLM() as server:
        server.script = [{"status": 429}] * 3
        with pytest.raises(LLMCallError, match="after 3 attempts: HTTP 429"):
            _ask(_config(server.url, tmp_path, max_retries=2))
        server.script = [{"status": 401}]
        with pytest.raises(LLMCallError, match="HTTP 401"):
            _ask(_config(server.url, tmp_path), template="t@2")
        assert len(server.requests) == 4  # a 401 is not retried
    assert not list((tmp_path / "cache").rglob("*.json"))  # failures are never cached


def test_down_and_slow_endpoints(tmp_path):
    with pytest.raises(LLMCallError, match="cannot connect"):
        _ask(_config(ScriptedLLM.down_url(), tmp_path, max_retries=1))
    with ScriptedLLM(lambda req: '{"late": 1}') as server:
        server.script = [{"delay": 1.5, "content": "{}"}] * 2
        with pytest.raises(LLMCallError, match="no answer within 0.5 s"):
            _ask(_config(server.url, tmp_path, timeout_s=0.5, max_retries=1))
        server.script = [{"delay": 1.5, "content": "{}"}]
        ok = _ask(_config(server.url, tmp_path, timeout_s=0.5, max_retries=1))
        assert ok.content == '{"late": 1}' and ok.attempts == 2


def test_malformed_http_body_is_an_error_not_a_crash(tmp_path):
    with ScriptedLLM() as server:
        server.script = [{"raw": '{"choices": [{"message": {"content": "tru'}]
        with pytest.raises(LLMCallError):
            _ask(_config(server.url, tmp_path, max_retries=0))


def test_an_answer_that_does_not_parse_is_never_served_from_the_cache(tmp_path):
    """A garbage reply is not cached; once the endpoint recovers, asking again sends the request."""
    with ScriptedLLM(lambda req: '{"ok": true}') as server:
        cfg = _config(server.url, tmp_path)
        server.script = [{"content": "<<garbage>>"}]
        with pytest.raises(LLMAnswerError, match="no JSON") as info:
            _ask(cfg)
        assert info.value.result.content == "<<garbage>>"  # kept for the caller, not for the cache
        assert not list((tmp_path / "cache").rglob("*.json"))
        assert _ask(cfg).content == '{"ok": true}' and len(server.requests) == 2
        assert _ask(cfg).cached and len(server.requests) == 2
        # an entry a stricter parser refuses (or an older forkpaths cached) is asked again, then replaced
        def strict(text: str) -> object:
            raise ParseError("not what this caller wants")

        with pytest.raises(LLMAnswerError):
            _ask(cfg, parse=strict)
        assert len(server.requests) == 3


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


def test_a_lone_surrogate_in_an_answer_cannot_break_what_records_it(tmp_path):
    """An endpoint can send "\\ud800" in its JSON: the answer then held a lone surrogate, and a judge's rationale
    or an MCQ reply carrying it made the result file unwritable as UTF-8 (the whole run failed)."""
    answer = '{"A1-B1": {"rationale": "same \ud800 concept", "similarity": 10}}'
    with ScriptedLLM(lambda req: answer) as server:
        result = _ask(_config(server.url, tmp_path))
        assert result.content == '{"A1-B1": {"rationale": "same \ufffd concept", "similarity": 10}}'
        result.content.encode("utf-8")
        assert _ask(_config(server.url, tmp_path)).cached and len(server.requests) == 1

"""A slow endpoint cannot hold an LLM call past its timeout: the timeout is a wall-clock deadline for the whole
attempt (connect, headers, body), not a bound on each read. A server on 127.0.0.1 drips its answer a byte at a
time, each byte well within the read timeout; the call must still fail, with a sentence, within a bound."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from evaluation.llm import LLMCallError, LLMClient, LLMConfig

BODY = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                   "choices": [{"index": 0, "message": {"role": "assistant", "content": "{}"},
                                "finish_reason": "stop"}]}).encode()
HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(BODY)


@contextlib.contextmanager
def drip_server(*, where: str, every_s: float = 0.2, limit_s: float = 30.0) -> Iterator[tuple[str, list[float]]]:
    """An endpoint that answers every request correctly but slowly: ``where`` is ``headers`` (the status line and
    headers come a byte at a time) or ``body`` (headers at once, then the body a byte at a time). Each connection
    drips for at most ``limit_s`` (so a client without a deadline ends the test, late, instead of hanging)."""
    stop = threading.Event()
    served: list[float] = []
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.settimeout(0.1)

    def serve(conn: socket.socket) -> None:
        started = time.monotonic()
        with conn, contextlib.suppress(OSError):
            conn.recv(65536)  # the request (small enough to come in one piece here)
            served.append(started)
            payload = HEAD + BODY
            if where == "body":
                conn.sendall(HEAD)
                payload = BODY
            for i in range(len(payload)):
                if stop.is_set() or time.monotonic() - started > limit_s:
                    return
                conn.sendall(payload[i:i + 1])
                stop.wait(every_s)

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1", served
    finally:
        stop.set()
        thread.join(5)
        listener.close()


@pytest.mark.parametrize("where", ["headers", "body"])
def test_a_dripping_endpoint_fails_the_call_within_its_deadline(tmp_path, where):
    with drip_server(where=where) as (url, served):
        config = LLMConfig(base_url=url, model="m", timeout_s=1.0, max_retries=1, backoff_s=0.05,
                           cache_dir=tmp_path / "cache")
        started = time.monotonic()
        with pytest.raises(LLMCallError, match=r"failed after 2 attempts: no answer within 1 s"):
            LLMClient(config).ask(template="t@1", messages=[{"role": "user", "content": "hi"}],
                                  parse=lambda text: text)
        elapsed = time.monotonic() - started
    assert len(served) == 2  # each attempt reached the server, and each was cut at its deadline
    assert elapsed < 4.0, f"two attempts of 1 s took {elapsed:.1f} s"


def test_a_dripping_answer_that_ends_in_time_is_taken(tmp_path):
    with drip_server(where="body", every_s=0.0) as (url, _served):
        config = LLMConfig(base_url=url, model="m", timeout_s=5.0, max_retries=0, cache_dir=tmp_path / "cache")
        got = LLMClient(config).ask(template="t@1", messages=[{"role": "user", "content": "hi"}],
                                    parse=lambda text: text)
    assert got.value == "{}"

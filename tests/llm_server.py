"""A small OpenAI chat-completions server on 127.0.0.1 with scripted answers (stdlib only).

The only stand-in of the test suite: it speaks the real protocol over real HTTP, so the client's retries,
timeouts and parsing are exercised as with OpenAI, vLLM or Ollama. Answers come from ``script`` (a queue of
steps, first come first served) and then from ``responder(request_json) -> content`` (an ``int`` answers with
that HTTP status instead, a ``dict`` is a step). A step is one of:

- ``{"content": "..."}``: a 200 answer with this message text;
- ``{"tool_calls": [{"name": "run_python", "arguments": {...} or "text"}], "content": "..."}``: a 200 answer
  calling these tools (``finish_reason`` ``tool_calls``); ``arguments`` given as a dict is sent as JSON text;
- ``{"usage": {"prompt_tokens": n, "completion_tokens": m}, ...}``: the answer's token counts (default 1 and 1);
- ``{"status": 429}`` / ``{"status": 500}``: that HTTP error;
- ``{"delay": seconds, ...}``: wait, then do the rest of the step (a slow server);
- ``{"raw": "..."}``: this HTTP body as it is (e.g. truncated JSON), with status 200 and the ``content_type``
  given in the step (``application/json`` unless said, e.g. ``text/html`` for a proxy's error page).

Every request is recorded in ``requests``, and its ``Authorization`` header (``None`` when absent) in
``authorizations``. ``ScriptedLLM.down_url()`` gives a URL nothing listens on.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["ScriptedLLM"]


def _completion(content: str | None, model: str, tool_calls: list[dict[str, Any]] | None = None,
                usage: dict[str, int] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = [
            {"id": f"call_{i}_{int(time.time() * 1000) % 100000}", "type": "function",
             "function": {"name": c["name"], "arguments": c["arguments"] if isinstance(c["arguments"], str)
                          else json.dumps(c["arguments"])}} for i, c in enumerate(tool_calls)]
    tokens = usage or {"prompt_tokens": 1, "completion_tokens": 1}
    return {"id": "chatcmpl-test", "object": "chat.completion", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if tool_calls else "stop"}],
            "usage": {**tokens, "total_tokens": sum(tokens.values())}}


class ScriptedLLM:
    def __init__(self, responder: Callable[[dict[str, Any]], str | int | dict[str, Any]] | None = None) -> None:
        self.script: list[dict[str, Any]] = []
        self.responder = responder or (lambda _req: '{"variables": [], "transforms": []}')
        self.requests: list[dict[str, Any]] = []
        self.authorizations: list[str | None] = []
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                with outer._lock:
                    outer.requests.append(body)
                    outer.authorizations.append(self.headers.get("Authorization"))
                    step = outer.script.pop(0) if outer.script else None
                if step is None:
                    answer = outer.responder(body)
                    step = ({"status": answer} if isinstance(answer, int) else answer if isinstance(answer, dict)
                            else {"content": answer})
                if step.get("delay"):
                    time.sleep(step["delay"])
                if "status" in step:
                    payload = json.dumps({"error": {"message": f"scripted {step['status']}", "type": "test"}}).encode()
                    self.send_response(step["status"])
                elif "raw" in step:
                    payload = step["raw"].encode()
                    self.send_response(200)
                else:
                    payload = json.dumps(_completion(step.get("content"), body.get("model", ""),
                                                     step.get("tool_calls"), step.get("usage"))).encode()
                    self.send_response(200)
                self.send_header("Content-Type", step.get("content_type", "application/json"))
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
                    self.wfile.write(payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    base_url = url

    def __enter__(self) -> ScriptedLLM:
        self.thread.start()
        return self

    def __exit__(self, *_exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()

    @staticmethod
    def down_url() -> str:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        return f"http://127.0.0.1:{port}/v1"

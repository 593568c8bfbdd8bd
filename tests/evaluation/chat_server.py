"""The scripted chat-completions server of :mod:`tests.llm_server`, driven by the request's messages (tests only).

``script`` is called with the request's messages and returns the assistant's text, or an ``int`` to answer with
that HTTP status instead. Every request body is kept in ``requests``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.llm_server import ScriptedLLM

__all__ = ["ChatServer"]

Script = Callable[[list[dict[str, Any]]], "str | int"]


class ChatServer(ScriptedLLM):
    def __init__(self, script: Script) -> None:
        super().__init__(lambda request: script(request.get("messages", [])))

    def stop(self) -> None:
        self.__exit__()

"""What the parent learnt about one sandbox job (:class:`Outcome`): the server records it, the describers turn it
into sentences. Kept apart from both, and free of heavy imports, so that each can import it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Outcome"]


@dataclass(eq=False)
class Outcome:
    """Everything the parent learnt about one job."""

    events: list[dict[str, Any]]
    timed_out: bool
    returncode: int | None
    stderr: str
    output: str = ""
    cancelled: bool = False
    seconds: float = 0.0

    @property
    def result(self) -> dict[str, Any] | None:
        return next((e for e in reversed(self.events) if e.get("event") == "result"), None)

    @property
    def last_step(self) -> int | None:
        steps = [
            e["index"] for e in self.events if e.get("event") == "step" and isinstance(e.get("index"), int)
        ]
        return steps[-1] if steps else None

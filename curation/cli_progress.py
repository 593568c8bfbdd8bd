"""Progress of a long terminal command: one line redrawn in place on a terminal, nothing otherwise (the
command's final summary says what was done; a log file or CI output gets no wall of progress lines)."""

from __future__ import annotations

import sys
from typing import TextIO

__all__ = ["ProgressBar"]


class ProgressBar:
    """Call with (done, total, label) or, via :meth:`fraction`, with (label, fraction in 0..1)."""

    def __init__(self, stream: TextIO | None = None, width: int = 30) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.width = width
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._drawn = False

    def __call__(self, done: int, total: int, label: str) -> None:
        frac = done / total if total else 1.0
        self._draw(frac, f"{done}/{total} {label}")

    def fraction(self, label: str, fraction: float) -> None:
        frac = min(max(float(fraction), 0.0), 1.0)
        self._draw(frac, f"{frac:>4.0%} {label}")

    def _draw(self, frac: float, text: str) -> None:
        if not self.tty:
            return
        filled = int(frac * self.width)
        line = f"[{'#' * filled}{'.' * (self.width - filled)}] {text}"[:100]
        self.stream.write("\r" + line.ljust(100))
        self.stream.flush()
        self._drawn = True
        if frac >= 1.0:
            self.close()

    def close(self) -> None:
        """End the bar's line, so what is printed next starts on a fresh one."""
        if self._drawn:
            self.stream.write("\r" + " " * 100 + "\r")
            self.stream.flush()
            self._drawn = False

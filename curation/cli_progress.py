"""Progress of a long terminal command: one line redrawn in place on a terminal, nothing otherwise (the
command's final summary says what was done; a log file or CI output gets no wall of progress lines)."""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

__all__ = ["ProgressBar", "frozen_heap_after_first_item"]


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


@contextmanager
def frozen_heap_after_first_item(progress: Callable[[int, int, str], None]
                                 ) -> Iterator[Callable[[int, int, str], None]]:
    """``progress``, which at its first call (everything the work needs is loaded by its first item) sets what is
    loaded aside from the garbage collector (:func:`gc.freeze`), as ``forkpaths worker`` does at its start: each
    full collection walked it all again (about 8 % of an in-process scoring command's CPU). Unfrozen at the end,
    as it was: the command may run inside a longer-lived process (the test suite's)."""
    frozen: list[bool] = []

    def first_freezes(done: int, total: int, label: str) -> None:
        if not frozen:
            gc.freeze()
            frozen.append(True)
        progress(done, total, label)

    try:
        yield first_freezes
    finally:
        if frozen:
            gc.unfreeze()

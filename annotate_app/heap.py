"""Keeping Streamlit's garbage collection after every script run cheap.

Streamlit runs a full collection (``gc.collect(2)``, its ``runner.postScriptGC``) after each run. With the
app's libraries loaded (pandas, plotly, SQLAlchemy, Streamlit itself: some 200,000 objects that live as long as
the server) that walk took 0.2-0.4 s of CPU on every click, holding the interpreter while the next request
waited. The loaded modules are set aside from the collector (:func:`gc.freeze`, as the scoring worker does at
its start) each time a run has imported new ones, so the collection after a run walks that run's objects only.
"""

from __future__ import annotations

import gc
import sys

_frozen_at_modules = 0


def freeze_new_modules() -> None:
    """Collect, then freeze what is alive, when modules were imported since the last freeze.

    Whatever else is alive at that moment (this session's objects) is frozen too and kept for the process's
    life; that happens once per newly imported set of modules (a few times, as pages are first opened), so it
    stays bounded."""
    global _frozen_at_modules
    if len(sys.modules) > _frozen_at_modules:
        gc.collect()
        gc.freeze()
        _frozen_at_modules = len(sys.modules)

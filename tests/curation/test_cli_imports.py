"""Every ``forkpaths`` command pays for what ``curation.cli`` imports at module level: it must not load the
heavy libraries (they are imported inside the commands that use them). Checked in a fresh interpreter through
``sys.modules``, not by timing."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ["pandas", "numpy", "networkx", "streamlit", "statsmodels", "sklearn", "scipy", "openai", "plotly",
         "alembic"]


def _loaded_after(module: str) -> list[str]:
    code = (f"import json, sys; import {module}; "
            f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("module", ["curation.cli", "curation.cli_scoring", "curation.bootstrap",
                                    "evaluation.sandbox"])
def test_importing_the_cli_loads_no_heavy_library(module: str) -> None:
    assert _loaded_after(module) == []


def test_the_check_sees_a_heavy_import() -> None:
    assert _loaded_after("curation.services.checks") != []  # the sandbox checks do need pandas


def test_the_lazy_sandbox_names_resolve() -> None:
    import evaluation.sandbox as sandbox

    for name in sandbox.__all__:
        assert getattr(sandbox, name) is not None
    with pytest.raises(AttributeError):
        sandbox.no_such_name  # noqa: B018

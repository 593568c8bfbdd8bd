"""The registry declares every kind (its name, capabilities, CLI commands, schemas) without the engine: a kind's
module imports the data libraries inside the functions that score, so ``forkpaths --help`` (which lists the
``import-<kind>`` commands), ``score --enqueue`` and every page that only lists kinds do not pay for them. Checked
in a fresh interpreter through ``sys.modules``, not by timing."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ["pandas", "numpy", "networkx", "pyarrow", "statsmodels", "sklearn", "scipy", "openai", "httpx",
         "matplotlib", "plotly", "streamlit", "inspect_ai"]


def _loaded_after(code: str) -> tuple[list[str], object]:
    """The heavy libraries loaded after ``code`` ran in a fresh interpreter, and what it left in ``out``."""
    script = (f"import json, sys\nout = None\n{code}\n"
              f"print(json.dumps([sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})), out]))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    loaded, out = json.loads(done.stdout.strip().splitlines()[-1])
    return loaded, out


def test_listing_the_kinds_and_their_capabilities_loads_no_data_library() -> None:
    loaded, out = _loaded_after("""
import evaluation.tasks as tasks
from evaluation.tasks.base import TaskKind
declared = {}
for k in tasks.KINDS.values():
    declared[k.name] = {
        "label": k.label, "noun": k.item_noun, "role": k.leaderboard.role,
        "columns": [c.key for c in k.leaderboard.columns],
        "capabilities": sorted(f for f in TaskKind.__dataclass_fields__ if getattr(k, f) not in (None, (), "", False)),
        "import_command": f"import-{k.name}" if k.importer is not None else None,
        "schema": json.loads(k.submission_schema.read_text())["$id"] if k.submission_schema else None,
        "items": [i.name for i in k.item_kinds],
        "part_noun": k.release_part.noun if k.release_part else None,
    }
out = {"declared": declared, "ranked": [k.name for k in tasks.ranked_kinds()],
       "importers": [k.name for k in tasks.kinds_with("importer")]}
""")
    assert loaded == []
    assert isinstance(out, dict)
    assert len(out["declared"]) >= 5  # every kind of the package was found and declared
    assert out["ranked"] and out["importers"]  # capabilities were read, not only names
    assert all(d["schema"] for d in out["declared"].values() if "submission_schema" in d["capabilities"])


def test_the_top_level_help_lists_the_import_commands_without_a_data_library() -> None:
    loaded, out = _loaded_after("""
import contextlib, io
from curation.cli import main
buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    try:
        main(["--help"])
    except SystemExit as exc:
        assert exc.code == 0
import evaluation.tasks as tasks
out = [f"import-{k.name}" in buf.getvalue() for k in tasks.kinds_with("importer")]
""")
    assert loaded == []
    assert isinstance(out, list) and out and all(out)  # every kind that imports datasets has its command in the help


def test_the_check_sees_the_engine_load_where_it_is_used() -> None:
    loaded, out = _loaded_after("import evaluation.tasks\nfrom evaluation.metrics import proportion_estimate\n"
                                "out = proportion_estimate([True, False], n_bootstrap=10).point")
    assert "numpy" in loaded and out == 0.5  # a function that computes imports what it needs


def test_the_hms_names_resolve_on_first_use() -> None:
    """The HMS package loads its judge and scorer on first use (the hypotheses kind declares itself with its
    records alone); every public name still resolves."""
    import evaluation.hms as hms

    for name in hms.__all__:
        assert getattr(hms, name) is not None
    with pytest.raises(AttributeError):
        hms.no_such_name  # noqa: B018

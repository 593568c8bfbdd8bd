"""The layering of the design card, checked on the source: imports go annotate_app → curation/evaluation →
exports, and only annotate_app touches Streamlit."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN = {
    "exports": {"curation", "evaluation", "annotate_app", "streamlit"},
    "evaluation": {"curation", "annotate_app", "streamlit", "sqlmodel", "sqlalchemy"},
    "curation": {"annotate_app", "streamlit"},
}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_imports_only_downwards(package: str) -> None:
    offenders = {
        str(path.relative_to(ROOT)): sorted(_imports(path) & FORBIDDEN[package])
        for path in (ROOT / package).rglob("*.py")
        if _imports(path) & FORBIDDEN[package]
    }
    assert offenders == {}


def test_datasets_folder_is_data_not_a_package() -> None:
    assert not list((ROOT / "datasets").rglob("*.py")), "datasets/ would shadow HuggingFace's `datasets`"


def test_ruff_finds_nothing() -> None:
    """The chosen rule set (pyproject) holds everywhere, the banned-api rule included (streamlit in UI only)."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise",
                           str(ROOT)], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_finds_nothing() -> None:
    """The domain packages stay mypy-clean (conventions.md), checked on every run so a merge cannot slip past it."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "mypy", "curation", "evaluation", "exports"],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr

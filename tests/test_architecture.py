"""The layering of the design card, checked on the source: imports go annotate_app → curation/evaluation →
exports, and only annotate_app touches Streamlit."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN = {
    "exports": {"curation", "evaluation", "annotate_app", "streamlit"},
    "evaluation": {"curation", "annotate_app", "streamlit", "sqlmodel", "sqlalchemy"},
    "curation": {"annotate_app", "streamlit"},
    # inspect_ai's entry point (the edge inspect loads): it reads the settings and builds tasks, no UI
    "forkpaths": {"annotate_app", "streamlit"},
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


def test_mypy_finds_nothing(pytestconfig: pytest.Config) -> None:
    """The domain packages stay mypy-clean (conventions.md), checked on every run so a merge cannot slip past it.

    The run's mypy was started in the background once the tests were collected (tests/conftest.py: over a minute
    on a fresh clone); this waits for its exit code, or runs mypy here when it was not started."""
    import subprocess
    import time

    from tests.conftest import MYPY_COMMAND, mypy_folder

    folder = mypy_folder(pytestconfig)
    if folder.is_dir():
        deadline = time.monotonic() + 600
        while not (folder / "exit-code").exists():
            assert time.monotonic() < deadline, "the early mypy did not finish within 10 minutes"
            time.sleep(0.2)
        returncode, output = int((folder / "exit-code").read_text()), (folder / "output").read_text()
    else:
        done = subprocess.run(MYPY_COMMAND, capture_output=True, text=True, timeout=600, cwd=ROOT)
        returncode, output = done.returncode, done.stdout + done.stderr
    assert returncode == 0, output


# --- One boundary for untrusted code: nothing outside evaluation/sandbox starts a process -----------------------

PROCESS_MODULES = {"subprocess", "multiprocessing", "pty", "pexpect"}
PROCESS_OS_CALLS = {"fork", "forkpty", "system", "popen", "execl", "execle", "execlp", "execlpe", "execv", "execve",
                    "execvp", "execvpe", "spawnl", "spawnle", "spawnlp", "spawnlpe", "spawnv", "spawnve", "spawnvp",
                    "spawnvpe", "posix_spawn", "posix_spawnp"}
PROCESS_NAMES = {"ProcessPoolExecutor"}
STARTS_PROCESSES = {
    # file: (what it uses, why it may)
    "curation/cli_app.py": ({"subprocess", "os.execv"},
                            "the CLI installs bubblewrap with apt-get and starts the app and its worker: trusted "
                            "commands of forkpaths itself, never code it did not write"),
    "evaluation/programmatic/job.py": ({"os.fork"},
                                       "pending: issue 26 point 3 (h-prog) moves the checks onto JobContext.split; "
                                       "until then this engine's fork is covered by the attack suite"),
}
"""The declared exceptions; anything else that starts a process outside ``evaluation/sandbox`` fails below."""


def _process_starts(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names if a.name.split(".")[0] in PROCESS_MODULES}
        elif isinstance(node, ast.ImportFrom) and node.module:
            root = node.module.split(".")[0]
            if root in PROCESS_MODULES:
                found.add(root)
            names = {a.name for a in node.names}
            if root == "os":
                found |= {f"os.{n}" for n in names & PROCESS_OS_CALLS}
            found |= names & PROCESS_NAMES
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id == "os" and node.attr in PROCESS_OS_CALLS:
                found.add(f"os.{node.attr}")
            if node.attr in PROCESS_NAMES:
                found.add(node.attr)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "__import__":
            if node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value in PROCESS_MODULES:
                found.add(str(node.args[0].value))
    return found


def test_only_the_sandbox_starts_processes() -> None:
    """An engine has no other way to start a process than the sandbox (issue 26): no module of the packages outside
    ``evaluation/sandbox`` forks, execs, spawns or imports subprocess/multiprocessing/pty, except the declared
    trusted ones."""
    found = {}
    for package in ("annotate_app", "curation", "evaluation", "exports"):
        for path in (ROOT / package).rglob("*.py"):
            rel = path.relative_to(ROOT).as_posix()
            if rel.startswith("evaluation/sandbox/"):
                continue
            uses = _process_starts(path)
            if uses:
                found[rel] = uses
    undeclared = {rel: sorted(uses - STARTS_PROCESSES.get(rel, (set(), ""))[0]) for rel, uses in found.items()}
    assert {rel: uses for rel, uses in undeclared.items() if uses} == {}, (
        "start processes only through evaluation.sandbox (a registered job), or declare why in STARTS_PROCESSES")
    stale = sorted(set(STARTS_PROCESSES) - set(found))
    assert stale == [], f"declared exceptions that no longer start a process (remove them): {stale}"


def test_the_process_check_sees_each_way_of_starting_one(tmp_path: Path) -> None:
    """The check above cannot pass by not looking: each spelling is found."""
    spellings = {
        "import subprocess\n": "subprocess",
        "from multiprocessing import Pool\n": "multiprocessing",
        "import os\nos.fork()\n": "os.fork",
        "import os\nos.system('x')\n": "os.system",
        "from os import execv\n": "os.execv",
        "import os\nos.posix_spawn('x', [], {})\n": "os.posix_spawn",
        "from concurrent.futures import ProcessPoolExecutor\n": "ProcessPoolExecutor",
        "import pty\n": "pty",
        "m = __import__('subprocess')\n": "subprocess",
    }
    for source, expected in spellings.items():
        path = tmp_path / "mod.py"
        path.write_text(source)
        assert expected in _process_starts(path), source


# --- No import circles and no private cross-module imports (issue 27 point 5) ----------------------------------------
#
# The graph: one node per module of the four packages, one edge per import of another of them that runs (at module
# level or inside a function: a function-local import that works around a circle is still a circle); imports under
# ``if TYPE_CHECKING:`` never run and are left out. A circle is a strongly connected component of that graph
# (networkx), reported with the imports that close it.

PACKAGES = ("annotate_app", "curation", "evaluation", "exports")

ALLOWED_CIRCLES: dict[frozenset[str], str] = {}
"""Shrinking: an entry no circle falls in any more fails below (remove it), and a circle that reaches outside an
entry's modules is new."""

ALLOWED_PRIVATE_IMPORTS: dict[tuple[str, str], tuple[frozenset[str], str]] = {}
"""``from x import _name`` between two modules of the packages, declared with a reason. Shrinking, as
above."""

SHARED_WITHIN_PACKAGE: dict[str, str] = {
    "evaluation.inference_ast": "one static analyser split along its seams into mixins (calls, core, expressions, "
                                "frames, groups) over the helpers of values: private to the package, whose "
                                "__init__ exports the public API",
}
"""Packages whose modules may take each other's private names (one idea split into files). Shrinking, as above."""


def _module_files(root: Path) -> dict[str, Path]:
    modules = {}
    for package in PACKAGES:
        for path in (root / package).rglob("*.py"):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join(parts)] = path
    return modules


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _runtime_imports(body: list[ast.stmt]) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement that can run, at any depth, except under ``if TYPE_CHECKING:``."""
    found: list[ast.Import | ast.ImportFrom] = []
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
            continue
        if isinstance(node, ast.If) and _is_type_checking(node):
            found += _runtime_imports(node.orelse)
            continue
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            sub = getattr(node, field, None)
            if isinstance(sub, list):
                found += _runtime_imports([n for n in sub if isinstance(n, ast.stmt)] + [
                    s for h in sub if isinstance(h, (ast.ExceptHandler, ast.match_case)) for s in h.body])
    return found


def _imported(module: str, path: Path, node: ast.Import | ast.ImportFrom,
              modules: dict[str, Path]) -> list[tuple[str, str]]:
    """(imported module, name) for each name the statement takes from a module of the packages."""
    if isinstance(node, ast.Import):
        return [(a.name, "") for a in node.names if a.name in modules]
    base = node.module or ""
    if node.level:
        package = (module if path.name == "__init__.py" else module.rpartition(".")[0]).split(".")
        base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
    found = []
    for alias in node.names:
        if f"{base}.{alias.name}" in modules:
            found.append((f"{base}.{alias.name}", ""))
        elif base in modules:
            found.append((base, alias.name))
    return found


def import_graph(root: Path = ROOT) -> tuple[Any, list[tuple[str, str, int, str]]]:
    """The import graph (edges carry ``where``: file:line of each import) and every private name taken from
    another module: (importer, imported, line, name)."""
    import networkx as nx

    modules = _module_files(root)
    graph = nx.DiGraph()
    private = []
    for module, path in sorted(modules.items()):
        graph.add_node(module)
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        aliases: dict[str, str] = {}  # a name bound to another module of the packages → that module
        for node in _runtime_imports(tree.body):
            for target, name in _imported(module, path, node, modules):
                if target == module:
                    continue
                if not name:
                    bound = next((a.asname or a.name for a in node.names if target == a.name
                                  or target.endswith("." + a.name)), None)
                    if bound and (isinstance(node, ast.ImportFrom) or "." not in bound):
                        aliases[bound] = target
                where = f"{path.relative_to(root).as_posix()}:{node.lineno}"
                if graph.has_edge(module, target):
                    if where not in graph.edges[module, target]["where"]:
                        graph.edges[module, target]["where"].append(where)
                else:
                    graph.add_edge(module, target, where=[where])
                if name.startswith("_") and not name.startswith("__"):
                    private.append((module, target, node.lineno, name))
        for node in ast.walk(tree):  # ``from pkg import mod`` then ``mod._name``: the same private name taken
            if isinstance(node, ast.Attribute) and isinstance(node.value,
                                                              ast.Name) and node.value.id in aliases \
                    and node.attr.startswith("_") and not node.attr.startswith("__"):
                private.append((module, aliases[node.value.id], node.lineno, node.attr))
    return graph, private


def import_circles(root: Path = ROOT) -> list[list[str]]:
    """Each circle as one line per import inside it (``a -> b (file:line)``), circles sorted by their modules."""
    import networkx as nx

    graph, _ = import_graph(root)
    circles = []
    for component in nx.strongly_connected_components(graph):
        if len(component) < 2:
            continue
        inner = graph.subgraph(component)
        circles.append(sorted(f"{a} -> {b} ({', '.join(inner.edges[a, b]['where'])})" for a, b in inner.edges))
    return sorted(circles)


def _circle_modules(circle: list[str]) -> frozenset[str]:
    return frozenset(m for line in circle for m in line.split(" (")[0].split(" -> "))


def report_circles(root: Path = ROOT) -> str:
    circles = import_circles(root)
    lines = [f"{len(circles)} import circle(s)"]
    for circle in circles:
        lines.append(f"- {', '.join(sorted(_circle_modules(circle)))}:")
        lines += [f"    {line}" for line in circle]
    return "\n".join(lines)


def test_no_import_circles_but_the_declared_ones() -> None:
    """A new circle fails here with the imports that close it; a declared one that is gone must be removed."""
    circles = import_circles()
    print(report_circles())
    new = [c for c in circles if not any(_circle_modules(c) <= allowed for allowed in ALLOWED_CIRCLES)]
    assert new == [], "import circles (move what both sides need to its owner, or invert the call):\n" + "\n".join(
        "\n".join(c) for c in new)
    stale = [sorted(allowed) for allowed in ALLOWED_CIRCLES
             if not any(_circle_modules(c) <= allowed for c in circles)]
    assert stale == [], f"declared circles that are gone (remove them from ALLOWED_CIRCLES): {stale}"


def test_no_private_names_imported_across_modules_but_the_declared_ones() -> None:
    """``from x import _name`` takes what x keeps to itself: make it public in its owner, or move it there."""
    _, private = import_graph()
    found: dict[tuple[str, str], set[str]] = {}
    lines: dict[tuple[str, str], int] = {}
    for importer, imported, line, name in private:
        if any(importer.startswith(p + ".") and imported.startswith(p + ".") for p in SHARED_WITHIN_PACKAGE):
            continue
        found.setdefault((importer, imported), set()).add(name)
        lines.setdefault((importer, imported), line)
    undeclared = {f"{a} (line {lines[a, b]}) from {b}": sorted(names - ALLOWED_PRIVATE_IMPORTS.get((a, b), (
        frozenset(), ""))[0]) for (a, b), names in sorted(found.items())}
    assert {k: v for k, v in undeclared.items() if v} == {}
    stale = {f"{a} from {b}": sorted(names - found.get((a, b), set()))
             for (a, b), (names, _) in ALLOWED_PRIVATE_IMPORTS.items()}
    assert {k: v for k, v in stale.items() if v} == {}, "declared private imports that are gone (remove them)"
    packages = {p for a, b, _, _ in private for p in SHARED_WITHIN_PACKAGE if a.startswith(p + ".")}
    assert sorted(set(SHARED_WITHIN_PACKAGE) - packages) == [], "SHARED_WITHIN_PACKAGE entries no longer needed"


def test_the_import_checks_see_circles_and_private_names(tmp_path: Path) -> None:
    """The two checks above cannot pass by not looking: a circle through a function-local import, a relative import
    and a private name (imported by name, or read from an imported module) are each found, and a TYPE_CHECKING
    import is not an edge."""
    package = tmp_path / "curation"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from curation.b import _helper\n")
    (package / "b.py").write_text("def _helper():\n    from . import c\n")
    (package / "c.py").write_text("def f():\n    try:\n        import curation.a\n    except ImportError:\n"
                                  "        pass\n")
    (package / "d.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from curation import a\n")
    (package / "e.py").write_text("from curation import d\n")
    (package / "f.py").write_text("from curation import e as module\n\ndef g():\n    return module._hidden\n")
    (tmp_path / "annotate_app").mkdir()
    (tmp_path / "evaluation").mkdir()
    (tmp_path / "exports").mkdir()
    circles = import_circles(tmp_path)
    assert [sorted(_circle_modules(c)) for c in circles] == [["curation.a", "curation.b", "curation.c"]]
    assert "curation.b -> curation.c (curation/b.py:2)" in circles[0]
    assert import_graph(tmp_path)[1] == [("curation.a", "curation.b", 1, "_helper"),
                                         ("curation.f", "curation.e", 4, "_hidden")]


# --- One transaction shape (issue 27 point 6): a session is handed over by name -----------------------------


def _positional_sessions(root: Path) -> list[str]:
    """Every public function or method of ``curation`` that takes a ``session`` (by name, or typed ``Session``)
    positionally, as ``file:line name``."""
    found = []
    for path in sorted((root / "curation").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.name.startswith("_"):
                continue
            for arg in node.args.posonlyargs + node.args.args:
                typed = arg.annotation is not None and ast.unparse(arg.annotation).split(".")[-1] == "Session"
                if arg.arg == "session" or typed:
                    found.append(f"{path.relative_to(root).as_posix()}:{node.lineno} {node.name}")
    return found


def test_services_take_their_session_by_keyword() -> None:
    """A public function of ``curation`` takes ``session`` keyword-only (``def f(*, session, ...)``): a call names
    the transaction it joins, and a new helper that takes it positionally fails here (conventions.md, "A
    transaction is one user action")."""
    assert _positional_sessions(ROOT) == [], "make `session` keyword-only: def f(*, session: Session, ...)"


def test_the_session_check_sees_each_spelling(tmp_path: Path) -> None:
    """The check above cannot pass by not looking: a positional ``session``, a positional-only one, one typed
    ``Session`` under another name and a method's are found; keyword-only ones and private helpers are not."""
    (tmp_path / "curation").mkdir()
    (tmp_path / "curation" / "m.py").write_text(
        "from sqlmodel import Session\n"
        "def a(session, x): ...\n"
        "def b(session, /): ...\n"
        "def c(s: Session): ...\n"
        "class K:\n    def d(self, session): ...\n"
        "def ok(*, session: Session, x: int): ...\n"
        "def _private(session): ...\n")
    assert _positional_sessions(tmp_path) == ["curation/m.py:2 a", "curation/m.py:3 b", "curation/m.py:4 c",
                                              "curation/m.py:6 d"]


def _engine_services(root: Path) -> list[tuple[str, str]]:
    """(file:line name, docstring) of each public function of ``curation/services`` that takes an ``engine`` or a
    transaction factory: work that opens its own transactions."""
    found = []
    for path in sorted((root / "curation" / "services").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in tree.body:
            if not isinstance(node, ast.FunctionDef) or node.name.startswith("_"):
                continue
            args = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
            if any(a.arg in ("engine", "transactions", "session_scope", "step") for a in args):
                found.append((f"{path.relative_to(root).as_posix()}:{node.lineno} {node.name}",
                              ast.get_docstring(node) or ""))
    return found


def test_services_that_span_transactions_say_why_and_open_them_one_way() -> None:
    """A service that takes an engine (or a factory of transactions) instead of a session spans transactions:
    its docstring says so, and the services open transactions through :func:`curation.db.transactions` only
    (never ``session_scope`` or a ``Session`` of their own)."""
    silent = [where for where, doc in _engine_services(ROOT) if "transaction" not in doc.lower()]
    assert silent == [], "say in the docstring why this spans transactions (or take a session)"
    opened = []
    for path in sorted((ROOT / "curation" / "services").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in (
                    "session_scope", "Session") and node.args:
                opened.append(f"{path.relative_to(ROOT).as_posix()}:{node.lineno} {node.func.id}")
    assert opened == [], "open a service's own transactions with curation.db.transactions(engine)"

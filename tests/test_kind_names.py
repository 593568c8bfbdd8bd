"""No shared file names a kind (issue 27, "Done when"): a ratchet over every registered kind's name and its
decision-item kinds' names.

A file "names" a kind when its code holds a string literal that is exactly one of those names, in any case
(``"mcq"``, ``'Hypotheses'``, ``"check"``): the spelling a branch, a registry lookup or a dict key uses. Comments
and prose (a docstring, a sentence that mentions MCQs) are not counted. A file belongs to a kind when a part of its
path is the kind's name or one of its decision-item kinds' names, alone or followed by ``_`` (``evaluation/tasks/
mcq.py``, ``curation/services/mcq_review.py``, ``evaluation/programmatic/``, ``annotate_app/components/
hypothesis_gold.py``); everything else is shared.

:data:`DECLARED` lists the shared files that still name kinds, each with the names it may use and why. The test
fails when a shared file names a kind it is not declared for (a new leak), and when a declared file no longer
names one (the list must shrink with the code).
"""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

from evaluation.tasks import KINDS

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("annotate_app", "curation", "evaluation", "exports")

#: The historical 1.x release fields the reader upgrades, BLADE's decision graph and its exports, and the
#: pages and services not yet moved into their kind: shared files that still name a kind, by file, with the
#: names each may use. Every entry is debt to move into its kind, except where the reason says otherwise.
DECLARED: dict[str, tuple[frozenset[str], str]] = {
    "annotate_app/components/mcq_view.py": (frozenset({"variable"}),
        "an MCQ asks about one of BLADE's decisions (a variable or a transform): the MCQ kind's own file reads its item's kind (exports/mcq_part.py) to say which"),
    "curation/cli_kinds/analyses.py": (frozenset({"check"}),
        "not a kind: the name of the command `forkpaths check` (the analyses kind's sanity check of code), which "
        "is spelled as the programmatic kind's decision item"),
    "curation/cli_scoring.py": (frozenset({"check"}),
        "not a kind: the name of the command `forkpaths artifacts check`, which is spelled as the programmatic "
        "kind's decision item"),
    "curation/graph.py": (frozenset({"transform", "variable"}),
        "BLADE's decision graph (variables and transforms): the analyses kind's engine, shared by its pipeline"),
    "curation/ground_truth.py": (frozenset({"artifact", "check", "transform", "variable"}),
        "BLADE's decision graph (variables and transforms): the analyses kind's engine, shared by its pipeline"),
    "curation/models/__init__.py": (frozenset({"transform"}),
        "not a kind: the table class Transform, named in __all__ (the package re-exports every table)"),
    "curation/models/annotation.py": (frozenset({"transform"}),
        "not a kind: the table class Transform, named in __all__"),
    "curation/services/analyses/review_queue.py": (frozenset({"check"}),
        "not a kind: the key of an alternative's stage-1 sanity-check result (Alternative.extra['check']), which "
        "is spelled as the programmatic kind's decision item"),
    "curation/services/alternatives.py": (frozenset({"check", "transform", "variable"}),
        "debt: to move into its kind"),
    "curation/services/annotation.py": (frozenset({"transform"}),
        "debt: to move into its kind"),
    "curation/services/ground_truth.py": (frozenset({"hypothesis", "transform", "variable"}),
        "debt: to move into its kind"),
    "curation/services/hypotheses/review.py": (frozenset({"check"}),
        "not a kind: the key of an alternative's sanity-check result (Alternative.extra['check']), which is "
        "spelled as the programmatic kind's decision item"),
    "curation/services/judge_validation.py": (frozenset({"variable"}),
        "debt: to move into its kind"),
    "curation/services/mcq_audit.py": (frozenset({"transform", "variable"}),
        "an MCQ asks about one of BLADE's decisions (a variable or a transform): the MCQ kind's own service builds, "
        "audits or reviews it from those decisions, by design (the MCQ kind is built on the analyses kind's consensus)"),
    "curation/services/mcq_generate.py": (frozenset({"transform", "variable"}),
        "an MCQ asks about one of BLADE's decisions (a variable or a transform): the MCQ kind's own service builds, "
        "audits or reviews it from those decisions, by design (the MCQ kind is built on the analyses kind's consensus)"),
    "curation/services/mcq_review.py": (frozenset({"variable"}),
        "an MCQ asks about one of BLADE's decisions (a variable or a transform): the MCQ kind's own service builds, "
        "audits or reviews it from those decisions, by design (the MCQ kind is built on the analyses kind's consensus)"),
    "curation/services/reproducibility.py": (frozenset({"analyses"}),
        "debt: to move into its kind"),
    "curation/services/scoring.py": (frozenset({"analyses", "mcq"}),
        "debt: to move into its kind (mcq_release: the MCQ kind's release check)"),
    "evaluation/agreement.py": (frozenset({"variable"}),
        "debt: to move into its kind"),
    "evaluation/groundtruth/build.py": (frozenset({"transform"}),
        "BLADE's decision graph (variables and transforms): the analyses kind's engine, shared by its pipeline"),
    "evaluation/groundtruth/convert_job.py": (frozenset({"transform"}),
        "BLADE's decision graph (variables and transforms): the analyses kind's engine, shared by its pipeline"),
    "evaluation/inference_ast/frames.py": (frozenset({"transform"}),
        "BLADE's decision graph (variables and transforms): the analyses kind's engine, shared by its pipeline"),
    "evaluation/inference_ast/groups.py": (frozenset({"transform"}),
        "BLADE's decision graph (variables and transforms): the analyses kind's engine, shared by its pipeline"),
    "evaluation/mcq_scoring.py": (frozenset({"transform", "variable"}),
        "an MCQ asks about one of BLADE's decisions (a variable or a transform): the MCQ kind's own file reads its item's kind (exports/mcq_part.py) to say which"),
    "evaluation/overrides.py": (frozenset({"transform", "variable"}),
        "debt: to move into its kind"),
    "evaluation/reproducibility/items.py": (frozenset({"hypotheses"}),
        "debt: to move into its kind"),
    "evaluation/reproducibility/models.py": (frozenset({"hypotheses"}),
        "debt: to move into its kind"),
    "evaluation/sandbox/code_jobs.py": (frozenset({"transform"}),
        "BLADE's decision graph (variables and transforms): the analyses kind's engine, shared by its pipeline"),
    "evaluation/sandbox/describe.py": (frozenset({"transform"}),
        "BLADE's decision graph (variables and transforms): the analyses kind's engine, shared by its pipeline"),
    "evaluation/submissions.py": (frozenset({"analyses", "transform"}),
        "debt: to move into its kind"),
    "exports/blade_annotations.py": (frozenset({"transform"}),
        "BLADE's decision graph (variables and transforms): the analyses kind's engine, shared by its pipeline"),
    "exports/blade_convert.py": (frozenset({"transform", "variable"}),
        "BLADE's decision graph (variables and transforms): the analyses kind's engine, shared by its pipeline"),
    "exports/blade_rows.py": (frozenset({"transform"}),
        "BLADE's decision graph (variables and transforms): the analyses kind's engine, shared by its pipeline"),
    "exports/changelog.py": (frozenset({"check", "hypothesis", "transform", "variable"}),
        "to move: the changelog's per-kind lines"),
    "exports/discoverybench/__init__.py": (frozenset({"hypotheses"}),
        "not a kind: the model class Hypotheses (DiscoveryBench's own metadata), named in __all__"),
    "exports/discoverybench/models.py": (frozenset({"hypotheses", "variable"}),
        "not a kind: the model class Hypotheses named in __all__, and 'variable', DiscoveryBench's own spelling "
        "of its question type 'variables' (not BLADE's decision item)"),
    "exports/hf/tables.py": (frozenset({"analyses", "transform", "variable"}),
        "the tables of the fields every dataset shares: BLADE's decisions (variables, transforms) and their "
        "datasets; the kinds' tables come from their release parts"),
    "exports/mcq_part.py": (frozenset({"transform", "variable"}),
        "an MCQ asks about one of BLADE's decisions (a variable or a transform): its item model says which; moved "
        "here from exports/schema.py with the model"),
    "exports/schema.py": (frozenset({"hypothesis", "transform", "variable"}),
        "the release format's shared models: the kinds of alternatives, votes and consensus records (debt: to "
        "become the decision-item kinds the registry declares)"),
    "exports/upgrade.py": (frozenset({"hypotheses", "mcq", "programmatic"}),
        "format 1.x → 2.0: the one place that knows which 1.x fields became which kind's part (by design)"),
}


def _names() -> dict[str, str]:
    """Every registered kind's name and decision-item kinds' names → the task kind they belong to."""
    names = {}
    for kind in KINDS.values():
        names[kind.name] = kind.name
        for item in kind.item_kinds:
            names[item.name] = kind.name
    return names


def _owners(path: Path, names: dict[str, str]) -> set[str]:
    return {kind for part in path.with_suffix("").parts for name, kind in names.items()
            if part == name or part.startswith(name + "_")}


def kind_names_in_shared_files() -> dict[str, set[str]]:
    """Shared file → the kind and decision-item names its code spells as a whole string literal."""
    names = _names()
    found: dict[str, set[str]] = {}
    for top in PACKAGES:
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT)
            owners = _owners(rel, names)
            text = path.read_text(encoding="utf-8")
            for tok in tokenize.generate_tokens(io.StringIO(text).readline):
                if tok.type != tokenize.STRING:
                    continue
                try:
                    value = ast.literal_eval(tok.string)
                except (ValueError, SyntaxError):
                    continue  # an f-string
                key = value.strip().lower() if isinstance(value, str) else None
                if key in names and names[key] not in owners:
                    found.setdefault(str(rel), set()).add(key)
    return found


def test_no_shared_file_names_a_kind_beyond_what_is_declared():
    found = kind_names_in_shared_files()
    new = {f: sorted(n - DECLARED.get(f, (frozenset(), ""))[0]) for f, n in found.items()}
    new = {f: n for f, n in new.items() if n}
    assert new == {}, ("shared files name kinds they are not declared for (move the branch into the kind, or "
                       f"ask the registry): {new}")
    gone = sorted(f for f in DECLARED if f not in found)
    assert gone == [], f"these files no longer name a kind: take them out of DECLARED: {gone}"
    wider = {f: sorted(DECLARED[f][0] - found[f]) for f in DECLARED if f in found and DECLARED[f][0] - found[f]}
    assert wider == {}, f"DECLARED allows names these files no longer use: narrow it: {wider}"


def test_the_check_sees_a_kind_named_in_shared_code(tmp_path, monkeypatch):
    """The check itself: a branch on a kind's name in a shared file is found; the same words in a docstring,
    a comment or a sentence are not; a kind's own file may name it."""
    import tests.test_kind_names as me

    fake = tmp_path / "evaluation"
    (fake / "tasks").mkdir(parents=True)
    (fake / "shared_thing.py").write_text('"""MCQ runs and hypotheses, described."""\n# if kind == "mcq"\n'
                                          'def f(kind):\n    return kind == "Hypotheses" or "mcq runs" in kind\n')
    (fake / "tasks" / "mcq.py").write_text('name = "mcq"\n')
    monkeypatch.setattr(me, "ROOT", tmp_path)
    monkeypatch.setattr(me, "PACKAGES", ("evaluation",))
    assert me.kind_names_in_shared_files() == {"evaluation/shared_thing.py": {"hypotheses"}}

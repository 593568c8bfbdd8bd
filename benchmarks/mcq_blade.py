"""MCQ audit of BLADE's own MCQs and MCQ generation on every shared BLADE dataset (prints figures, asserts
nothing).

Imports /work/shared/blade/datasets into a fresh SQLite database, audits the imported MCQs against the imported
judgements under BLADE's rule, then generates MCQs (seed 0) and times both steps.
Run: .venv/bin/python benchmarks/mcq_blade.py [BLADE_DATASETS_FOLDER]
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlmodel import select  # noqa: E402

from curation.db import make_engine, migrate, session_scope  # noqa: E402
from curation.models import Dataset  # noqa: E402
from curation.services.blade_import import import_blade  # noqa: E402
from curation.services.mcq_audit import audit_mcqs  # noqa: E402
from curation.services.mcq_generate import MCQGenerationError, MCQSettings, generate_mcqs  # noqa: E402


def main() -> None:
    source = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("/work/shared/blade/datasets")
    with tempfile.TemporaryDirectory() as tmp:
        engine = make_engine(f"sqlite:///{tmp}/bench.db")
        migrate(engine)
        store = Path(tmp) / "store"
        store.mkdir()
        with session_scope(engine) as s:
            import_blade(session=s, actor=None, path=source, store=store, max_bytes=200 * 2**20)
        flags: Counter[str] = Counter()
        totals = Counter()
        print(f"{'dataset':<12} {'MCQs':>5} {'checked':>7} {'unlinked':>8} {'flagged':>7} {'audit ms':>8} "
              f"{'generated':>9} {'gen ms':>7}")
        with session_scope(engine) as s:
            for ds in s.exec(select(Dataset).order_by(Dataset.name)).all():
                t0 = time.perf_counter()
                audit = audit_mcqs(session=s, actor=None, dataset_id=ds.id or 0)
                t1 = time.perf_counter()
                try:
                    made = len(generate_mcqs(session=s, actor=None, dataset_id=ds.id or 0,
                                             settings=MCQSettings(seed=0)).mcqs)
                except MCQGenerationError:
                    made = 0
                t2 = time.perf_counter()
                flags.update(audit.flag_counts())
                totals.update({"mcqs": audit.total, "checked": audit.checked, "unlinked": audit.unlinked_keys,
                               "flagged": audit.flagged, "generated": made})
                for kind, n in audit.by_kind.items():
                    totals[kind] += n
                print(f"{ds.name:<12} {audit.total:>5} {audit.checked:>7} {audit.unlinked_keys:>8} {audit.flagged:>7} "
                      f"{(t1 - t0) * 1000:>8.0f} {made:>9} {(t2 - t1) * 1000:>7.0f}")
        print(f"\nBLADE MCQs audited: {totals['mcqs']} ("
              + ", ".join(f"{totals[k]} {k}" for k in sorted(k for k in totals if "/" in k)) + ")")
        print(f"keys checked against the votes: {totals['checked']}; keys matching no item: {totals['unlinked']}; "
              f"questions flagged: {totals['flagged']}")
        for name, n in sorted(flags.items()):
            print(f"  {name}: {n}")
        print(f"MCQs generated from the imported judgements (seed 0): {totals['generated']}")
        engine.dispose()


if __name__ == "__main__":
    from proc_cpu import count_this_run  # benchmarks/ is this script's folder

    count_this_run()  # prints this run's wall and CPU seconds, the load and the machine's speed at exit
    main()

"""The offline judge on the ground truth itself: every expert model row of the nine shared datasets becomes an
"agent analysis" (its linked variables, its expert model code, identity transform with the release's column
lineage) and is judged against its own dataset. Prints, per dataset, how often the model matched, the variable
precision and how often the model+variables check passed. Asserts nothing.

Misses are worth reading: e.g. amtl's code says ``from_specified_region`` where the annotation says
``from_specified_regions``, so that variable is not linked to the model.
Run: .venv/bin/python benchmarks/judge_self_agreement.py [../shared/blade]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from evaluation.judges import decisions_from_release, judge_analysis, make_judge  # noqa: E402
from evaluation.records import TransformMatch  # noqa: E402
from evaluation.submissions import parse_submission  # noqa: E402
from tests.evaluation.blade_release import blade_release_dataset  # noqa: E402


def main() -> None:
    shared = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT.parent / "shared" / "blade"
    judge = make_judge("offline")
    totals = [0, 0.0, 0.0, 0.0]
    for folder in sorted((shared / "datasets").iterdir()):
        if not (folder / "annotations.csv").exists():
            continue
        ds = blade_release_dataset(folder)
        gt = decisions_from_release(ds)
        by_id = {v.id: v for v in ds.variables}
        lineage = {mp.output: list(mp.inputs) for t in ds.transforms for mp in t.mapping if mp.output}
        analyses = []
        for m in ds.models:
            used = {c.name for c in m.columns}
            vs = [by_id[i] for i in m.variable_ids if i in by_id]

            def cols(v, used=used):  # type: ignore[no-untyped-def]
                return [c.name for c in v.columns if c.name in used] or [c.name for c in v.columns][:1]

            dvs = [{"description": v.concept, "columns": cols(v)} for v in vs if v.variable_type == "DV"]
            if not dvs:
                continue
            body = "\n".join("    " + line for line in (m.code or "pass").splitlines())
            analyses.append({"cvars": {
                "ivs": [{"description": v.concept, "columns": cols(v)} for v in vs if v.variable_type == "IV"],
                "dv": dvs[0],
                "controls": [{"description": v.concept, "columns": cols(v), "is_moderator": v.interaction}
                             for v in vs if v.variable_type == "Control"]},
                "transform_code": "def transform(df):\n    return df",
                "m_code": f"def model(df):\n{body}\n    return None"})
        sub = parse_submission({"dataset_name": ds.name, "analyses": analyses})
        t = time.perf_counter()
        model = cvar = both = 0.0
        for a in sub.analyses:
            r = judge_analysis(gt, a, judge, transform=TransformMatch(status="ok", column_lineage=lineage)).record
            model += bool(r.matched_models)
            cvar += len(r.matched_cvars2) / max(r.num_cvars2, 1)
            both += bool(r.matched_models_cvar)
        n = len(sub.analyses)
        ms = (time.perf_counter() - t) / max(n, 1) * 1000
        print(f"{ds.name:16} rows {n:3}  model matched {model / n:.2f}  variable precision {cvar / n:.2f}  "
              f"model+variables {both / n:.2f}  ({ms:.1f} ms per analysis)")
        totals = [totals[0] + n, totals[1] + model, totals[2] + cvar, totals[3] + both]
    n = totals[0]
    print(f"{'all':16} rows {n:3}  model matched {totals[1] / n:.2f}  variable precision {totals[2] / n:.2f}  "
          f"model+variables {totals[3] / n:.2f}")


if __name__ == "__main__":
    from proc_cpu import count_this_run  # benchmarks/ is this script's folder

    count_this_run()  # prints this run's wall and CPU seconds, the load and the machine's speed at exit
    main()

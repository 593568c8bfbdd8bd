"""Converter agreement: code → transform units without an LLM, checked against BLADE's expert units.

For every analysis path of the nine shared BLADE datasets, the path's code is concatenated as BLADE does
(each spec's code after the group-by rewrite, in execution order) and given to the converter
(:func:`evaluation.groundtruth.convert.convert_transforms`, one sandboxed job per dataset). Its units are
compared with the experts' annotated units of the specs on that path, one mapping pair at a time:

* **verb**: a converter unit writing the same output column (for whole-frame verbs, output ``""``: reading the
  same input columns, or failing that any whole-frame unit) has the expert's verb;
* **mapping**: a converter unit has exactly the expert's (input set → output) pair;
* **both**: one converter unit has the expert's verb and mapping pair.

Then, end to end: the converted path is matched against the dataset's ground truth like a submission, and
the share of the path's expanded ground-truth units credited by value and by graph matching is reported (the
expert path's own code would score 100 % on both).

Run: ``.venv/bin/python benchmarks/converter_agreement.py [--dataset NAME ...] [--show-misses]``
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from collections import defaultdict
from pathlib import Path

import networkx as nx

ROOT_DIR = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT_DIR))

from evaluation.groundtruth import build_dataset, sources_from_blade_folders  # noqa: E402
from evaluation.groundtruth.convert import convert_transforms  # noqa: E402
from evaluation.groundtruth.paths import enumerate_paths  # noqa: E402
from evaluation.groundtruth.specs import rewrite_groupby, specs_from_release  # noqa: E402
from evaluation.matching.transforms import match_transforms  # noqa: E402

SHARED = ROOT_DIR.parent / "shared" / "blade" / "datasets"
DATASETS = ["affairs", "amtl", "boxes", "caschools", "crofoot", "fish", "hurricane", "panda_nuts", "reading"]


def _agreement(expert: list[tuple[str, frozenset[str], str, str]], units: list) -> list[tuple[bool, bool, bool]]:
    pairs = [(u.verb, frozenset(i), o) for u in units for i, o in u.mapping]
    out = []
    for verb, inputs, output, _name in expert:
        if output:
            same_out = [p for p in pairs if p[2] == output]
        else:
            same_out = [p for p in pairs if p[2] == "" and p[1] == inputs] or [p for p in pairs if p[2] == ""]
        v = any(p[0] == verb for p in same_out)
        m = any(p[1] == inputs and p[2] == output for p in pairs)
        b = (verb, inputs, output) in pairs
        out.append((v, m, b))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", nargs="*", default=DATASETS)
    parser.add_argument("--show-misses", action="store_true")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0, 0, 0])
    misses: list[str] = []
    started = time.perf_counter()
    header = f"{'dataset':<12}{'paths':>6}{'pairs':>7}{'verb':>8}{'mapping':>9}{'both':>8}{'value':>8}{'graph':>8}"
    print(header)
    print("-" * len(header))
    for name in args.dataset:
        source = sources_from_blade_folders([SHARED / name])[0]
        gt = build_dataset(source).state
        specs = specs_from_release(source.dataset)
        paths = enumerate_paths(specs)
        orders = [[n for n in nx.topological_sort(p) if specs[n].code] for p in paths]
        codes = ["\n".join(rewrite_groupby(specs[n].code) for n in order) for order in orders]
        conversions = convert_transforms(codes, source.data_path)
        t = totals[name]
        for order, conv in zip(orders, conversions, strict=True):
            expert = [(specs[n].verb, frozenset(i), o, specs[n].name) for n in order for i, o in specs[n].mapping]
            for (verb, inputs, output, spec_name), (v, m, b) in zip(expert, _agreement(expert, conv.units),
                                                                    strict=True):
                t[0] += 1
                t[1] += v
                t[2] += m
                t[3] += b
                if not b:
                    misses.append(f"{name}/{spec_name}: expert {verb} {sorted(inputs)} -> {output!r}; converter "
                                  + "; ".join(f"{u.verb} {[(list(i), o) for i, o in u.mapping]}" for u in conv.units))
            path_units = {uid for uid, u in gt.units.items() if u.spec_id in set(order)}
            if conv.state is not None and path_units:
                m = match_transforms(gt, conv.state)
                t[4] += len(path_units & set(m.matched_value_unit_ids))
                t[5] += len(path_units & set(m.matched_graph_unit_ids))
            t[6] += len(path_units)
        n = max(t[0], 1)
        u = max(t[6], 1)
        print(f"{name:<12}{len(paths):>6}{t[0]:>7}{t[1] / n:>8.0%}{t[2] / n:>9.0%}{t[3] / n:>8.0%}"
              f"{t[4] / u:>8.0%}{t[5] / u:>8.0%}")
    agg = [sum(t[i] for t in totals.values()) for i in range(7)]
    n, u = max(agg[0], 1), max(agg[6], 1)
    print("-" * len(header))
    print(f"{'overall':<12}{'':>6}{agg[0]:>7}{agg[1] / n:>8.0%}{agg[2] / n:>9.0%}{agg[3] / n:>8.0%}"
          f"{agg[4] / u:>8.0%}{agg[5] / u:>8.0%}")
    print("\npairs: expert mapping pairs over all paths (a spec on k paths counts k times); value/graph: share of "
          "each path's expanded GT units credited when the converted path is matched as a submission")
    print(f"{time.perf_counter() - started:.1f} s")
    if args.show_misses:
        print("\ndisagreements (distinct):")
        for line in sorted(set(misses)):
            print("  " + line)


if __name__ == "__main__":
    from proc_cpu import count_this_run  # benchmarks/ is this script's folder

    count_this_run()  # prints this run's wall and CPU seconds, the load and the machine's speed at exit
    main()

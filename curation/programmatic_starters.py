"""Starter programmatic tasks: six DataSciBench-style tasks on the bundled starter datasets, one per task type.

They live in the repository as a DataSciBench tree under ``datasets/programmatic/`` (``metric/<task>/metric.yaml``,
``data/<task>/prompt.json``, ``data/<task>/gt/``; the reference solution as ``gt/test_gt.py.txt``: ``datasets/``
holds no Python files), each ``prompt.json`` naming the starter dataset it reads
(``"dataset"``) and the files (``"input_files": ["data.csv"]``). The artifacts in ``gt/`` are what the reference
solution (``gt/test_gt.py``) writes, run in the sandbox; every check carries the release gate's evidence (its
outcome on the artifacts and on the known wrong outputs made from them). :func:`build_starter_tasks` makes the
whole tree from the definitions below, deterministically (``python -m curation.programmatic_starters datasets``); a test
checks the committed tree is what it produces. At first start they are registered with their datasets, their
artifacts and checks accepted ("imported"), so the programmatic kind works at once.

The starter data is statsmodels' (public domain or distributed with the authors' permission, see each dataset's
``info.json``); nothing else is bundled.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from exports.programmatic_part import ProgrammaticArtifact, ProgrammaticCheck, ProgrammaticTaskRelease

__all__ = ["STARTER_TASKS", "StarterTask", "build_starter_tasks", "register_starter_tasks", "starter_task_tree"]

log = logging.getLogger(__name__)
TREE = "programmatic"


@dataclass(frozen=True)
class StarterTask:
    key: str
    dataset: str
    prompt: str
    solution: str
    checks: tuple[tuple[str, str, str, str, str, str | None], ...]  # (task type, function, metric, gt, code, rule)


CLEAN = "data cleaning & preprocessing"
EXPLORE = "data exploration & statistics understanding"
VISUAL = "data visualization"
PREDICT = "predictive modeling"
MINE = "data mining & pattern recognition"
REPORT = "interpretability & report generation"

STARTER_TASKS: tuple[StarterTask, ...] = (
    StarterTask(
        key="affairs_clean", dataset="affairs_redbook",
        prompt=("Read data.csv (the Redbook affairs survey). Drop exact duplicate rows, then add a column "
                "'any_affair' that is 1 when 'affairs' is above 0 and 0 otherwise. Write the result, with every "
                "original column and the new one, to cleaned.csv (no index column)."),
        solution=("import pandas as pd\n"
                  "df = pd.read_csv('data.csv').drop_duplicates()\n"
                  "df['any_affair'] = (df['affairs'] > 0).astype(int)\n"
                  "df.to_csv('cleaned.csv', index=False)\n"),
        checks=(
            (CLEAN, "Data Completeness", "No duplicate rows", "",
             "import pandas as pd\n\ndef no_duplicates(ground_truth):\n"
             "    df = pd.read_csv('cleaned.csv')\n    return not df.duplicated().any()\n", None),
            (CLEAN, "Data Quality Score", "Row count matches the ground truth", "cleaned.csv",
             "import pandas as pd\n\ndef same_rows(ground_truth):\n"
             "    return len(pd.read_csv('cleaned.csv')) == len(pd.read_csv(ground_truth))\n", None),
            (CLEAN, "Data Accuracy", "Share of correct any_affair flags", "",
             "import pandas as pd\n\ndef flag_accuracy(ground_truth):\n"
             "    df = pd.read_csv('cleaned.csv')\n"
             "    return float(((df['affairs'] > 0).astype(int) == df['any_affair']).mean())\n",
             "lambda share: share == 1.0"),
        )),
    StarterTask(
        key="randhie_visits_by_coinsurance", dataset="rand_hie",
        prompt=("Read data.csv (RAND Health Insurance Experiment). For each distinct value of 'lncoins', compute the "
                "mean number of doctor visits 'mdvis'. Write visits_by_coinsurance.csv with the columns 'lncoins' "
                "and 'mean_mdvis', one row per lncoins value, sorted by lncoins."),
        solution=("import pandas as pd\n"
                  "df = pd.read_csv('data.csv')\n"
                  "out = df.groupby('lncoins', as_index=False)['mdvis'].mean().rename(columns={'mdvis': 'mean_mdvis'})\n"
                  "out.sort_values('lncoins').to_csv('visits_by_coinsurance.csv', index=False)\n"),
        checks=(
            (EXPLORE, "Data Accuracy", "Means match the ground truth", "visits_by_coinsurance.csv",
             "import numpy as np\nimport pandas as pd\n\ndef means_match(ground_truth):\n"
             "    got = pd.read_csv('visits_by_coinsurance.csv').sort_values('lncoins')\n"
             "    want = pd.read_csv(ground_truth).sort_values('lncoins')\n"
             "    return len(got) == len(want) and bool(np.allclose(got['mean_mdvis'], want['mean_mdvis'], rtol=1e-6))\n",
             None),
            (EXPLORE, "Data Completeness", "One row per coinsurance level", "visits_by_coinsurance.csv",
             "import pandas as pd\n\ndef one_row_per_level(ground_truth):\n"
             "    got = pd.read_csv('visits_by_coinsurance.csv')\n"
             "    return got['lncoins'].is_unique and set(got['lncoins'].round(5)) == "
             "set(pd.read_csv(ground_truth)['lncoins'].round(5))\n", None),
        )),
    StarterTask(
        key="anes_age_histogram", dataset="anes96",
        prompt=("Read data.csv (the 1996 American National Election Study). Draw a histogram of the respondents' "
                "'age' with 20 bins, label the x axis with a text containing 'age', label the y axis, give it a "
                "title, and save it as age_histogram.png. Also write plot_info.json with the keys 'xlabel', "
                "'ylabel', 'title' and 'bins' describing the figure."),
        solution=("import json\nimport matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
                  "import pandas as pd\n"
                  "df = pd.read_csv('data.csv')\n"
                  "fig, ax = plt.subplots(figsize=(6, 4))\n"
                  "ax.hist(df['age'], bins=20)\n"
                  "ax.set_xlabel('age (years)')\nax.set_ylabel('respondents')\n"
                  "ax.set_title('Age of ANES 1996 respondents')\n"
                  "fig.savefig('age_histogram.png', dpi=80, metadata={'Software': None})\n"
                  "json.dump({'xlabel': 'age (years)', 'ylabel': 'respondents', "
                  "'title': 'Age of ANES 1996 respondents', 'bins': 20}, open('plot_info.json', 'w'))\n"),
        checks=(
            (VISUAL, "Plot Validity", "A PNG image was written", "",
             "def is_png(ground_truth):\n"
             "    with open('age_histogram.png', 'rb') as handle:\n"
             "        head = handle.read(24)\n"
             "    width = int.from_bytes(head[16:20], 'big')\n"
             "    return head[:8] == b'\\x89PNG\\r\\n\\x1a\\n' and width >= 200\n", None),
            (VISUAL, "Visualization Completeness", "Axes labelled and titled, 20 bins", "",
             "import json\n\ndef labelled(ground_truth):\n"
             "    info = json.load(open('plot_info.json'))\n"
             "    return 'age' in str(info.get('xlabel', '')).lower() and bool(str(info.get('ylabel', '')).strip()) "
             "and bool(str(info.get('title', '')).strip()) and info.get('bins') == 20\n", None),
        )),
    StarterTask(
        key="affairs_predict", dataset="affairs_redbook",
        prompt=("Read data.csv (the Redbook affairs survey). The target is whether 'affairs' is above 0. Train a "
                "classifier on the first 5000 rows using rate_marriage, age, yrs_married, children, religious, "
                "educ and occupation, predict the target for the remaining rows, and write predictions.csv with "
                "one column 'pred' (0 or 1), one row per remaining row, in the original order."),
        solution=("import pandas as pd\nfrom sklearn.linear_model import LogisticRegression\n"
                  "df = pd.read_csv('data.csv')\n"
                  "cols = ['rate_marriage', 'age', 'yrs_married', 'children', 'religious', 'educ', 'occupation']\n"
                  "y = (df['affairs'] > 0).astype(int)\n"
                  "model = LogisticRegression(max_iter=1000).fit(df[cols][:5000], y[:5000])\n"
                  "pd.DataFrame({'pred': model.predict(df[cols][5000:])}).to_csv('predictions.csv', index=False)\n"
                  "pd.DataFrame({'label': y[5000:]}).to_csv('labels.csv', index=False)\n"),
        checks=(
            (PREDICT, "Model Accuracy", "Accuracy on the held-out rows", "labels.csv",
             "import pandas as pd\n\ndef accuracy(ground_truth):\n"
             "    pred = pd.read_csv('predictions.csv')['pred']\n"
             "    label = pd.read_csv(ground_truth)['label']\n"
             "    if len(pred) != len(label):\n        return 0.0\n"
             "    return float((pred.values == label.values).mean())\n", "lambda acc: acc >= 0.70"),
            (PREDICT, "Data Completeness", "One 0/1 prediction per held-out row", "labels.csv",
             "import pandas as pd\n\ndef complete(ground_truth):\n"
             "    pred = pd.read_csv('predictions.csv')['pred']\n"
             "    return len(pred) == len(pd.read_csv(ground_truth)) and set(pred.unique()) <= {0, 1}\n", None),
        )),
    StarterTask(
        key="anes_ideology_clusters", dataset="anes96",
        prompt=("Read data.csv (ANES 1996). Cluster the respondents into 3 groups with k-means on the columns "
                "selfLR, ClinLR and DoleLR (unstandardised). Write clusters.csv with one column 'cluster' (0, 1 or 2), "
                "one row per respondent in the original order."),
        solution=("import numpy as np\nimport pandas as pd\n"
                  "x = pd.read_csv('data.csv')[['selfLR', 'ClinLR', 'DoleLR']].to_numpy(float)\n"
                  "order = np.argsort(x[:, 0], kind='stable')\n"
                  "centres = x[order[[len(x) // 6, len(x) // 2, 5 * len(x) // 6]]]\n"
                  "for _ in range(100):\n"
                  "    labels = ((x[:, None, :] - centres[None]) ** 2).sum(axis=2).argmin(axis=1)\n"
                  "    new = np.array([x[labels == k].mean(axis=0) for k in range(3)])\n"
                  "    if np.allclose(new, centres):\n        break\n"
                  "    centres = new\n"
                  "pd.DataFrame({'cluster': labels}).to_csv('clusters.csv', index=False)\n"),
        checks=(
            (MINE, "Pattern Validity", "Three clusters, one label per respondent", "clusters.csv",
             "import pandas as pd\n\ndef three_clusters(ground_truth):\n"
             "    got = pd.read_csv('clusters.csv')['cluster']\n"
             "    return len(got) == len(pd.read_csv(ground_truth)) and got.nunique() == 3\n", None),
            (MINE, "Clustering Agreement", "Purity against the ground-truth clusters", "clusters.csv",
             "import pandas as pd\n\ndef purity(ground_truth):\n"
             "    got = pd.read_csv('clusters.csv')['cluster']\n"
             "    want = pd.read_csv(ground_truth)['cluster']\n"
             "    if len(got) != len(want):\n        return 0.0\n"
             "    table = pd.crosstab(got.values, want.values)\n"
             "    return float(table.max(axis=1).sum() / len(want))\n", "lambda p: p >= 0.9"),
        )),
    StarterTask(
        key="randhie_report", dataset="rand_hie",
        prompt=("Read data.csv (RAND HIE). Write report.json with the keys 'n_rows' (number of rows), 'mean_mdvis' "
                "(mean doctor visits, 3 decimals) and 'share_zero_visits' (share of rows with mdvis == 0, 3 "
                "decimals), and report.md: a short paragraph for a reader that states these three figures and "
                "mentions 'visits'."),
        solution=("import json\nimport pandas as pd\n"
                  "df = pd.read_csv('data.csv')\n"
                  "r = {'n_rows': int(len(df)), 'mean_mdvis': round(float(df['mdvis'].mean()), 3), "
                  "'share_zero_visits': round(float((df['mdvis'] == 0).mean()), 3)}\n"
                  "json.dump(r, open('report.json', 'w'), indent=1)\n"
                  "open('report.md', 'w').write(f\"The data hold {r['n_rows']} person-years. People made "
                  "{r['mean_mdvis']} doctor visits a year on average, and {r['share_zero_visits']:.1%} of the "
                  "person-years had no visits at all.\\n\")\n"),
        checks=(
            (REPORT, "Report Accuracy", "Figures match the ground truth", "report.json",
             "import json\n\ndef figures(ground_truth):\n"
             "    got, want = json.load(open('report.json')), json.load(open(ground_truth))\n"
             "    return got.get('n_rows') == want['n_rows'] and "
             "abs(float(got.get('mean_mdvis', -1)) - want['mean_mdvis']) <= 0.001 and "
             "abs(float(got.get('share_zero_visits', -1)) - want['share_zero_visits']) <= 0.001\n", None),
            (REPORT, "Report Completeness", "The written report states the figures", "report.json",
             "import json\n\ndef report_text(ground_truth):\n"
             "    text = open('report.md').read()\n    want = json.load(open(ground_truth))\n"
             "    return 'visits' in text.lower() and str(want['n_rows']) in text\n", None),
        )),
)


def _artifact(path: str, data: bytes) -> ProgrammaticArtifact:
    return ProgrammaticArtifact(path=path, sha256=hashlib.sha256(data).hexdigest(), size=len(data),
                                content_b64=base64.b64encode(data).decode("ascii"))


def starter_task_tree(datasets_dir: Path) -> Path:
    return Path(datasets_dir) / TREE


def build_starter_tasks(datasets_dir: Path) -> list[ProgrammaticTaskRelease]:
    """Run each reference solution in the sandbox on its starter dataset, gate every check on the artifacts it
    wrote, and write the DataSciBench tree under ``datasets_dir/programmatic`` (replacing it).

    Raises:
        RuntimeError: a reference solution failed, or a check did not pass the release gate.
    """
    from evaluation.programmatic.groundtruth import gate, run_solution
    from exports.datascibench import write_task

    root = starter_task_tree(datasets_dir)
    if root.exists():
        shutil.rmtree(root)
    out = []
    for spec in STARTER_TASKS:
        inputs = {"data.csv": (Path(datasets_dir) / spec.dataset / "data.csv").read_bytes()}
        run = run_solution(spec.solution, inputs, timeout_s=120)
        if not run.ok:
            raise RuntimeError(f"the reference solution of {spec.key} failed: {run.error}")
        artifacts = [_artifact(p, d) for p, d in sorted(run.files.items())]
        task = ProgrammaticTaskRelease(
            key=spec.key, prompt=spec.prompt, input_files=["data.csv"], data_source_type="1",
            artifacts=artifacts, extra={"prompt_json": {"dataset": spec.dataset, "input_files": ["data.csv"]},
                                        "reference_solution": spec.solution})
        checks = []
        for i, (ttype, function, metric, gt, code, rule) in enumerate(spec.checks, 1):
            check = ProgrammaticCheck(id=f"c{i}", task_type=ttype, function=function, metric=metric, code=code,
                                      rule=rule, ground_truth=gt)
            result = gate(task, check, run.files)
            if not result.released:
                raise RuntimeError(f"{spec.key} check {i} did not pass the release gate: {result.sentence}")
            evidence = result.model_dump(mode="json")
            for outcome in (evidence["on_accepted"], *evidence["on_wrong"]):
                outcome.pop("detail", None)
            checks.append(check.model_copy(update={"gate": evidence}))
        task = task.model_copy(update={"checks": checks})
        write_task(root, task, reference_name="test_gt.py.txt")  # datasets/ holds no Python files
        out.append(task)
    return out


def register_starter_tasks(*, session: Any, datasets_dir: Path) -> list[str]:
    """Register the starter tree's tasks with the starter datasets of the same names (first start only), with
    their artifacts and checks accepted and the gate's evidence they carry. Tasks whose dataset is not
    registered are skipped."""
    from sqlmodel import select

    from curation.models import Dataset
    from curation.services.curated import items_of
    from curation.services.programmatic import KIND, import_programmatic_tasks
    from exports.datascibench import read_tree

    root = starter_task_tree(datasets_dir)
    if not root.is_dir() or items_of(session=session, kind=KIND):
        return []
    names = []
    for read in read_tree(root):
        dataset_name = (read.task.extra.get("prompt_json") or {}).get("dataset")
        dataset = session.exec(select(Dataset).where(Dataset.name == dataset_name)).first()
        if dataset is None:
            continue
        import_programmatic_tasks(session=session, actor=None, dataset_id=dataset.id or 0, tasks=[read.task],
                                  accept=True, run_gate=False)
        names.append(read.task.key)
    return names


if __name__ == "__main__":  # pragma: no cover - maintenance entry point
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    for t in build_starter_tasks(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("datasets")):
        print(f"{t.key}: {len(t.artifacts)} artifacts, {len(t.checks)} checks released")

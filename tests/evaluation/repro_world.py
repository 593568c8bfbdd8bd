"""A small release (one dataset, one DiscoveryBench-style hypothesis task) and a scripted inspector for the
reproducibility tests: the inspector is the ``ScriptedLLM`` on 127.0.0.1, answering by what each prompt asks.

Scenarios ride in the workflow text (``[scenario: NAME]``) and reach the comparison through a comment the
scripted inspector writes into its own code (``# scenario: NAME``):

* ``good``: the inspector's code computes what the original does → reproducible;
* ``differ``: it computes something else and the comparison says so → not reproducible;
* ``crash``: its code raises → not reproducible (code written from the workflow did not run);
* ``attack``: its code starts a shell → inspector failed; ``loop``: it never ends → inspector failed;
* ``garbage``: the inspector answers prose, no code → inspector failed.
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from exports.hypotheses_part import HypothesesPart, HypothesisGold, HypothesisTaskRelease
from exports.schema import DatasetRelease, Release, ReleaseFile

DATA = "x,y\n1,2.1\n2,3.9\n3,6.2\n4,7.8\n5,10.1\n"
TASK_KEY = "real/test/toy/metadata_0/q0"
GOLD = "y rises with x: a positive linear relationship (slope about 2)."

CODES = {
    "good": "import pandas as pd\ndf = pd.read_csv('data.csv')\nprint('slope', round(df['y'].cov(df['x']) / "
            "df['x'].var(), 2))\n",
    "differ": "import pandas as pd\ndf = pd.read_csv('data.csv')\nprint('rows', len(df))\n",
    "crash": "import pandas as pd\ndf = pd.read_csv('data.csv')\nprint(df['no such column'].mean())\n",
    "attack": "import os\nos.system('cat /etc/passwd')\n",
    "loop": "while True:\n    pass\n",
}
#: for BLADE's hurricane data (tests/curation): the slope of deaths on the name's femininity
HURRICANE_GOOD = ("import pandas as pd\ndf = pd.read_csv('data.csv')\nprint('slope', round(df['alldeaths'].cov("
                  "df['masfem']) / df['masfem'].var(), 3))\n")
ORIGINAL = CODES["good"].replace("df = ", "frame = ").replace("df[", "frame[")


def release_folder(root: Path) -> tuple[Release, Path]:
    folder = root / "release"
    data = folder / "data" / "toy" / "data.csv"
    data.parent.mkdir(parents=True, exist_ok=True)
    data.write_text(DATA, encoding="utf-8")
    sha = hashlib.sha256(DATA.encode()).hexdigest()
    task = HypothesisTaskRelease(
        key=TASK_KEY, source="real", split="test", metadata_k=0, qid=0, question="How does y change with x?",
        data_files=["data.csv"], gold=HypothesisGold(hypothesis=GOLD, source="answer_key"))
    ds = DatasetRelease(
        name="toy", research_question="How does y change with x?", data_file="data/toy/data.csv", data_sha256=sha,
        num_rows=5, num_columns=2, dictionary=[{"column": "x", "description": "the dose"},
                                               {"column": "y", "description": "the response"}],
        files=[ReleaseFile(name="data.csv", path="data/toy/data.csv", sha256=sha, size=len(DATA),
                           columns=[{"name": "x", "description": "the dose"},
                                    {"name": "y", "description": "the response"}])],
    ).with_parts(hypotheses=HypothesesPart(tasks=[task]))
    return Release(version="1.0.0", created_at=datetime.now(UTC), app_version="test", datasets=[ds]), folder


def blade_analysis(workflow: str | None, *, transform: str | None = None) -> dict[str, Any]:
    a: dict[str, Any] = {
        "cvars": {"ivs": [{"description": "dose", "columns": ["x"]}], "dv": {"description": "response",
                                                                            "columns": ["y"]}, "controls": []},
        "transform_code": transform or "def transform(df):\n    return df\n",
        "m_code": "def model(df):\n    import statsmodels.formula.api as smf\n    return smf.ols('y ~ x', data=df)"
                  ".fit()\n"}
    if workflow is not None:
        a["workflow"] = workflow
    return a


def blade_file(*workflows: str | None) -> bytes:
    return json.dumps({"dataset_name": "toy", "analyses": [blade_analysis(w) for w in workflows]}).encode()


def hypotheses_file(answers: list[dict[str, Any]]) -> bytes:
    return json.dumps({"format": "forkpaths-hypotheses", "format_version": "1.0", "answers": answers}).encode()


def _scenario(text: str, pattern: str) -> str:
    m = re.search(pattern, text)
    return m.group(1) if m else "good"


def inspector_responder(request: dict[str, Any]) -> str:
    """The scripted inspector: one answer per kind of prompt, by the scenario the prompt carries."""
    system, user = request["messages"][0]["content"], request["messages"][-1]["content"]
    if "Rewrite an analysis" in system:
        scenario = _scenario(user, r"\[scenario: (\w+)\]")
        if scenario == "garbage":
            return "I would rather not write code today."
        code = HURRICANE_GOOD if scenario == "good" and "masfem" in user else CODES[scenario]
        return json.dumps({"code": f"# scenario: {scenario}\n" + code})
    if "State the conclusion" in system:
        return json.dumps({"conclusion": "y rises with x (slope about 2)."})
    if "Compare two analyses" in system:
        same = "# scenario: good" in user
        return json.dumps({"thoughts": "Both fit the slope of y on x: 2.0 each." if same else
                           "Analysis 1 reports a slope, analysis 2 a mean: different statistics.",
                           "same_statistics": same, "same_conclusion": same})
    if "Grade an answer" in system:
        if "JUDGE-ERROR" in user:
            return "Sorry, this content was filtered."
        return json.dumps({"correct": "positive" in user.split("Answer to grade:")[1],
                           "reason": "compared with the gold answer"})
    return "unexpected prompt"

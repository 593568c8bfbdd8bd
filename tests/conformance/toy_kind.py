"""A whole new kind, declared in a test: short questions over a CSV with a one-word gold answer, imported from a
folder (``questions.json`` and ``table.csv``). It uses only the shared machinery (release part with its Hugging Face
table, importer, agent hook, a background job, scoring) and so proves a kind is one declaration; the conformance
suite runs it beside the real kinds."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from evaluation.agents.base import ANSWERED, AgentTask, Submission, TaskAnswer, TaskFile
from evaluation.errors import EvaluationError
from evaluation.tasks import (
    CheckedFile,
    Column,
    ImportedDataset,
    ImportedFile,
    Importer,
    JobKind,
    LeaderboardSpec,
    ReleasePart,
    ScoredRun,
    ScoringContext,
    SubmissionCheckError,
    TaskKind,
)
from evaluation.tasks.parts import part_of
from exports.schema import Release

NAME = "toyquiz"
JOB = "toy_tally"  # its background job: counts the words it is given


class ToyQuestion(BaseModel):
    id: str
    text: str
    gold: str | None = None


class ToyPart(BaseModel):
    questions: list[ToyQuestion]


def _counts(part: ToyPart) -> dict[str, int]:
    return {"questions": len(part.questions), "with gold": sum(q.gold is not None for q in part.questions)}


def _blind(part: ToyPart) -> ToyPart:
    return ToyPart(questions=[q.model_copy(update={"gold": None}) for q in part.questions])


class ToyFolderError(EvaluationError):
    pass


def read_folder(path: Path) -> list[ImportedDataset]:
    qfile = path / "questions.json"
    try:
        raw = json.loads(qfile.read_text(encoding="utf-8"))
        part = ToyPart(questions=[ToyQuestion(**q) for q in raw])
    except FileNotFoundError:
        raise ToyFolderError(f"{qfile} is missing: a toy folder has questions.json and table.csv.") from None
    except (ValueError, TypeError, ValidationError) as exc:
        raise ToyFolderError(f"{qfile} is not a list of questions ({str(exc).splitlines()[0]}).") from None
    return [ImportedDataset(name=path.name.lower().replace(" ", "-"), title=f"Toy {path.name}",
                            research_question="Toy questions about a table", description="a toy dataset",
                            files=(ImportedFile("table.csv", path / "table.csv"),), main_file="table.csv",
                            part=part, licence="CC0", attribution="the test suite")]


def _questions(release: Release) -> dict[str, ToyQuestion]:
    out = {}
    for ds in release.datasets:
        part = part_of(ds, KIND)
        for q in part.questions if part else []:
            out[q.id] = q
    return out


def check_files(files: Sequence[tuple[str, bytes]], release: Release, *, max_items: int | None) -> list[CheckedFile]:
    if len(files) != 1:
        raise SubmissionCheckError("A toyquiz run takes exactly one answers file.")
    name, data = files[0]
    try:
        answers = json.loads(data)["answers"]
        assert isinstance(answers, dict)
    except (ValueError, KeyError, TypeError, AssertionError):
        raise SubmissionCheckError(f"{name} is not {{\"answers\": {{question id: answer}}}}.") from None
    unknown = sorted(set(answers) - set(_questions(release)))
    if unknown:
        raise SubmissionCheckError(f"{name} answers questions the release does not have: {', '.join(unknown)}.")
    return [CheckedFile(name, data, format="answers", items=len(answers))]


def score(ctx: ScoringContext) -> ScoredRun:
    answers = json.loads(ctx.files[0][1])["answers"]
    items = []
    for qid, q in _questions(ctx.release).items():
        given = answers.get(qid)
        status = "missing" if given is None else "invalid_answer" if not str(given).strip() else "scored"
        items.append({"id": qid, "status": status, "correct": status == "scored" and
                      str(given).strip().lower() == (q.gold or "").lower()})
    correct = sum(i["correct"] for i in items)
    ctx.progress(len(items), len(items), "scored")
    scores = {"toyquiz": {"accuracy": correct / len(items) if items else None, "items": len(items)}}
    return ScoredRun(result_name="toyquiz.json", result_bytes=json.dumps(items).encode(), scores=scores,
                     items=len(items))


def leaderboard_values(run: Any, dataset: str | None) -> dict[str, Any] | None:
    return {"toyquiz_accuracy": (run.scores_effective or {}).get("toyquiz", {}).get("accuracy")}


def summary_line(scores: Mapping[str, Any]) -> str:
    acc = scores.get("toyquiz", {}).get("accuracy")
    return f"toyquiz accuracy {acc:.3f}" if acc is not None else "toyquiz: nothing scored"


class _Agent:
    name = NAME
    label = "Toy questions (one task per question)"
    strategies = ("oneshot", "react")

    def tasks(self, release: Release, release_folder: Path, *, only: Sequence[str] | None = None) -> list[AgentTask]:
        out = []
        for ds in release.datasets:
            part = part_of(ds, KIND)
            if part is None or (only and ds.name not in only):
                continue
            table = release_folder / ds.data_file
            for q in part.questions:
                out.append(AgentTask(key=q.id, kind=NAME, title=f"{ds.name}: {q.id}", brief=q.text,
                                     data_path=table, dataset=ds.name,
                                     files=(TaskFile(name="table.csv", path=table),)))
        return out

    def answer_shape(self, task: AgentTask, *, workflow: bool) -> str:
        return json.dumps({"answer": "<one word>"})

    def validate(self, value: Any, task: AgentTask, *, workflow: bool) -> dict[str, Any]:
        if not isinstance(value, dict) or not isinstance(value.get("answer"), str):
            raise ValueError('the answer must be {"answer": "<one word>"}')
        return {"answer": value["answer"]}

    def submissions(self, release: Release, answers: Sequence[TaskAnswer], *,
                    source: dict[str, Any]) -> list[Submission]:
        out = []
        for r in sorted({a.replicate for a in answers}):
            body = {"answers": {a.task: a.answer["answer"] for a in answers
                                if a.replicate == r and a.status in ANSWERED and a.answer}}
            out.append(Submission(f"run {r}", [(f"toyquiz-run{r}.json", json.dumps(body).encode())]))
        return out


def run_tally_job(engine: Any, job: Any, control: Any, settings: Any) -> Any:
    """The toy kind's background job, run by the shared jobs (curation.services.background_jobs) by its name."""
    from curation.services.background_jobs import JobOutcome

    words = list(job.params.get("words", []))
    return JobOutcome(status="succeeded", message=f"{len(words)} word(s) tallied", result={"words": len(words)})


def _hf_rows(release: Release) -> dict[str, list[dict[str, Any]]]:
    from exports.hf.tables import DEFAULT_SPLIT

    return {DEFAULT_SPLIT: [{"dataset": d.name, "id": q.id, "text": q.text, "gold": q.gold}
                            for d in release.datasets if (p := part_of(d, KIND)) is not None for q in p.questions]}


def _hf_tables() -> tuple[Any, ...]:
    import pyarrow as pa

    from exports.hf.tables import DATASET_FIELD, HFConfig

    text = pa.string()
    return (HFConfig("toyquiz", "Toy questions", "a short question with its one-word gold", "no toy question", (),
                     {"dataset": DATASET_FIELD, "id": (text, "the question's id"), "text": (text, "the question"),
                      "gold": (text, "its one-word gold")}, _hf_rows),)


KIND = TaskKind(
    name=NAME, label="Toy questions (question id → one word)", item_noun="questions",
    leaderboard=LeaderboardSpec(role="companion", columns=(Column("toyquiz_accuracy", "toy accuracy"),)),
    check_files=check_files, score=score, leaderboard_values=leaderboard_values, summary_line=summary_line,
    order=900, view="tests.conformance.toy_view",
    release_part=ReleasePart(model=ToyPart, noun="toy questions", counts=_counts,
                             hash_input=lambda p: [(q.id, q.gold) for q in p.questions], blind=_blind,
                             work=("with gold",), hf_tables=_hf_tables),
    importer=Importer(source="a toy folder (questions.json and table.csv)", read=read_folder),
    agent=_Agent(),
    jobs=(JobKind(JOB, f"{__name__}:run_tally_job"),),
)


def write_folder(root: Path, name: str = "Toy One", questions: list[dict[str, Any]] | None = None) -> Path:
    """A toy folder to import: a small table and its questions with gold."""
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "table.csv").write_text("x,y\n1,2\n3,4\n", encoding="utf-8")
    qs = questions if questions is not None else [{"id": "t1", "text": "Colour of the sky?", "gold": "blue"},
                                                  {"id": "t2", "text": "Opposite of up?", "gold": "down"}]
    (folder / "questions.json").write_text(json.dumps(qs), encoding="utf-8")
    return folder

"""The one small protocol every kind of task implements, and what passes between a kind and the services.

A kind declares (conventions.md, "A kind of task is one module in a registry"):

* its submission format and validation (:meth:`TaskKind.check_files`);
* how its items are scored and the result file it writes (:meth:`TaskKind.score`);
* how item results aggregate into the scores stored on the run (metrics with CIs, inside ``score``), and which
  of them the leaderboard shows (:meth:`TaskKind.leaderboard_values`, :attr:`TaskKind.leaderboard`);
* what it adds to the leaderboard and run pages, as data (:class:`Column`, :class:`LeaderboardSpec`, and the name
  of the page component that draws its drill-down, :attr:`TaskKind.view`);
* the kinds of decision item it brings to curation and what differs for them (:class:`ItemKind`, optional).

The services, the pages and the CLI look a kind up by name (:func:`evaluation.tasks.task_kind`) and never
branch on a kind's name. Nothing here touches a database or a UI.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import BaseModel

from evaluation.errors import EvaluationError
from exports.parts import ReleasePart  # the release format owns it; a kind declares one
from exports.schema import Release

if TYPE_CHECKING:  # the registry lists kinds without the engine (judges, scoring: pandas, networkx)
    from evaluation.judges.base import Judge
    from evaluation.scoring import RunBudget

__all__ = [
    "KIND_NAME_MAX",
    "AIReprAccuracy",
    "CheckedFile",
    "Column",
    "CuratedShape",
    "FacetJudging",
    "FanOutParts",
    "ImportedDataset",
    "ImportedFile",
    "Importer",
    "ItemKind",
    "JOB_KIND_MAX",
    "JobKind",
    "KindJudge",
    "LeaderboardSpec",
    "ReleasePart",
    "RunView",
    "ScoredRun",
    "ScoringContext",
    "ScoringLimits",
    "SubmissionCheckError",
    "TaskKind",
    "VERDICT",
    "VOTE_ANSWERS",
    "VoteQuestion",
    "count_of",
    "fmt_score",
    "kind_problems",
    "score_in_process",
]


def count_of(n: int, noun: str) -> str:
    """``n`` and a kind's plural item noun, singular for one ("1 query", "57 queries", "1 analysis",
    "2 task folders", "1 answers file")."""
    if n != 1:
        return f"{n} {noun}"
    head, _, last = noun.rpartition(" ")
    for plural, single in (("ses", "sis"), ("ies", "y"), ("s", "")):
        if last.endswith(plural) and len(last) > len(plural) + 1:
            last = last[: -len(plural)] + single
            break
    return f"1 {head + ' ' if head else ''}{last}"


def fmt_score(x: Any) -> str:
    """A score for a terminal line: three decimals, or an em dash when undefined."""
    return "—" if x is None else f"{x:.3f}"


class SubmissionCheckError(EvaluationError):
    """Submission files a kind cannot score against the release (which file, what is wrong, what to do)."""


@dataclass(frozen=True)
class ScoringLimits:
    """What bounds a scoring run (settings ``FORKPATHS_SCORE_ANALYSIS_TIMEOUT_S``, ``_SCORE_RUN_BUDGET_S``,
    ``_MAX_ANALYSES_PER_SUBMISSION`` and ``_SANDBOX_MEMORY_MB``)."""

    analysis_timeout_s: float = 60.0
    run_budget_s: float = 7200.0
    max_analyses: int = 2000
    memory_mb: int = 4096

    @classmethod
    def from_settings(cls, settings: Any) -> ScoringLimits:
        return cls(analysis_timeout_s=settings.score_analysis_timeout_s, run_budget_s=settings.score_run_budget_s,
                   max_analyses=settings.max_analyses_per_submission, memory_mb=settings.sandbox_memory_mb)

    def describe(self) -> dict[str, Any]:
        return {"analysis_timeout_s": self.analysis_timeout_s, "run_budget_s": self.run_budget_s,
                "max_analyses": self.max_analyses, "memory_mb": self.memory_mb}


@dataclass(frozen=True)
class CheckedFile:
    """One submission file that passed its kind's checks, and what the run records about it."""

    name: str
    data: bytes
    dataset: str | None = None  # the release dataset it is for; None: the whole release
    format: str = ""
    items: int | None = None  # how many items it holds (None: not counted per file)


@dataclass
class ScoringContext:
    """Everything a kind needs to score a run, read by the service and handed over (no database here)."""

    release: Release
    release_folder: Path
    files: Sequence[tuple[str, bytes]]
    judge: Callable[[], Judge]  # built on demand: a kind that needs no judge never builds one
    mode: str
    k: int
    ground_truth_hash: str
    limits: ScoringLimits
    budget: RunBudget
    gt_cache: Path | None = None
    progress: Callable[[int, int, str], None] = lambda done, total, stage: None
    # the LLM client of the model recorded at registration, built on demand, for a kind whose model is not a
    # Judge (it declares ``llm_role``, e.g. the reproducibility inspector); None where no LLM is configured
    llm: Callable[[], Any] | None = None


@dataclass(frozen=True)
class ScoredRun:
    """What a kind gives back: its result file, the scores stored on the run, and the run's closing note."""

    result_name: str
    result_bytes: bytes
    scores: dict[str, Any]
    items: int
    message: str = ""
    run_fields: dict[str, Any] = field(default_factory=dict)  # provenance known only after scoring


@dataclass(frozen=True)
class Column:
    """One column a kind contributes to the leaderboard, as data a page component renders.

    ``key`` is the field of the leaderboard row; ``format`` says how to show it: ``ci`` (a point with its
    interval in ``key.low`` / ``key.high``), ``number`` (two decimals), ``count`` or ``text``."""

    key: str
    label: str
    format: Literal["ci", "number", "count", "text"] = "number"
    help: str = ""


@dataclass(frozen=True)
class LeaderboardSpec:
    """How a kind sits on the leaderboard.

    ``ranked``: each of its runs is a row, sorted by ``sort_key`` (best first). ``companion``: its latest run per
    (agent, model) on the release adds ``columns`` to the ranked rows of the same agent and model."""

    role: Literal["ranked", "companion"]
    columns: tuple[Column, ...] = ()
    sort_key: str = ""


#: The answers a review question offers unless it says otherwise.
VOTE_ANSWERS = ("yes", "no", "unsure")
#: The key of every item kind's overall question (yes: justifiable; a "no" needs a reason).
VERDICT = "justifiable"


@dataclass(frozen=True)
class VoteQuestion:
    """One question analysts answer about a decision item in stage 2 (its ``key`` is what a vote records).
    ``skipped_unless``: the question whose "no" skips this one."""

    key: str
    text: str
    help: str = ""
    skipped_unless: str | None = None
    answers: tuple[str, ...] = VOTE_ANSWERS


@dataclass(frozen=True)
class ItemKind:
    """A kind of decision item a task kind brings to curation: the ``kind`` of its alternatives, of its items in
    the ground truth and on a meeting's agenda. The curation services and pages ask the registry
    (:func:`evaluation.tasks.item_kind`) what differs for it instead of naming it.

    ``in_decision_graph``: one of BLADE's decisions (a conceptual variable or a transform), read from BLADE's
    payloads by the shared review queue and ground truth and placed in the graph of transforms; the items of
    other kinds are built, listed and reviewed by their kind's own services. ``subject`` and ``rationale`` are
    what a meeting card calls the item's ``concept`` and ``rationale``; ``agenda_view`` names the page component
    (``annotate_app/components/kinds/<view>.py``, its ``agenda_item``) that draws the item on a meeting's agenda
    instead of the decision card. ``step_of_its_path``: in the decision graph, the item is itself the last step
    of its ``path_ids`` (a transform), not what the path feeds (a variable).

    Its stage-2 review: ``questions`` (the last is the :data:`VERDICT`), ``unjustifiable`` (what a "no" verdict
    says, in the sentence asking for its reason), and what votes about it name as their target besides an
    alternative: ``stage1_table``, the table of the rows analysts write for it in stage 1 (each belongs to an
    analysis; the target kind is then the item kind's name), or ``candidate_target``, the target kind of its
    candidates in the generic curated tables (a candidate whose ``role`` is the item kind's name)."""

    name: str
    in_decision_graph: bool = False
    subject: str = "Concept"
    rationale: str = "Rationale"
    agenda_view: str | None = None
    step_of_its_path: bool = False
    questions: tuple[VoteQuestion, ...] = ()
    unjustifiable: str = "this decision is unjustifiable"
    stage1_table: str | None = None
    candidate_target: str | None = None


@dataclass(frozen=True)
class CuratedShape:
    """What a kind keeps in the generic curated tables (``curated_item`` and ``curated_candidate``, see
    :mod:`curation.models.curated`): the pydantic model of its items' payload and, by role, of its candidates'
    payloads (``{"check": CheckPayload, ...}``). The curation service validates every write through them and
    refuses a payload that does not fit with a sentence naming the field, so a kind that curates items needs no
    table and no migration of its own."""

    item: type[BaseModel]
    candidates: Mapping[str, type[BaseModel]] = field(default_factory=dict)


class RunView(Protocol):
    """The parts of a stored run a kind reads to fill its leaderboard values."""

    scores_effective: dict[str, Any] | None
    transform_matcher: dict[str, Any]


@dataclass(frozen=True)
class FanOutParts:
    """A kind whose runs split into parts that helpers score in parallel (one per dataset file or per query):
    how many, their labels (None: the run's files name them), one part's scoring (its text result) and the
    combination of every part's result into the run's scores."""

    count: Callable[[ScoringContext], int]
    score_part: Callable[..., str]
    combine: Callable[[ScoringContext, Sequence[str]], ScoredRun]
    labels: Callable[[ScoringContext], list[str]] | None = None


@dataclass(frozen=True)
class ImportedFile:
    """One file of an imported dataset: its name in the dataset's folder (plain names, ``/`` between folders),
    where it is read from, what it is (``data``, ``metadata`` or ``other``) and its format (``csv`` or other)."""

    name: str
    path: Path
    role: str = "data"
    format: str = "csv"


@dataclass(frozen=True)
class ImportedDataset:
    """A dataset an importer read from a benchmark's own layout: its files and the kind's part of it (the items
    and their gold, as the kind's :attr:`ReleasePart.model`). ``main_file`` is its main table; ``extra`` what the
    source says about it that forkpaths does not model (kept losslessly); ``licence`` and ``attribution`` go with
    every release that carries it."""

    name: str
    title: str
    research_question: str
    description: str
    files: tuple[ImportedFile, ...]
    main_file: str
    part: BaseModel
    dictionary: tuple[dict[str, Any], ...] = ()
    licence: str = ""
    attribution: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Importer:
    """A kind whose items come from a benchmark's files, with their gold: ``forkpaths import-<kind> PATH`` (and
    the Datasets page) read ``PATH`` with ``read`` and register each dataset with its part.

    * ``source``: what to point it at, for a person ("a QRData folder: QRData.json and data/");
    * ``read(path)``: the datasets, everything checked; raises an :class:`~evaluation.errors.EvaluationError`
      whose sentence names the file (and record) that is wrong. Nothing is stored by it.
    """

    source: str
    read: Callable[[Path], list[ImportedDataset]]


@dataclass(frozen=True)
class FacetJudging:
    """A kind whose judge's verdict has facets that evaluators may label (agree or correct), as DiscoveryBench's
    hypothesis matching has: how to read a run's result, apply the labels so far, find an item, check a label's
    target, read and name one facet's value, and what its judge-validation card says while no expert labelled one
    (the card itself: ``curation.services.facet_judgements.facet_agreement`` over the kind's facets)."""

    read_result: Callable[[bytes | str], Any]
    effective: Callable[[Any, Sequence[Any]], Any]
    find_item: Callable[[Any, str], Any]
    check_facet: Callable[[Any, Any], str]
    facet_value: Callable[[Any, str, str], Any]
    facet_label: Callable[[str, Any], str]
    # what the judge-validation card of the kind (the judge's agreement with the experts, per facet, on the
    # leaderboard and the Judge validation page) says before any expert has labelled a facet
    card_empty: str = ""


@dataclass(frozen=True)
class JobKind:
    """A kind of background job a task kind brings to curation (an LLM generation of its items): ``name`` is the
    job's kind as recorded (``BackgroundJob.kind``, at most 32 characters), ``runner`` the ``"module:function"``
    that runs one (a curation service: named here, imported by the jobs when a job of it runs, since evaluation
    never imports curation)."""

    name: str
    runner: str


#: A background job's kind is stored in a column of ``varchar(32)``.
JOB_KIND_MAX = 32


@dataclass(frozen=True)
class KindJudge:
    """A judge a kind brings (beside the shared ones): the registry of kinds registers it with the judges
    (:func:`evaluation.judges.make_judge` builds it by ``name``) when it registers the kind. ``build(**params)``
    makes one; one that ``needs_llm`` is built with ``client=`` an LLM client and needs an endpoint configured."""

    name: str
    build: Callable[..., Judge]
    needs_llm: bool = False


@dataclass(frozen=True)
class AIReprAccuracy:
    """A benchmark AIRepr evaluates on: an imported AIRepr run of it (``forkpaths import-airepr``) gets the accuracy
    of its final answers against the release's gold, scored by this kind's own rules (not by AIRepr's LLM
    accuracy judge, whose published figure is kept beside it).

    * ``dataset``: AIRepr's name for the benchmark in its result files' names (``{model}_{dataset}_{agent}``),
      compared without case;
    * ``score(release, release_folder, answers)``: the accuracy of ``answers`` (AIRepr's final answers by sample
      index, which is the kind's question id) over the questions the release holds, as ``{"point", "ci_low",
      "ci_high", "questions", "not_in_release": [...]}``; None when the release holds none of them.
    """

    dataset: str
    score: Callable[[Release, Path, Mapping[str, str]], dict[str, Any] | None]


def score_in_process(kind: TaskKind, release: Release, release_folder: Path,
                     files: Sequence[tuple[str, bytes]]) -> ScoredRun:
    """``files`` checked and scored by ``kind`` in this process (a kind that needs no judge and no sandbox), as an
    upload would be."""
    from evaluation.judges import make_judge
    from evaluation.scoring import RunBudget

    kind.check_files(files, release, max_items=None)
    limits = ScoringLimits()
    return kind.score(ScoringContext(
        release=release, release_folder=release_folder, files=files, judge=lambda: make_judge("offline"),
        mode="default", k=10, ground_truth_hash="", limits=limits,
        budget=RunBudget(analysis_s=limits.analysis_timeout_s, total_s=limits.run_budget_s)))


#: A kind's name is stored in ``kind`` columns of ``varchar(16)``.
KIND_NAME_MAX = 16


@dataclass(frozen=True)
class TaskKind:
    """One kind of task: one module under ``evaluation/tasks/`` that defines ``KIND = TaskKind(...)``; the registry
    finds it (a scan of the package, and the ``forkpaths.kinds`` entry-point group for kinds of other packages).

    Required: its name, how a person picks it, what its runs count, its leaderboard role and the four functions
    that check, score, summarise and place a run. Everything else is an optional capability with a typed default
    (never read with ``getattr``): shared code asks for it and does nothing where a kind declares none.
    """

    name: str
    label: str  # how a person picks it ("Analyses (BLADE single- or multi-run file, one per dataset)")
    item_noun: str  # what its run counts ("analyses", "answers file")
    leaderboard: LeaderboardSpec
    check_files: Callable[..., list[CheckedFile]]  # (files, release, *, max_items) -> checked; raises with a sentence
    score: Callable[[ScoringContext], ScoredRun]  # may raise anything (the service records it on the run)
    leaderboard_values: Callable[[RunView, str | None], dict[str, Any] | None]
    summary_line: Callable[[Mapping[str, Any]], str]  # one line for a terminal, from a run's stored scores
    uses_judge: bool = False  # its runs record and build a judge
    accepts_overrides: bool = False  # its items can be overridden by an evaluator, and its runs compared pairwise
    view: str | None = None  # the page component that draws a run's drill-down (annotate_app/components/kinds/)
    # the page component that draws its curation stages (Annotate, Review, Consensus) for the datasets it claims
    # (its ``claims(session, dataset)``; the one whose ``DEFAULT`` is true curates every other dataset)
    stages: str | None = None
    order: int = 100  # where it stands among the kinds (the first ranked kind is the default); ties: by name
    # --- optional capabilities
    release_part: ReleasePart | None = None  # what it keeps in a release's datasets
    item_kinds: tuple[ItemKind, ...] = ()  # the kinds of decision item it owns (each name owned by one kind)
    # the name of the model it asks (e.g. "inspector"): registering a run records that model (the configured one,
    # or the one the evaluator names) in the run's ``judge`` field, and scoring hands the kind its client as
    # ``ScoringContext.llm``
    llm_role: str = ""
    modes: tuple[str, ...] = ()  # scoring modes of its own (empty: the shared ones); a form offers a choice of two or more
    uses_k: bool = False  # its scores depend on k (coverage@k): a form asks for it
    judges: tuple[str, ...] = ()  # judges of its own (only these may score it)
    own_judges: tuple[KindJudge, ...] = ()  # the judges it brings (each one of ``judges``), registered with it
    default_judge: str = "offline"
    facets: tuple[str, ...] = ()  # the facets of its judge's verdict that evaluators may label
    facet_judging: FacetJudging | None = None  # how its facets are read and labelled (with ``facets``)
    min_runs_per_task: tuple[int, str] | None = None  # (runs, why): advice for agent runs
    submission_schema: Path | None = None  # the published JSON schema of its submission (forkpaths score-schema)
    fan_out: FanOutParts | None = None
    # how many items scoring the checked files will count (the run's progress total and what its closing note
    # says), when that is not the sum of the files' items (a kind that scores every item of the release,
    # answered or not); None: the sum
    planned_items: Callable[[Sequence[CheckedFile], Release], int] | None = None
    importer: Importer | None = None  # its items come from a benchmark's files (forkpaths import-<kind>)
    airepr: AIReprAccuracy | None = None  # AIRepr evaluates on it: imported AIRepr runs get its accuracy
    agent: Any = None  # its agent hook (an evaluation.agents.AgentKind): agents can answer its tasks
    # the module that curates its items in the database (a dotted name; it defines CURATION, a
    # curation.services.kind_curation.KindCuration): the release builder and the meetings ask it for its part
    curation: str | None = None
    curated: CuratedShape | None = None  # its curated items live in the generic curated tables, with these payloads
    jobs: tuple[JobKind, ...] = ()  # the kinds of background job its curation runs (curation.services.background_jobs)
    # the modules of its sandbox jobs (``@sandbox_job``): the sandbox imports them in its template and runs their
    # jobs (evaluation.sandbox.registry); a job of a module no kind declares is refused
    engine_modules: tuple[str, ...] = ()
    # what a judge-validation card calls the judgements of its judges that experts label, by the kind of label
    # recorded (a decision kind, a facet: {"context": "HMS context matching"})
    judged: Mapping[str, str] = field(default_factory=dict)


def kind_problems(kind: TaskKind) -> list[str]:
    """What is wrong with a kind's declaration, as sentences (empty: nothing)."""
    problems = []
    if not isinstance(kind.name, str) or not kind.name or not kind.name.replace("_", "").isalnum() \
            or not kind.name[0].isalpha() or kind.name != kind.name.lower():
        problems.append(f"its name {kind.name!r} must be lower-case letters, digits and underscores, starting with "
                        "a letter")
    elif len(kind.name) > KIND_NAME_MAX:
        problems.append(f"its name {kind.name!r} has {len(kind.name)} characters; the database keeps at most "
                        f"{KIND_NAME_MAX} in a run's kind")
    for item in kind.item_kinds:
        if len(item.name) > KIND_NAME_MAX:
            problems.append(f"its decision-item kind {item.name!r} is longer than {KIND_NAME_MAX} characters")
    if kind.release_part is not None and not (isinstance(kind.release_part.model, type)
                                              and issubclass(kind.release_part.model, BaseModel)):
        problems.append("its release part's model is not a pydantic model")
    if kind.curated is not None:
        models = [kind.curated.item, *kind.curated.candidates.values()]
        if not all(isinstance(m, type) and issubclass(m, BaseModel) for m in models):
            problems.append("its curated payloads are not all pydantic models")
        for role in kind.curated.candidates:
            if not role or len(role) > KIND_NAME_MAX:
                problems.append(f"its curated candidate role {role!r} must have 1 to {KIND_NAME_MAX} characters")
    if bool(kind.facets) != (kind.facet_judging is not None):
        problems.append("it declares facets without the functions that judge them, or the other way round")
    for judge in kind.own_judges:
        if judge.name not in kind.judges:
            problems.append(f"it brings the judge {judge.name!r} without naming it among its judges")
    for job in kind.jobs:
        module, sep, function = job.runner.partition(":")
        if not job.name or len(job.name) > JOB_KIND_MAX:
            problems.append(f"its background job kind {job.name!r} must have 1 to {JOB_KIND_MAX} characters")
        if not (module and sep and function):
            problems.append(f"its background job {job.name!r} runs {job.runner!r}, which is not 'module:function'")
    for module in kind.engine_modules:
        if not all(part.isidentifier() for part in module.split(".")):
            problems.append(f"its engine module {module!r} is not a dotted module name")
    if kind.importer is not None and kind.release_part is None:
        problems.append("it imports datasets but keeps no release part to hold their items")
    if kind.submission_schema is not None and not Path(kind.submission_schema).is_file():
        problems.append(f"its submission schema {kind.submission_schema} does not exist")
    return problems

"""The native release on disk: round trips, golden files, tamper detection, immutability, atomic writes and the
changelog.

Regenerate the golden files with ``FORKPATHS_UPDATE_GOLDEN=1 .venv/bin/pytest tests/exports/test_native.py``
and review the diff before committing it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from exports.changelog import ReleaseDiff, diff_releases, render_changelog
from exports.errors import (
    FormatError,
    ReleaseExistsError,
    ReleaseIntegrityError,
    UnsupportedFormatVersionError,
)
from exports.manifest import MANIFEST_NAME, parse_manifest, render_manifest
from exports.mcq_part import MCQ, MCQOption, MCQPart
from exports.native import (
    STAGES,
    cleanup_partials,
    dump_release_json,
    list_releases,
    parse_release_json,
    read_release,
    release_data_path,
    verify_release,
    write_release,
)
from exports.schema import (
    Alternative,
    Annotator,
    ConsensusRecord,
    DatasetRelease,
    LLMProvenance,
    Release,
    ReleaseBranch,
    ReleaseColumn,
    ReleaseMapping,
    ReleaseModel,
    ReleaseTransform,
    ReleaseVariable,
    Vote,
)

PROJECT_ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).parent / "golden" / "native"
UPDATE_GOLDEN = os.environ.get("FORKPATHS_UPDATE_GOLDEN") == "1"

T0 = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
T1 = datetime(2025, 3, 4, 5, 6, 7, tzinfo=UTC)

CSV: dict[str, bytes] = {
    "boxes": "x,y,group\n1,2.5,a\n2,3.5,b\n3,,é\n".encode(),
    "cars": b"mpg,hp\n21,110\n22.8,93\n",
    "dice": b"face\n1\n6\n",
}


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --- a small but complete release -------------------------------------------------------------------------


def _dataset(name: str, *, question: str, rows: int, cols: int) -> DatasetRelease:
    """A dataset in which every list is populated with representative items."""
    p = name[0].upper()  # id prefix, so ids differ between datasets
    yes_vote = Vote(
        target_kind="variable",
        target_id=f"{p}V1",
        annotator="A2",
        question="justifiable",
        answer="yes",
        explanation="standard control",
        created_at=T0,
    )
    return DatasetRelease(
        name=name,
        title=f"The {name} data",
        research_question=question,
        description=f"Made-up {name} for the release tests.",
        dictionary=[{"column": "x", "description": "the x", "dtype": "number"}],
        info={
            "research_questions": [question],
            "data_desc": {"dataset_description": "made up", "license": "CC-BY-4.0", "num_rows": rows},
            "citation": f"Doe (2024), {name}",
            "data_path": "data.csv",
        },
        data_file=f"data/{name}/data.csv",
        data_sha256=_sha(CSV[name]),
        num_rows=rows,
        num_columns=cols,
        annotators=[
            Annotator(id="A1"),
            Annotator(id="A2"),
            Annotator(id="B1", kind="imported", label="BLADE experts (imported)"),
        ],
        variables=[
            ReleaseVariable(
                id=f"{p}V1",
                annotator="A1",
                variable_type="IV",
                concept="treatment intensity",
                rationale="the question asks about it",
                columns=[
                    ReleaseColumn(name="x"),
                    ReleaseColumn(name="x_log", origin="derived", producer_id=f"{p}T1", rationale="skew"),
                ],
                tags=["core"],
                extra={"blade": {"legacy_id": 3, "flags": [1, 2.5, None, True], "nested": {"k": "ü"}}},
            ),
            ReleaseVariable(
                id=f"{p}V2",
                annotator="B1",
                variable_type="Control",
                concept="group",
                interaction=True,
                moderates=f"{p}V1",
                random_effect=True,
            ),
            ReleaseVariable(id=f"{p}V3", annotator="A2", variable_type="DV", concept="outcome"),
        ],
        transforms=[
            ReleaseTransform(
                id=f"{p}T1",
                annotator="A1",
                spec_name="log x",
                specification="log-transform x",
                verbs=["derive"],
                code="df['x_log'] = np.log(df['x'])",
                rationale="skewed",
                mapping=[ReleaseMapping(inputs=["x"], output="x_log")],
                branches=[ReleaseBranch(dependencies=[f"{p}V1"], condition="x > 0")],
                tags=["log"],
                extra={"legacy": {"transform_spec_json": '{"a": 1}'}},
            )
        ],
        models=[
            ReleaseModel(
                id=f"{p}M1",
                annotator="A1",
                family="ols",
                specification="y ~ x_log + group",
                spec_name="OLS",
                code="smf.ols('y ~ x_log + group', df).fit()",
                columns=[ReleaseColumn(name="y")],
                variable_ids=[f"{p}V1", f"{p}V2"],
                transform_ids=[f"{p}T1"],
                extra={"weights": None},
            )
        ],
        alternatives=[
            Alternative(
                id=f"{p}ALT1",
                kind="variable",
                source="llm",
                seed_id=f"{p}V1",
                llm=LLMProvenance(
                    model="qwen2.5-7b-instruct",
                    base_url="http://127.0.0.1:8000/v1",
                    prompt_template="alternatives@3",
                    prompt_sha256="ab" * 32,
                    temperature=0.0,
                    created_at=T0,
                ),
                payload={"variable_type": "IV", "concept": "treatment dose", "columns": [{"name": "x"}]},
            ),
            Alternative(
                id=f"{p}ALT2",
                kind="transform",
                source="peer",
                proposed_by="A2",
                payload={"spec_name": "winsorise x"},
                extra={"note": "from the meeting"},
            ),
        ],
        votes=[
            yes_vote,
            Vote(
                target_kind="alternative",
                target_id=f"{p}ALT1",
                annotator="A1",
                question="can_derive_from_data",
                answer=None,
                skipped_reason="column meaning unclear",
                created_at=T0,
            ),
            Vote(
                target_kind="model",
                target_id=f"{p}M1",
                annotator="A2",
                question="is_suited_to_cv",
                answer="no",
            ),
        ],
        consensus=[
            ConsensusRecord(
                target_kind="variable",
                target_id=f"{p}V1",
                status="justifiable",
                rule="unanimous",
                decided_by="A1",
                decided_at=T0,
                note="all agree",
                votes=[yes_vote.model_copy()],
            )
        ],
        extra={"blade": {"annotations_rows": 12, "unknown_keys": {"k": [1, {"deep": None}]}}},
    ).with_parts(mcq=MCQPart(items=[
            MCQ(
                id=f"{p}Q1",
                kind="variable",
                mc_type="select_pos",
                options=[
                    MCQOption(text="treatment intensity", source_kind="variable", source_ids=[f"{p}V1"]),
                    MCQOption(text="shoe size", is_llm_generated=True, negative_reason="wrong_variable"),
                    MCQOption(
                        text="group",
                        source_kind="alternative",
                        source_ids=[f"{p}ALT1"],
                        negative_reason="voted_unjustifiable",
                        extra={"legacy": {"idx": 2}},
                    ),
                ],
                correct_index=0,
                extra={"blade": {"mc_id": 7}},
            )
        ]))


def build_release(version: str = "1.0.0") -> Release:
    """Release 1.0.0: two complete datasets."""
    return Release(
        version=version,
        created_at=T0,
        app_version="0.1.0",
        notes="Pilot release for the tests.",
        licence="Annotations: CC-BY-4.0.",
        attribution="The forkpaths test team.",
        datasets=[
            _dataset("boxes", question="Do bigger boxes weigh more?", rows=3, cols=3),
            _dataset("cars", question="Does horsepower lower mileage?", rows=2, cols=2),
        ],
    )


def build_next_release(first: Release) -> Release:
    """Release 1.1.0 against ``first``: boxes changed item by item, cars removed, dice added."""
    nxt = first.model_copy(deep=True)
    nxt.version, nxt.previous_version, nxt.created_at = "1.1.0", first.version, T1
    nxt.notes = "Second round of review."
    nxt.licence = "Annotations: CC-BY-SA-4.0."
    boxes = nxt.datasets[0]
    boxes.research_question = "Do bigger boxes weigh more, all else equal?"
    # variables: BV1 changed (rationale and a legacy key), BV2 removed, BV4 added
    boxes.variables[0].rationale = "the question names it"
    boxes.variables[0].extra["blade"]["legacy_id"] = 4
    del boxes.variables[1]
    boxes.variables.append(
        ReleaseVariable(id="BV4", annotator="A2", variable_type="Control", concept="season")
    )
    # votes: the yes vote changes its answer, the model vote is removed, a vote on BV4 is added
    boxes.votes[0].answer = "no"
    boxes.votes[0].explanation = "on reflection"
    del boxes.votes[2]
    boxes.votes.append(
        Vote(target_kind="variable", target_id="BV4", annotator="A1", question="justifiable", answer="unsure")
    )
    # MCQs: BQ1 changes its correct answer, BQ2 is added
    mcqs = [q.model_copy(deep=True) for q in MCQPart.of(boxes).items]
    mcqs[0].correct_index = 1
    mcqs.append(
        MCQ(
            id="BQ2",
            kind="transform",
            mc_type="select_neg",
            concept="treatment intensity",
            options=[MCQOption(text="np.log(x)"), MCQOption(text="x ** 2")],
            correct_index=1,
        )
    )
    nxt.datasets[0] = boxes = boxes.with_parts(mcq=MCQPart(items=mcqs))
    del nxt.datasets[1]
    nxt.datasets.append(_dataset("dice", question="Is the die fair?", rows=2, cols=1))
    return nxt


def data_files_in(folder: Path, release: Release) -> dict[str, Path]:
    """Write each dataset's CSV into ``folder`` and map dataset name → path, as curation would pass them."""
    files = {}
    for ds in release.datasets:
        path = folder / "src" / ds.name / "data.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(CSV[ds.name])
        files[ds.name] = path
    return files


@pytest.fixture
def first() -> Release:
    return build_release()


@pytest.fixture
def written(tmp_path: Path, first: Release) -> Path:
    """Release 1.0.0 written to ``tmp_path/releases``; returns the release folder."""
    return write_release(first, data_files_in(tmp_path, first), tmp_path / "releases")


def _snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _rewrite_manifest(release_dir: Path) -> None:
    """Recompute MANIFEST as a careless editor would, so that only the deeper checks can notice."""
    digests = {
        p.relative_to(release_dir).as_posix(): _sha(p.read_bytes())
        for p in release_dir.rglob("*")
        if p.is_file() and p.name != MANIFEST_NAME
    }
    (release_dir / MANIFEST_NAME).write_text(render_manifest(digests), encoding="utf-8")


# --- round trips ------------------------------------------------------------------------------------------


def test_the_builder_populates_every_list(first: Release) -> None:
    for ds in first.datasets:
        for field in (
            "annotators",
            "variables",
            "transforms",
            "models",
            "alternatives",
            "votes",
            "consensus",
            "dictionary",
        ):
            assert getattr(ds, field), (ds.name, field)
        assert MCQPart.of(ds).items, ds.name
        assert any(v.answer is None for v in ds.votes)
        assert any(a.llm is not None for a in ds.alternatives)
        assert ds.consensus[0].votes


def test_write_then_read_gives_the_same_release(written: Path, first: Release) -> None:
    assert written.name == "1.0.0"
    assert read_release(written) == first
    assert verify_release(written) == []


def test_the_zip_reads_the_same(written: Path, first: Release) -> None:
    archive = written.parent / "1.0.0.zip"
    assert read_release(archive) == first
    assert verify_release(archive) == []
    with zipfile.ZipFile(archive) as zf:
        names = zf.namelist()
    assert all(n.startswith("1.0.0/") for n in names)
    assert sorted(n.removeprefix("1.0.0/") for n in names) == sorted(_snapshot(written))


def test_a_release_with_a_previous_one_round_trips(tmp_path: Path, first: Release) -> None:
    nxt = build_next_release(first)
    root = tmp_path / "releases"
    write_release(first, data_files_in(tmp_path, first), root)
    folder = write_release(nxt, data_files_in(tmp_path, nxt), root, previous=first)
    assert read_release(folder) == nxt
    assert read_release(root / "1.1.0.zip") == nxt
    assert list_releases(root) == ["1.0.0", "1.1.0"]


def test_layout_of_a_release_folder(written: Path, first: Release) -> None:
    assert sorted(_snapshot(written)) == [
        "CHANGELOG.md",
        "MANIFEST",
        "README.md",
        "data/boxes/data.csv",
        "data/cars/data.csv",
        "release.json",
    ]
    assert (written / "data/boxes/data.csv").read_bytes() == CSV["boxes"]
    text = (written / "release.json").read_text(encoding="utf-8")
    assert text.endswith("}\n") and not text.endswith("\n\n")
    assert "é" not in text and "ü" in text  # UTF-8 kept as is (the CSV's é is not in the document)
    assert json.loads(text) == first.model_dump(mode="json")
    manifest = (written / MANIFEST_NAME).read_text(encoding="utf-8").splitlines()
    paths = [line.split("  ", 1)[1] for line in manifest]
    assert paths == sorted(paths) and MANIFEST_NAME not in paths


def test_manifest_is_checkable_with_sha256sum(written: Path) -> None:
    tool = shutil.which("sha256sum")
    if tool is None:
        pytest.skip("sha256sum is not installed")
    result = subprocess.run(
        [tool, "--strict", "-c", MANIFEST_NAME], cwd=written, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_release_json_is_canonical(first: Release) -> None:
    shuffled = first.model_copy(deep=True)
    shuffled.datasets[0].info = dict(reversed(list(first.datasets[0].info.items())))
    assert dump_release_json(shuffled) == dump_release_json(first)


def test_release_data_path(written: Path, first: Release) -> None:
    path = release_data_path(written, "cars")
    assert path == written / "data" / "cars" / "data.csv"
    assert _sha(path.read_bytes()) == first.datasets[1].data_sha256
    assert release_data_path(written, first.datasets[0]) == written / "data/boxes/data.csv"
    with pytest.raises(FormatError, match=r"no dataset 'trucks' \(it has: boxes, cars\)"):
        release_data_path(written, "trucks")
    with pytest.raises(FormatError, match="unpacked release"):
        release_data_path(written.parent / "1.0.0.zip", "cars")


def test_progress_reports_every_stage_in_order(tmp_path: Path, first: Release) -> None:
    seen: list[tuple[str, float]] = []
    write_release(
        first, data_files_in(tmp_path, first), tmp_path / "r", progress=lambda s, f: seen.append((s, f))
    )
    stages = list(dict.fromkeys(stage for stage, _ in seen))
    assert stages == list(STAGES)
    fractions = [f for _, f in seen]
    assert fractions == sorted(fractions) and fractions[0] == 0.0 and seen[-1] == ("done", 1.0)


# --- golden files -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["release.json", "README.md", "CHANGELOG.md", "MANIFEST"])
def test_golden_files(tmp_path: Path, first: Release, name: str) -> None:
    nxt = build_next_release(first)
    files = data_files_in(tmp_path, nxt)
    folder = write_release(nxt, files, tmp_path / "releases", previous=first)
    produced = (folder / name).read_bytes()
    golden = GOLDEN / name
    if name == "release.json":  # the committed golden is a format 1.x document: it is what reading upgrades
        assert json.loads(golden.read_text(encoding="utf-8"))["format_version"].startswith("1.")
        assert produced.decode("utf-8") == dump_release_json(parse_release_json(golden.read_bytes()))
        return
    if UPDATE_GOLDEN:
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_bytes(produced)
    assert golden.is_file(), f"missing {golden}; run with FORKPATHS_UPDATE_GOLDEN=1 to create it"
    assert produced == golden.read_bytes(), (
        f"{name} differs from {golden}; if intended, regenerate and review"
    )


def test_golden_release_json_reads_back(first: Release) -> None:
    assert parse_release_json((GOLDEN / "release.json").read_bytes()) == build_next_release(first)


# --- tampering ---------------------------------------------------------------------------------------------


def _flip_byte(path: Path, index: int = 10) -> None:
    data = bytearray(path.read_bytes())
    data[index] ^= 0x01
    path.write_bytes(bytes(data))


def _edit_manifest_digest(release_dir: Path, path: str) -> None:
    lines = (release_dir / MANIFEST_NAME).read_text(encoding="utf-8").splitlines()
    edited = ["0" * 64 + "  " + path if line.endswith(f"  {path}") else line for line in lines]
    assert edited != lines
    (release_dir / MANIFEST_NAME).write_text("\n".join(edited) + "\n", encoding="utf-8")


TAMPERINGS = {
    "edit release.json": ("release.json", lambda d: _flip_byte(d / "release.json", 40)),
    "edit a data file": ("data/cars/data.csv", lambda d: _flip_byte(d / "data/cars/data.csv", 3)),
    "delete a file": ("README.md", lambda d: (d / "README.md").unlink()),
    "add a file": ("data/cars/extra.csv", lambda d: (d / "data/cars/extra.csv").write_text("a\n1\n")),
    "edit MANIFEST": ("CHANGELOG.md", lambda d: _edit_manifest_digest(d, "CHANGELOG.md")),
    "garble MANIFEST": (
        "MANIFEST line 2",
        lambda d: (d / MANIFEST_NAME).write_text(
            "\n".join(
                line if i != 1 else "not a manifest line"
                for i, line in enumerate((d / MANIFEST_NAME).read_text().splitlines())
            )
            + "\n"
        ),
    ),
    "delete MANIFEST": ("MANIFEST: missing", lambda d: (d / MANIFEST_NAME).unlink()),
}


@pytest.mark.parametrize("how", sorted(TAMPERINGS))
def test_a_tampered_release_is_refused(written: Path, how: str) -> None:
    named, tamper = TAMPERINGS[how]
    tamper(written)
    with pytest.raises(ReleaseIntegrityError) as info:
        read_release(written)
    message = str(info.value)
    assert named in message
    assert "modified after it was cut and must not be used" in message
    assert str(written) in message
    assert any(named in problem for problem in verify_release(written))


def test_a_data_edit_with_a_rewritten_manifest_is_still_refused(written: Path) -> None:
    _flip_byte(written / "data/boxes/data.csv", 2)
    _rewrite_manifest(written)
    with pytest.raises(ReleaseIntegrityError, match=r"data/boxes/data.csv: SHA-256 .* data_sha256"):
        read_release(written)


def _rezip(src: Path, dest: Path, change: dict[str, bytes | None]) -> None:
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dest, "w") as zout:
        for info in zin.infolist():
            replacement = change.get(info.filename, zin.read(info.filename))
            if replacement is not None:
                zout.writestr(info.filename, replacement)


@pytest.mark.parametrize(
    ("member", "content"),
    [("1.0.0/data/boxes/data.csv", b"x,y,group\n9,9,9\n"), ("1.0.0/README.md", None)],
)
def test_a_tampered_zip_is_refused(written: Path, tmp_path: Path, member: str, content: bytes | None) -> None:
    tampered = tmp_path / "tampered.zip"
    _rezip(written.parent / "1.0.0.zip", tampered, {member: content})
    with pytest.raises(ReleaseIntegrityError, match=member.removeprefix("1.0.0/")):
        read_release(tampered)


def test_a_truncated_zip_is_refused(written: Path, tmp_path: Path) -> None:
    truncated = tmp_path / "1.0.0.zip"
    truncated.write_bytes((written.parent / "1.0.0.zip").read_bytes()[:-200])
    with pytest.raises(ReleaseIntegrityError, match="must not be used"):
        read_release(truncated)


def test_a_zip_with_a_flipped_byte_is_refused(written: Path, tmp_path: Path) -> None:
    damaged = tmp_path / "1.0.0.zip"
    data = bytearray((written.parent / "1.0.0.zip").read_bytes())
    offset = data.index(b"1.0.0/data/boxes/data.csv") + len("1.0.0/data/boxes/data.csv") + 2
    data[offset] ^= 0xFF  # inside the compressed member
    damaged.write_bytes(bytes(data))
    assert verify_release(damaged)
    with pytest.raises(ReleaseIntegrityError):
        read_release(damaged)


# --- format version ---------------------------------------------------------------------------------------


def test_an_unknown_format_version_is_refused(written: Path) -> None:
    doc = json.loads((written / "release.json").read_text(encoding="utf-8"))
    doc["format_version"] = "9.9"
    (written / "release.json").write_text(json.dumps(doc), encoding="utf-8")
    _rewrite_manifest(written)
    with pytest.raises(UnsupportedFormatVersionError, match=r"'9\.9' is not supported.*reads format 1\.0"):
        read_release(written)
    assert any("9.9" in p for p in verify_release(written))


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        (b"\xff", "not UTF-8"),
        ("[1]", "expected a JSON object"),
        ("{", "not valid JSON"),
        ("{}", "no format_version"),
        ('{"format_version": "1.0", "version": "1.0.0"}', "created_at"),
        (None, "not a semantic version"),
    ],
)
def test_parse_release_json_names_the_problem(
    first: Release, text: str | bytes | None, fragment: str
) -> None:
    if text is None:
        doc = first.model_dump(mode="json") | {"version": "../1"}
        text = json.dumps(doc)
    with pytest.raises(FormatError, match=fragment):
        parse_release_json(text, source="x/release.json")


# --- immutability and atomicity ---------------------------------------------------------------------------


def test_an_existing_version_is_never_overwritten(tmp_path: Path, written: Path, first: Release) -> None:
    root = written.parent
    before = _snapshot(root)
    changed = first.model_copy(update={"notes": "sneaky edit"})
    with pytest.raises(ReleaseExistsError, match="release 1.0.0 already exists.*releases never change"):
        write_release(changed, data_files_in(tmp_path, first), root)
    assert _snapshot(root) == before
    assert sorted(p.name for p in root.iterdir()) == ["1.0.0", "1.0.0.zip"]


def test_a_leftover_zip_alone_blocks_the_version(tmp_path: Path, first: Release) -> None:
    root = tmp_path / "releases"
    root.mkdir()
    (root / "1.0.0.zip").write_bytes(b"someone else's")
    with pytest.raises(ReleaseExistsError):
        write_release(first, data_files_in(tmp_path, first), root)
    assert (root / "1.0.0.zip").read_bytes() == b"someone else's"


def test_a_data_file_that_changed_since_registration_is_refused(tmp_path: Path, first: Release) -> None:
    files = data_files_in(tmp_path, first)
    files["cars"].write_bytes(b"mpg,hp\n99,1\n")
    root = tmp_path / "releases"
    with pytest.raises(FormatError, match=r"dataset 'cars'.*data_sha256"):
        write_release(first, files, root)
    assert list(root.iterdir()) == []  # the partial folder is removed on a clean failure


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"version": "1.0"}, "not a semantic version"),
        ({"previous_version": "0.9.0"}, "pass that release as previous="),
        ({"format_version": "0.1"}, "writes format 2.0 only"),
    ],
)
def test_invalid_releases_are_refused_before_writing(
    tmp_path: Path, first: Release, change: dict[str, Any], fragment: str
) -> None:
    root = tmp_path / "releases"
    with pytest.raises(FormatError, match=fragment):
        write_release(first.model_copy(update=change), data_files_in(tmp_path, first), root)
    assert not root.exists() or list(root.iterdir()) == []


def test_data_files_must_match_the_datasets(tmp_path: Path, first: Release) -> None:
    files = data_files_in(tmp_path, first)
    with pytest.raises(FormatError, match="no data file given for dataset"):
        write_release(first, {"boxes": files["boxes"]}, tmp_path / "r")
    with pytest.raises(FormatError, match="'dice', which the release does not contain"):
        write_release(first, {**files, "dice": files["cars"]}, tmp_path / "r")
    bad = first.model_copy(deep=True)
    bad.datasets[1].data_file = "../outside.csv"
    with pytest.raises(FormatError, match=r"dataset 'cars': data_file '\.\./outside\.csv'"):
        write_release(bad, files, tmp_path / "r")


def test_previous_must_be_older_and_named(tmp_path: Path, first: Release) -> None:
    nxt = build_next_release(first)
    files = data_files_in(tmp_path, nxt)
    with pytest.raises(FormatError, match="set previous_version='1.0.0'"):
        write_release(
            nxt.model_copy(update={"previous_version": None}), files, tmp_path / "r", previous=first
        )
    with pytest.raises(FormatError, match="must have a lower version"):
        write_release(
            first.model_copy(update={"previous_version": "1.1.0"}),
            data_files_in(tmp_path, first),
            tmp_path / "r",
            previous=nxt,
        )


def test_nan_is_refused_with_its_place(first: Release) -> None:
    bad = first.model_copy(deep=True)
    bad.datasets[0].variables[0].extra["score"] = float("nan")
    with pytest.raises(FormatError, match=r"release\.datasets\[0\]\.variables\[0\]\.extra\.score is NaN"):
        dump_release_json(bad)


_KILLED_WRITER = """
import os, signal, sys, time
from pathlib import Path
from exports.native import write_release
from tests.exports.test_native import build_release, data_files_in

root, work, stage, mode = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4]
release = build_release()

def progress(name, fraction):
    if name == stage:
        if mode == "self":
            os.kill(os.getpid(), signal.SIGKILL)
        (work / "reached").write_text(name)
        time.sleep(60)

write_release(release, data_files_in(work, release), root, progress=progress)
"""


def _run_killed_writer(tmp_path: Path, stage: str, mode: str) -> Path:
    root, work = tmp_path / "releases", tmp_path / "work"
    work.mkdir()
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-c", _KILLED_WRITER, str(root), str(work), stage, mode],
        cwd=PROJECT_ROOT,
        env=env,
        stderr=subprocess.PIPE,
    )
    try:
        if mode == "external":
            deadline = time.monotonic() + 30
            while not (work / "reached").exists():
                assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
                assert time.monotonic() < deadline, "the writer never reached the stage"
                time.sleep(0.02)
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read().decode() if proc.stderr else ""
    return root


@pytest.mark.parametrize(
    ("stage", "mode"),
    [
        ("copying data", "external"),
        ("writing release.json", "self"),
        ("copying data", "self"),
        ("manifest", "self"),
        ("zip", "self"),
        ("publishing", "self"),
    ],
)
def test_a_killed_write_leaves_no_release(tmp_path: Path, first: Release, stage: str, mode: str) -> None:
    root = _run_killed_writer(tmp_path, stage, mode)
    names = sorted(p.name for p in root.iterdir())
    assert "1.0.0" not in names and "1.0.0.zip" not in names
    assert names and all(n.startswith(".1.0.0.") and ".partial-" in n for n in names), names
    assert list_releases(root) == []
    assert verify_release(root / "1.0.0")  # nothing there to read
    removed = cleanup_partials(root)
    assert sorted(p.name for p in removed) == names
    assert list(root.iterdir()) == []
    # the version is still free: a fresh write succeeds
    folder = write_release(first, data_files_in(tmp_path, first), root)
    assert read_release(folder) == first


def test_cleanup_keeps_partials_of_live_writers(tmp_path: Path) -> None:
    root = tmp_path / "releases"
    live = root / f".1.0.0.partial-{os.getpid()}-abcd"
    live.mkdir(parents=True)
    assert cleanup_partials(root) == []
    assert cleanup_partials(root, include_live=True) == [live]


def test_list_releases_sorts_semantically_and_ignores_the_rest(tmp_path: Path) -> None:
    for name in ("1.10.0", "1.2.0", "0.9.1", "notes", ".1.3.0.partial-1-ab", "1.2"):
        (tmp_path / name).mkdir()
    for name in ("1.2.0.zip", "2.0.0.zip", "readme.txt"):
        (tmp_path / name).write_text("x")
    assert list_releases(tmp_path) == ["0.9.1", "1.2.0", "1.10.0", "2.0.0"]
    assert list_releases(tmp_path / "missing") == []


# --- changelog --------------------------------------------------------------------------------------------


def _keys(items: Any) -> list[tuple[str, ...]]:
    return [item.key for item in items]


def test_diff_lists_added_removed_and_changed_items(first: Release) -> None:
    diff = diff_releases(first, build_next_release(first))
    assert (diff.old_version, diff.new_version) == ("1.0.0", "1.1.0")
    assert diff.fields == ["licence"]
    assert (diff.datasets_added, diff.datasets_removed) == (["dice"], ["cars"])
    boxes = next(d for d in diff.datasets if d.name == "boxes")
    assert boxes.status == "changed"
    assert boxes.fields == ["research_question"]
    assert _keys(boxes.variables.added) == [("BV4",)]
    assert _keys(boxes.variables.removed) == [("BV2",)]
    assert [(c.key, c.fields) for c in boxes.variables.changed] == [(("BV1",), ["rationale", "extra.blade"])]
    assert _keys(boxes.votes.added) == [("variable", "BV4", "A1", "justifiable")]
    assert _keys(boxes.votes.removed) == [("model", "BM1", "A2", "is_suited_to_cv")]
    assert [(c.key, c.fields) for c in boxes.votes.changed] == [
        (("variable", "BV1", "A2", "justifiable"), ["answer", "explanation"])
    ]
    assert _keys(boxes.parts["mcq"].added) == [("BQ2",)]
    assert [(c.key, c.fields) for c in boxes.parts["mcq"].changed] == [(("BQ1",), ["correct_index"])]
    assert boxes.transforms.is_empty and boxes.models.is_empty and boxes.alternatives.is_empty
    dice = next(d for d in diff.datasets if d.name == "dice")
    assert dice.status == "added" and _keys(dice.variables.added) == [("DV1",), ("DV2",), ("DV3",)]
    cars = next(d for d in diff.datasets if d.name == "cars")
    assert cars.status == "removed" and len(cars.votes.removed) == 3
    assert ReleaseDiff.model_validate_json(diff.model_dump_json()) == diff


def test_changelog_text_names_each_change(first: Release) -> None:
    text = render_changelog(diff_releases(first, build_next_release(first)))
    assert "Compared with release 1.0.0." in text
    assert "- added `BV4` Control 'season'" in text
    assert "- removed `BV2` Control 'group'" in text
    assert "- changed `BV1` IV 'treatment intensity': `rationale`, `extra.blade`" in text
    # a vote names the item by what a reader knows it as, and asks its question in words (issue 29 point 11)
    assert ("- changed `A2`'s vote on variable 'treatment intensity' (`BV1`): justifiable? no: `answer`, "
            "`explanation`") in text
    assert "- removed `A2`'s vote on model 'OLS' (`BM1`): operationalises the variable? no" in text
    assert "can_derive_from_data" not in text and "is_suited_to_cv" not in text
    assert "- added `BQ2` (transform, select_neg)" in text
    assert "- changed `BQ1` (variable, select_pos): `correct_index`" in text
    assert "## Dataset `dice` (added)" in text and "## Dataset `cars` (removed)" in text
    assert "- Licence changed." in text


def test_changelog_of_a_first_release_and_of_no_change(first: Release) -> None:
    text = render_changelog(diff_releases(None, first))
    assert "First release" in text and "- `boxes`: 3 variables, 1 transform" in text
    same = first.model_copy(update={"version": "1.0.1", "created_at": T1, "notes": "rebuilt"})
    diff = diff_releases(first, same)
    assert not diff.has_changes
    assert render_changelog(diff).endswith("No changes.\n")


def test_duplicate_keys_are_kept_apart(first: Release) -> None:
    doubled = first.model_copy(deep=True)
    doubled.version = "1.0.1"
    doubled.datasets[0].votes.append(doubled.datasets[0].votes[0].model_copy(update={"answer": "no"}))
    diff = diff_releases(first, doubled)
    assert _keys(diff.datasets[0].votes.added) == [("variable", "BV1", "A2", "justifiable", "#2")]


def test_written_changelog_matches_the_rendered_diff(tmp_path: Path, written: Path, first: Release) -> None:
    assert (written / "CHANGELOG.md").read_text(encoding="utf-8") == render_changelog(
        diff_releases(None, first)
    )


# --- manifest ---------------------------------------------------------------------------------------------

_path_part = st.text(alphabet="abcXYZ019_-. é", min_size=1, max_size=8).filter(lambda s: s not in {".", ".."})


@given(
    st.dictionaries(
        st.lists(_path_part, min_size=1, max_size=3).map("/".join).filter(lambda p: p != MANIFEST_NAME),
        st.binary(max_size=16).map(_sha),
        max_size=8,
    )
)
def test_manifest_round_trips(digests: dict[str, str]) -> None:
    parsed, problems = parse_manifest(render_manifest(digests))
    if digests:
        assert (parsed, problems) == (digests, [])
    else:
        assert problems == ["MANIFEST: the manifest lists no files"]


def test_a_release_without_release_json_is_refused(written: Path) -> None:
    (written / "release.json").unlink()
    _rewrite_manifest(written)
    with pytest.raises(ReleaseIntegrityError, match="release.json: missing; every release has one"):
        read_release(written)


def test_the_zip_depends_on_the_content_only(tmp_path: Path, first: Release) -> None:
    files = data_files_in(tmp_path, first)
    one = write_release(first, files, tmp_path / "one")
    two = write_release(first, files, tmp_path / "two")
    assert (one.parent / "1.0.0.zip").read_bytes() == (two.parent / "1.0.0.zip").read_bytes()
    with zipfile.ZipFile(one.parent / "1.0.0.zip") as zf:
        assert {info.date_time for info in zf.infolist()} == {
            (2025, 1, 2, 3, 4, 4)
        }  # created_at (zip keeps even seconds)


def test_format_1_0_releases_are_still_read(tmp_path: Path, first: Release) -> None:
    """1.1 only adds optional fields (statuses with basis and tally, meetings); a 1.0 document still reads."""
    from exports.native import parse_release_json

    doc = json.loads(first.model_dump_json())
    doc["format_version"] = "1.0"
    for ds in doc["datasets"]:
        ds.pop("meetings", None)
        for c in ds["consensus"]:
            c.pop("basis", None)
            c.pop("tally", None)
    release = parse_release_json(json.dumps(doc))
    assert release.format_version == "2.0" and release.datasets[0].meetings == []  # upgraded on read
    assert release.datasets[0].parts == json.loads(first.model_dump_json())["datasets"][0]["parts"]


def test_a_vote_on_a_check_is_a_vote_on_a_check_not_a_prog_check() -> None:
    """Issue 29 point 11: "added A4 on prog_check ff61a0…, is_faithful" named an internal kind and key."""
    from exports.changelog import _label_vote
    from exports.schema import Vote

    vote = Vote(target_kind="prog_check", target_id="ff61a0c2d4e5f6a7b8", annotator="A4", question="is_faithful",
                answer="yes")
    assert _label_vote(vote) == "`A4`'s vote on check `ff61a0c2d4e…`: tests what the task asks? yes"
    assert _label_vote(vote, {("prog_check", vote.target_id): "Data Completeness Ratio of task t1"}) == (
        "`A4`'s vote on check 'Data Completeness Ratio of task t1' (`ff61a0c2d4e…`): tests what the task asks? yes")

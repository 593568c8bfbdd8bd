"""Zip and name hygiene at upload (issue 26 point 8): every zip forkpaths takes (an agent's outputs for
programmatic checks, a dataset folder) goes through one check of its entry names, and a name that cannot be
unpacked is refused at upload with a sentence naming the entry, in the words of what the zip holds. Before, a
file and a folder at one path was accepted and the whole run then failed in the sandbox ("Scoring failed after
6 of 7 analyses: SandboxError… FileExistsError")."""

from __future__ import annotations

import io
import zipfile

import pytest

from curation.dataset_files import read_blade_files
from curation.errors import DatasetImportError
from evaluation.programmatic.outputs import OutputLimits, OutputsError, read_outputs_zip
from exports.archive_names import MAX_DEPTH, MAX_NAME_BYTES, ArchiveNameError, check_entry_names

MB = 2**20
INFO = b'{"research_questions": ["q"], "data_desc": {"fields": []}}'


def _zip(names: list[str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        for name in names:
            z.writestr(name, b"" if name.endswith("/") else b"x\n1\n")
    return buffer.getvalue()


DEEP = "t1/" + "d/" * 5000 + "f.csv"
LONG = "t1/" + "n" * 300 + ".csv"
CASES = {
    "file and folder": (["t1/clean.csv", "t1/a", "t1/a/b.csv"], "'t1/a' is both a file and a folder (the folder "
                                                                "holds 't1/a/b.csv')"),
    "folder then file": (["t1/a/b.csv", "t1/a"], "'t1/a' is both a file and a folder (the folder holds 't1/a/b.csv')"),
    "deep": ([DEEP], f"is 5002 levels deep; {{what}} may nest at most {MAX_DEPTH} levels"),
    "long name": ([LONG], f"has a name of 304 bytes ('{'n' * 39}…'); a file or folder name may be at most "
                          f"{MAX_NAME_BYTES} bytes"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_an_outputs_zip_with_names_that_cannot_be_unpacked_is_refused_in_the_kinds_words(case: str) -> None:
    names, words = CASES[case]
    with pytest.raises(OutputsError) as caught:
        read_outputs_zip(_zip(names), label="run7.zip")
    message = str(caught.value)
    assert message.startswith("run7.zip: ") and words.format(what="an outputs zip") in message
    assert "analys" not in message and "Traceback" not in message
    if case.endswith("folder"):
        assert "a task's output folder cannot hold both at one path, so nothing was read. Rename one." in message


def test_an_outputs_zip_with_too_many_entries_is_refused_before_reading() -> None:
    with pytest.raises(OutputsError, match=r"run\.zip has more than 40 entries; an outputs zip may hold at most 40"):
        read_outputs_zip(_zip([f"t1/f{i}.csv" for i in range(41)]), label="run.zip",
                         limits=OutputLimits(max_files=20))


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_dataset_zip_with_names_that_cannot_be_unpacked_is_refused_in_the_kinds_words(case: str) -> None:
    names, words = CASES[case]
    names = [n.replace("t1/", "storms/", 1) for n in ["t1/info.json", "t1/data.csv", *names]]
    with pytest.raises(DatasetImportError) as caught:
        read_blade_files([("storms.zip", _zip(names))], max_bytes=MB)
    message = str(caught.value)
    assert message.startswith("storms.zip: ") and words.replace("t1/", "storms/").format(what="a dataset zip") in message
    assert "the upload was rejected" in message


def test_plain_folders_and_repeated_folder_entries_pass() -> None:
    check_entry_names(["t1/", "t1/a/", "t1/a/b.csv", "t1/a/c.csv", "t2/x"], label="z", max_entries=10)
    check_entry_names(["d/" * (MAX_DEPTH - 1) + "f", "n" * MAX_NAME_BYTES], label="z", max_entries=10)
    with pytest.raises(ArchiveNameError, match="'t1/a.csv' appears twice"):
        check_entry_names(["t1/a.csv", "t1/a.csv"], label="z", max_entries=10)
    with pytest.raises(ArchiveNameError, match=r"has a name of 256 bytes"):
        check_entry_names(["é" * 128], label="z", max_entries=10)  # bytes, not characters


def test_a_stopped_programmatic_run_counts_task_folders_not_analyses() -> None:
    from datetime import UTC, datetime

    from curation.models import ScoringRun
    from curation.services.run_lifecycle import _interrupt
    from curation.services.scoring import items_noun

    run = ScoringRun(kind="programmatic", release_version="1.0.0", agent="a", progress_done=6, progress_total=7,
                     executor="host/123/abc", started_at=datetime(2026, 1, 1, tzinfo=UTC))
    _interrupt(run, datetime(2026, 1, 1, 1, tzinfo=UTC))
    assert "stopped after 6 of 7 task folders" in (run.message or "") and "analyses" not in (run.message or "")
    assert items_noun("analyses") == "analyses" and items_noun("hypotheses") == "queries"

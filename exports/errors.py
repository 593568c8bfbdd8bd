"""Errors of the release formats. ``exports`` is the bottom layer: it imports nothing from ``curation``;
callers that need their own error type (e.g. ``curation.errors.DatasetImportError``) translate these."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "BladeFormatError",
    "BladeProblem",
    "DiscoveryBenchFormatError",
    "DiscoveryBenchProblem",
    "FormatError",
    "ReleaseExistsError",
    "ReleaseIntegrityError",
    "UnsupportedFormatVersionError",
]


class FormatError(ValueError):
    """A file is not in the format it claims; the message names the file, the place and the problem."""


@dataclass(frozen=True)
class BladeProblem:
    """One problem in a BLADE dataset file, located as precisely as the file allows.

    Attributes:
        file: how the file was named to the reader (a path or an upload label).
        message: the whole sentence shown to the user; it repeats the location below.
        row: 1-based data row of ``annotations.csv`` (the header is not counted), if the problem is in a row.
        line: 1-based physical line of the file where that row starts (rows can span many lines).
        spec_id: the row's ``spec_id``.
        column: the CSV column (``transform_spec_json``...) or, for JSON files, ``None``.
        field: the JSON path inside the cell or file (``branches[0].dependencies[1]``).
    """

    file: str
    message: str
    row: int | None = None
    line: int | None = None
    spec_id: str | None = None
    column: str | None = None
    field: str | None = None


class BladeFormatError(FormatError):
    """One or more problems in a BLADE dataset folder (``annotations.csv``, ``mcq_dataset.json``, layout).

    ``str(error)`` lists every problem (up to a limit); :attr:`problems` keeps them structured so that a UI
    can point at the row and field of each.
    """

    MAX_SHOWN = 20

    def __init__(self, problems: list[BladeProblem] | BladeProblem) -> None:
        self.problems: tuple[BladeProblem, ...] = (
            (problems,) if isinstance(problems, BladeProblem) else tuple(problems)
        )
        if not self.problems:
            raise ValueError("BladeFormatError needs at least one problem")
        shown = [p.message for p in self.problems[: self.MAX_SHOWN]]
        more = len(self.problems) - len(shown)
        if len(shown) == 1:
            text = shown[0]
        else:
            text = f"{len(self.problems)} problems in {self.problems[0].file}:\n" + "\n".join(
                f"- {message}" for message in shown
            )
        if more:
            text += f"\n(and {more} more)"
        super().__init__(text)

    @property
    def first(self) -> BladeProblem:
        """The first problem found (the earliest row for row-level problems)."""
        return self.problems[0]


class ReleaseIntegrityError(FormatError):
    """A release on disk no longer matches what was cut: a file was edited, added or removed after writing.

    Such a release must not be used for scoring; the message names every offending file.
    """


class ReleaseExistsError(FormatError):
    """A release with this version was already written; releases are immutable and never overwritten."""


class UnsupportedFormatVersionError(FormatError):
    """A document declares a ``format_version`` this forkpaths cannot read; the message lists the ones it can."""


@dataclass(frozen=True)
class DiscoveryBenchProblem:
    """One problem in a DiscoveryBench tree (a ``metadata_<k>.json``, a data file or an answer key).

    Attributes:
        file: how the file was named to the reader (a path, or ``upload.zip:real/test/x/metadata_0.json``).
        message: the whole sentence shown to the user; it repeats the location below.
        field: the JSON path inside a metadata file (``queries[0][1].question``) or the CSV column of an
            answer key (``query_id``).
        row: 1-based data row of an answer key (the header is not counted).
    """

    file: str
    message: str
    field: str | None = None
    row: int | None = None


class DiscoveryBenchFormatError(FormatError):
    """One or more problems in a DiscoveryBench folder or tree; ``str(error)`` lists them (up to a limit) and
    :attr:`problems` keeps them structured so that a UI can point at the file, field and row of each."""

    MAX_SHOWN = 20

    def __init__(self, problems: list[DiscoveryBenchProblem] | DiscoveryBenchProblem) -> None:
        self.problems: tuple[DiscoveryBenchProblem, ...] = (
            (problems,) if isinstance(problems, DiscoveryBenchProblem) else tuple(problems)
        )
        if not self.problems:
            raise ValueError("DiscoveryBenchFormatError needs at least one problem")
        shown = [p.message for p in self.problems[: self.MAX_SHOWN]]
        more = len(self.problems) - len(shown)
        text = shown[0] if len(shown) == 1 else f"{len(self.problems)} problems:\n" + "\n".join(
            f"- {message}" for message in shown
        )
        if more:
            text += f"\n(and {more} more)"
        super().__init__(text)

    @property
    def first(self) -> DiscoveryBenchProblem:
        """The first problem found."""
        return self.problems[0]

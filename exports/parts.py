"""What each kind of task keeps in a release's datasets, as the release format sees it: a kind's
:class:`ReleasePart` (its payload model and the functions shared code calls on it), and the table of the parts the
running forkpaths knows, by kind name.

The registry of kinds (:mod:`evaluation.tasks.registry`) declares each kind's part here when it registers the
kind, so that the layers below it (the dataset card, the changelog, the format upgrade) loop over the kinds'
parts without knowing them. Nothing here names a kind.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from exports.schema import DatasetRelease

__all__ = ["ReleasePart", "counts_text", "declare_part", "declared_parts", "forget_part", "read_part"]


@dataclass(frozen=True)
class ReleasePart:
    """What a kind keeps in each dataset of a release: ``DatasetRelease.parts[kind.name]``, a JSON payload that
    ``model`` (a pydantic model, usually in the kind's ``exports`` module) validates. Shared code (the ground-truth
    hash, blinding, a cut's summary, the Releases page, the dataset card, the changelog) loops over the kinds that
    declare one and never names a kind.

    * ``noun``: what its items are called in a sentence ("MCQs", "QRData questions");
    * ``counts(part)``: its summary counts, labelled for a person, in the order shown; the first is the number of
      items, labelled with ``noun`` ("MCQs"), the others name a subset ("with gold");
    * ``hash_input(part)``: the JSON-able value its scores depend on, in the dataset's ground-truth hash: a
      mapping is merged into the hash's payload (keys of its own: the kinds of format 1.x keep theirs), any other
      value is kept under the kind's name;
    * ``blind(part)``: what a reader blind to the dataset may keep (None: nothing); withheld gold never stays;
    * ``work``: the labels of ``counts`` that are recorded work (experts' input, or the gold a blind annotator may
      not see), as opposed to imported content anyone sees;
    * ``in_every_hash``: its hash input is in the hash of every run on the dataset, whatever the run's kind (the
      rule of format 1.x, kept by the kinds that had a part then so that the hashes runs recorded still match);
      otherwise only in the hash of its own kind's runs;
    * ``one``: what one item is called ("MCQ"; default: ``noun``);
    * ``items(part)``: its items for the changelog, as (key, label, JSON-able record) triples (None: the changelog
      compares the part as one value);
    * ``targets(part)``: what a reader knows the targets of votes and consensus records in it by,
      ``{(target kind, id): name}`` (the changelog names them so);
    * ``about``: a sentence about its datasets for a person, shown beside them on the Releases page and the card;
    * ``card_table``: (a sentence introducing it, column headings, one row's cells from ``(ds, part)``): its
      datasets get a contents table of their own in the dataset card (None: they sit in the table of decisions,
      with a column of its count);
    * ``card_section(ds, part)``: the lines of the dataset's section of the card (None: the section of decisions,
      with a line of its counts);
    * ``hf_tables()``: the configurations (:class:`exports.hf.tables.HFConfig`) its items bring to a Hugging Face
      export, built when called (so that pyarrow loads with the export, not with the kind); None: it brings none;
    * ``owns(ds)``: the dataset is one of this kind's own (its tasks are the dataset's reason to be), not a dataset
      of BLADE's decisions, whatever decisions it also holds (None: it owns none).
    """

    model: type[BaseModel]
    noun: str
    counts: Callable[[Any], dict[str, int]]
    hash_input: Callable[[Any], Any]
    blind: Callable[[Any], Any | None]
    work: tuple[str, ...] = ()
    in_every_hash: bool = False
    one: str = ""
    items: Callable[[Any], list[tuple[str, str, Any]]] | None = None
    targets: Callable[[Any], dict[tuple[str, str], str]] | None = None
    about: str = ""
    card_table: tuple[str, tuple[str, ...], Callable[[DatasetRelease, Any], list[str]]] | None = None
    card_section: Callable[[DatasetRelease, Any], list[str]] | None = None
    hf_tables: Callable[[], tuple[Any, ...]] | None = None
    owns: Callable[[DatasetRelease], bool] | None = None

    @property
    def singular(self) -> str:
        return self.one or self.noun

    def held(self, ds: DatasetRelease, name: str) -> Any:
        """The dataset's part ``name`` as this model, or None when it holds none (or an empty one)."""
        value = read_part(ds, name, self.model)
        return value if value is not None and any(self.counts(value).values()) else None


_DECLARED: dict[str, ReleasePart] = {}


def declare_part(name: str, part: ReleasePart) -> None:
    """Make the part of kind ``name`` known to the release format's readers and writers."""
    _DECLARED[name] = part


def forget_part(name: str) -> None:
    _DECLARED.pop(name, None)


def declared_parts() -> dict[str, ReleasePart]:
    """The parts known, by kind name, in the kinds' order."""
    return dict(_DECLARED)


def read_part(ds: DatasetRelease, name: str, model: type[BaseModel]) -> Any:
    """The dataset's part ``name`` as ``model`` (None: it has none); kept validated on the dataset.

    Raises:
        ValueError: the payload does not fit (which dataset, part and field).
    """
    if name not in ds.parts:
        return None
    raw = ds.parts[name]
    cached = ds._parsed.get(name)
    if cached is not None and cached[0] is raw:  # read from this very payload (a copy shares the dict)
        return cached[1]
    try:
        parsed = model.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(x) for x in first.get("loc", ())) or "(the part itself)"
        raise ValueError(f"The {name} part of dataset {ds.name!r} is malformed at {loc}: "
                         f"{first.get('msg', 'invalid')}.") from exc
    ds._parsed[name] = (raw, parsed)
    return parsed


def counts_text(counts: Mapping[str, int], noun: str = "") -> str:
    """A part's counts in a sentence: the first as a number (followed by ``noun`` when given), the others after it
    ("2 (5 checks)", "5 questions (5 numerical, 5 with gold)"). A subset counted as zero is left out: a dataset of
    numerical questions says nothing of multiple choice, whatever the kind counts."""
    values = list(counts.items())
    if not values:
        return "0" + (f" {noun}" if noun else "")
    rest = ", ".join(f"{n:,} {label}" for label, n in values[1:] if n)
    return f"{values[0][1]:,}" + (f" {noun}" if noun else "") + (f" ({rest})" if rest else "")

"""What a kind curates in the database, found through the registry: the shared services (the release builder, a
meeting's agenda) ask each kind for its part instead of importing the kind's services.

A kind whose items experts curate in forkpaths' tables names its curation module in
:attr:`evaluation.tasks.TaskKind.curation` (a dotted module name: ``evaluation`` cannot import ``curation``);
that module defines ``CURATION = KindCuration(...)``. The shared services depend on this module only, and the
kind's services depend on the shared ones: the imports go one way (``tests/test_architecture.py``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evaluation.tasks import KINDS

if TYPE_CHECKING:
    from curation.services.ground_truth import GroundTruthItem

__all__ = ["KindCuration", "kind_curations"]


@dataclass(frozen=True)
class KindCuration:
    """A kind's curation in the database, as the shared services call it (each optional):

    * ``release_part(*, session, dataset, who)``: the kind's part of ``dataset`` in a release being cut (a
      :class:`exports.schema.KindPart`; an empty one is left out), read inside the cut's snapshot, people named by
      ``who`` (the release's pseudonyms, :data:`curation.services.release_data.Pseudonym`);
    * ``agenda_items(*, session, dataset_id)``: its items a consensus meeting may discuss (ground-truth items with
      their status and tally), beside the decisions of :func:`curation.services.ground_truth.ground_truth`.
    """

    release_part: Callable[..., Any] | None = None
    agenda_items: Callable[..., list[GroundTruthItem]] | None = None


def kind_curations() -> dict[str, KindCuration]:
    """Each registered kind's curation (kind name → its :class:`KindCuration`), in the kinds' order; kinds that
    curate nothing in the database are left out.

    Raises:
        TypeError: a kind names a curation module that does not define ``CURATION = KindCuration(...)``.
    """
    found = {}
    for kind in KINDS.values():
        if not kind.curation:
            continue
        curation = getattr(importlib.import_module(kind.curation), "CURATION", None)
        if not isinstance(curation, KindCuration):
            raise TypeError(f"The task kind {kind.name!r} names {kind.curation} as its curation module, which "
                            "does not define CURATION = KindCuration(...).")
        found[kind.name] = curation
    return found

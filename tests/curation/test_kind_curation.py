"""The shared services reach a kind's curation through the registry (issue 27 point 5): each kind that names a
curation module gets its ``CURATION``, and a kind that names a module without one is refused with a sentence."""

from __future__ import annotations

import dataclasses

import pytest

from curation.services.kind_curation import KindCuration, kind_curations
from evaluation.tasks import KINDS, registered
from tests.conformance.toy_kind import KIND as TOY


def test_every_kind_that_names_its_curation_gets_it():
    named = {k.name for k in KINDS.values() if k.curation}
    found = kind_curations()
    assert set(found) == named and named  # the kinds experts curate in forkpaths' tables
    assert all(isinstance(c, KindCuration) for c in found.values())
    assert any(c.release_part for c in found.values()) and any(c.agenda_items for c in found.values())


def test_a_kind_whose_curation_module_declares_nothing_is_refused_with_a_sentence():
    with registered(dataclasses.replace(TOY, name="toycur", curation="curation.services.votes")), \
            pytest.raises(TypeError, match="'toycur' names curation.services.votes as its curation module, which "
                                           "does not define CURATION"):
        kind_curations()
    assert "toycur" not in KINDS

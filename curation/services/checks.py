"""Sanity checks: run an analyst's transform or model code on the dataset, after its parent transforms.

The page, the ``forkpaths check`` command and anything else that checks code go through here, so they run the
same check. ``start_*`` return a cancellable :class:`~evaluation.sandbox.JobHandle` (the page polls it and shows
elapsed time); ``check_*`` wait for the result.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from pydantic import Field
from sqlmodel import Session

from curation.errors import DecisionValidationError, SandboxError
from curation.models import Transform, User
from curation.services.actor import judges_actor
from curation.services.annotation import ancestor_chain, check_fingerprint, get_own_decisions
from curation.services.datasets import dataset_data_path, get_dataset
from curation.services.sandbox_setting import configure_sandbox, sandbox_isolation
from evaluation.sandbox import (
    MappedJobHandle,
    ModelCheck,
    SandboxLimits,
    TransformCheck,
    fast_copy_path,
    prepare_fast_copy,
    start_model_check,
    start_transform_check,
)
from evaluation.specs import ROOT_SPEC_ID

__all__ = [
    "CheckedModel",
    "CheckedTransform",
    "check_model_code",
    "check_transform_code",
    "configure_sandbox",
    "ensure_fast_copy",
    "sandbox_isolation",
    "start_model_code_check",
    "start_transform_code_check",
]

log = logging.getLogger(__name__)


class CheckedTransform(TransformCheck):
    fingerprint: str = Field(description="check_fingerprint of the code and the parents' code this check ran")


class CheckedModel(ModelCheck):
    fingerprint: str = Field(description="check_fingerprint of the code and the parents' code this check ran")


def ensure_fast_copy(data_path: Path) -> None:
    """Give sandbox jobs a pickled copy of the table (a 150,000-row CSV parses in ~0.5 s, the copy in ~0.04 s).

    A missing copy only costs speed, so failing to write one is logged, not raised.
    """
    if fast_copy_path(data_path).exists():
        return
    try:
        prepare_fast_copy(data_path)
    except SandboxError as exc:
        log.warning("no fast copy for %s: %s", data_path, exc)


def resolve_transform_refs(transforms: Sequence[Transform], refs: Sequence[str]) -> list[str]:
    """Transform ids from ids or spec names (as a person types them on the command line)."""
    by_id = {t.id: t for t in transforms}
    by_name: dict[str, list[Transform]] = {}
    for t in transforms:
        by_name.setdefault(t.spec_name, []).append(t)
    ids = []
    for ref in refs:
        if ref in by_id or ref == ROOT_SPEC_ID:
            ids.append(ref)
        elif len(by_name.get(ref, [])) == 1:
            ids.append(by_name[ref][0].id)
        elif ref in by_name:
            raise DecisionValidationError(
                f"Several of your transforms are called '{ref}'; give its id instead: "
                + ", ".join(t.id for t in by_name[ref]) + "."
            )
        else:
            known = ", ".join(f"{t.spec_name} ({t.id})" for t in transforms) or "none yet"
            raise DecisionValidationError(f"You have no transform '{ref}' in this dataset; yours: {known}.")
    return ids


def _prepare(
    session: Session, actor: User, dataset_id: int, parents: Sequence[str], store: Path
) -> tuple[Path, list[Transform]]:
    """The data file (with its fast copy) and the actor's transforms to run first, in order."""
    dataset = get_dataset(session=session, actor=actor, dataset_id=dataset_id)
    decisions = get_own_decisions(session=session, actor=actor, dataset_id=dataset_id)
    transforms = decisions.transforms if decisions else []
    chain = ancestor_chain({t.id: t for t in transforms}, resolve_transform_refs(transforms, parents))
    data_path = dataset_data_path(dataset, store)
    ensure_fast_copy(data_path)
    return data_path, chain


@judges_actor
def start_transform_code_check(
    *,
    session: Session,
    actor: User,
    dataset_id: int,
    code: str,
    dependencies: Sequence[str],
    store: Path,
    limits: SandboxLimits,
) -> MappedJobHandle[CheckedTransform]:
    """Start running ``code`` after the transforms in ``dependencies`` (ids or names; first alternative each).

    The result records the code it ran and a fingerprint of that code with its parents' code: saving keeps
    it only with that code, and submitting accepts it only while neither changed.
    """
    data_path, chain = _prepare(session, actor, dataset_id, dependencies, store)
    fingerprint = check_fingerprint(code, chain)
    handle = start_transform_check(data_path=data_path, parent_codes=[t.code for t in chain],
                                   parent_names=[t.spec_name for t in chain], code=code, limits=limits)
    return handle.then(lambda result: CheckedTransform.model_validate(
        {**result.model_dump(), "code": code, "fingerprint": fingerprint}))


@judges_actor
def check_transform_code(
    *,
    session: Session,
    actor: User,
    dataset_id: int,
    code: str,
    dependencies: Sequence[str],
    store: Path,
    limits: SandboxLimits,
) -> CheckedTransform:
    """Run ``code`` after the transforms in ``dependencies`` (and their ancestors, first alternative each)."""
    return start_transform_code_check(session=session, actor=actor, dataset_id=dataset_id, code=code,
                                      dependencies=dependencies, store=store, limits=limits).result()


@judges_actor
def start_model_code_check(
    *,
    session: Session,
    actor: User,
    dataset_id: int,
    code: str,
    transform_ids: Sequence[str],
    store: Path,
    limits: SandboxLimits,
) -> MappedJobHandle[CheckedModel]:
    """Start fitting the model code after the transforms it sits on (ids or names, and their ancestors).

    ``transform_ids`` are the model's transforms then the producers of its derived columns
    (:func:`curation.services.annotation.model_dependencies`), as the submission gate recomputes them.
    """
    data_path, chain = _prepare(session, actor, dataset_id, transform_ids, store)
    fingerprint = check_fingerprint(code, chain)
    handle = start_model_check(data_path=data_path, transform_codes=[t.code for t in chain],
                               transform_names=[t.spec_name for t in chain], code=code, limits=limits)
    return handle.then(lambda result: CheckedModel.model_validate(
        {**result.model_dump(), "code": code, "fingerprint": fingerprint}))


@judges_actor
def check_model_code(
    *,
    session: Session,
    actor: User,
    dataset_id: int,
    code: str,
    transform_ids: Sequence[str],
    store: Path,
    limits: SandboxLimits,
) -> CheckedModel:
    """Fit the model code on the data after the transforms it sits on (and their ancestors)."""
    return start_model_code_check(session=session, actor=actor, dataset_id=dataset_id, code=code,
                                  transform_ids=transform_ids, store=store, limits=limits).result()

"""The release document: ``release.json``'s name and the folder's fixed names, the format versions this
forkpaths reads, and the document's text (written with sorted keys; read back with its version checked
first and every path and hash checked).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from pydantic import ValidationError

from exports.errors import FormatError, UnsupportedFormatVersionError
from exports.jsontext import JsonTextError, load_json
from exports.manifest import MANIFEST_NAME, path_problem
from exports.parts import declared_parts, read_part
from exports.release_folder import parse_version
from exports.schema import FORMAT_VERSION, DatasetRelease, Release
from exports.upgrade import upgrade_release_document

__all__ = ["document_problems",
    "CHANGELOG_NAME",
    "DATA_DIR",
    "README_NAME",
    "RELEASE_JSON",
    "SUPPORTED_FORMAT_VERSIONS",
    "dump_release_json",
    "parse_release_json",
]

RELEASE_JSON = "release.json"
README_NAME = "README.md"
CHANGELOG_NAME = "CHANGELOG.md"
DATA_DIR = "data"

#: Format versions :func:`read_release` understands.
#: 1.x documents are upgraded to the current format on read (:mod:`exports.upgrade`), losslessly.
SUPPORTED_FORMAT_VERSIONS: tuple[str, ...] = ("1.0", "1.1", "1.2", FORMAT_VERSION)


_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_RESERVED = {RELEASE_JSON, README_NAME, CHANGELOG_NAME, MANIFEST_NAME}


def _non_finite_path(value: Any, path: str) -> str | None:
    if isinstance(value, float) and not math.isfinite(value):
        return path
    if isinstance(value, dict):
        for key, inner in value.items():
            found = _non_finite_path(inner, f"{path}.{key}")
            if found:
                return found
    if isinstance(value, list):
        for index, inner in enumerate(value):
            found = _non_finite_path(inner, f"{path}[{index}]")
            if found:
                return found
    return None


def dump_release_json(release: Release) -> str:
    """Serialise ``release`` as the text of ``release.json``.

    Keys are sorted at every level so that equal releases give identical bytes (a consequence: key order of
    free-form dicts such as ``info`` is not kept; JSON gives it no meaning). Indent 2, non-ASCII kept as is,
    one trailing newline.

    Raises:
        FormatError: a value JSON cannot hold (NaN or infinity), naming where it is.
    """
    # mode="json" would quietly turn NaN into null; look for it in the Python values first.
    bad = _non_finite_path(release.model_dump(), "release")
    if bad is not None:
        raise FormatError(
            f"release {release.version}: {bad} is NaN or infinite, which JSON cannot hold; "
            "replace it with null or a number before cutting the release"
        )
    document = release.model_dump(mode="json")
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"


def _validation_summary(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        parts.append(f"{where}: {err['msg']}")
    more = len(exc.errors()) - 5
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


def parse_release_json(data: bytes | str, *, source: str = RELEASE_JSON) -> Release:
    """Parse the text of a ``release.json``, checking its ``format_version`` first.

    Args:
        data: the file's bytes (UTF-8) or text.
        source: how to name the file in error messages.

    Raises:
        UnsupportedFormatVersionError: ``format_version`` is not one of :data:`SUPPORTED_FORMAT_VERSIONS`.
        FormatError: not UTF-8, not JSON, not an object, no ``format_version``, fields that do not fit the
            schema (named), an invalid version, or data-file paths that leave the release.
    """
    try:
        obj = load_json(data, label=source)
    except JsonTextError as exc:
        raise FormatError(f"{source}: {exc.reason.removeprefix('is ')}") from exc
    if not isinstance(obj, dict):
        raise FormatError(f"{source}: expected a JSON object, found {type(obj).__name__}")
    if "format_version" not in obj:
        raise FormatError(f"{source}: no format_version; this is not a forkpaths release document")
    found = obj["format_version"]
    if found not in SUPPORTED_FORMAT_VERSIONS:
        raise UnsupportedFormatVersionError(
            f"{source}: format_version {found!r} is not supported; this forkpaths reads format "
            f"{', '.join(SUPPORTED_FORMAT_VERSIONS)}. Use a forkpaths version that knows format {found!r}."
        )
    obj = upgrade_release_document(obj, source=source)  # raises FormatError naming the dataset and field
    try:
        release = Release.model_validate(obj)
    except ValidationError as exc:
        raise FormatError(f"{source}: does not fit the release schema: {_validation_summary(exc)}") from exc
    problems = document_problems(release)
    if problems:
        raise FormatError(f"{source}: " + "; ".join(problems))
    return release


def document_problems(release: Release) -> list[str]:
    """Problems of a release document on its own: version, dataset names, data-file paths and hashes."""
    problems = []
    if parse_version(release.version) is None:
        problems.append(f"version {release.version!r} is not a semantic version X.Y.Z")
    seen_names: set[str] = set()
    seen_files: set[str] = set()
    for ds in release.datasets:
        where = f"dataset {ds.name!r}"
        if not ds.name:
            problems.append("a dataset has an empty name")
        elif ds.name in seen_names:
            problems.append(f"{where} appears twice")
        seen_names.add(ds.name)
        problem = path_problem(ds.data_file)
        if problem is not None:
            problems.append(f"{where}: data_file {ds.data_file!r}: {problem}")
        elif not ds.data_file.startswith(f"{DATA_DIR}/") or ds.data_file in _RESERVED:
            problems.append(f"{where}: data_file {ds.data_file!r} must lie under {DATA_DIR}/")
        elif ds.data_file in seen_files:
            problems.append(f"{where}: data_file {ds.data_file!r} is used by another dataset too")
        seen_files.add(ds.data_file)
        if not _SHA256.match(ds.data_sha256):
            problems.append(f"{where}: data_sha256 {ds.data_sha256!r} is not 64 lowercase hex digits")
        problems += _file_problems(ds, where, seen_files)
        for name, part in declared_parts().items():  # a kind's items are named once in its part
            if name not in ds.parts:
                continue
            try:
                value = read_part(ds, name, part.model)
            except ValueError as exc:
                problems.append(str(exc))
                continue
            if part.items is not None:
                keys = [key for key, _, _ in part.items(value)]
                repeated = sorted({k for k in keys if keys.count(k) > 1})
                if repeated:
                    problems.append(f"{where}: {part.noun} {', '.join(repeated)} appear twice")
    return problems


def _file_problems(ds: DatasetRelease, where: str, seen_files: set[str]) -> list[str]:
    """Problems of a dataset's ``files`` list (format 1.2): paths inside ``data/<dataset>/``, each once.

    The dataset's main table is one of its files: ``data_file`` may be listed, with the same checksum.
    """
    problems = []
    names: set[str] = set()
    for file in ds.files:
        label = f"{where}: file {file.name!r}"
        problem = path_problem(file.path)
        if problem is not None:
            problems.append(f"{label}: path {file.path!r}: {problem}")
        elif not file.path.startswith(f"{DATA_DIR}/{ds.name}/"):
            problems.append(f"{label}: path {file.path!r} must lie under {DATA_DIR}/{ds.name}/")
        elif file.path == ds.data_file:
            if file.sha256 != ds.data_sha256:
                problems.append(f"{label} is the data_file but records another SHA-256 than data_sha256")
        elif file.path in seen_files:
            problems.append(f"{label}: path {file.path!r} is used twice")
        seen_files.add(file.path)
        if file.name in names:
            problems.append(f"{label} is listed twice")
        names.add(file.name)
        if not _SHA256.match(file.sha256):
            problems.append(f"{label}: sha256 {file.sha256!r} is not 64 lowercase hex digits")
    return problems


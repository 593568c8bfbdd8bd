"""The ``MANIFEST`` of a release: one ``<sha256>  <relative path>`` line per file, sorted by path.

The layout is ``sha256sum``'s, so ``sha256sum -c MANIFEST`` run inside a release directory checks it with no
forkpaths installed. The manifest covers every file of the release except itself; readers compare it both
ways (a listed file that is missing, a present file that is not listed, a digest that differs).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from pathlib import Path
from typing import IO

__all__ = [
    "MANIFEST_NAME",
    "compare_manifest",
    "parse_manifest",
    "path_problem",
    "render_manifest",
    "sha256_file",
    "sha256_stream",
]

MANIFEST_NAME = "MANIFEST"

_CHUNK = 1 << 20
_LINE = re.compile(r"^([0-9a-f]{64})  (.+)$")


def sha256_stream(stream: IO[bytes]) -> str:
    """Return the hex SHA-256 of everything left in ``stream`` (read in 1 MiB chunks)."""
    digest = hashlib.sha256()
    while chunk := stream.read(_CHUNK):
        digest.update(chunk)
    return digest.hexdigest()


def sha256_file(path: Path) -> str:
    """Return the hex SHA-256 of the file at ``path``."""
    with path.open("rb") as stream:
        return sha256_stream(stream)


def path_problem(path: str) -> str | None:
    """Say why ``path`` cannot name a file inside a release, or return None when it can.

    A release path is relative, uses ``/`` separators, has no empty, ``.`` or ``..`` segment and no
    backslash or line break (which ``sha256sum`` would escape, and which no sane file name needs).
    """
    if not path:
        return "the path is empty"
    if path.startswith("/"):
        return "the path is absolute; it must be relative to the release folder"
    if any(ch in path for ch in "\\\n\r\0"):
        return "the path contains a backslash, a line break or a NUL character"
    if any(part in {"", ".", ".."} for part in path.split("/")):
        return "the path has an empty, '.' or '..' segment"
    return None


def render_manifest(digests: Mapping[str, str]) -> str:
    """Render ``{relative path: sha256}`` as MANIFEST text, sorted by path, one line per file.

    Raises:
        ValueError: a path that :func:`path_problem` refuses, or a digest that is not 64 lowercase hex digits
            (a programming error of the writer, not a user's).
    """
    lines = []
    for path in sorted(digests):
        problem = path_problem(path)
        if problem is not None or path == MANIFEST_NAME:
            raise ValueError(f"cannot list {path!r} in a MANIFEST: {problem or 'the manifest lists itself'}")
        if not re.fullmatch(r"[0-9a-f]{64}", digests[path]):
            raise ValueError(f"not a SHA-256 hex digest for {path!r}: {digests[path]!r}")
        lines.append(f"{digests[path]}  {path}\n")
    return "".join(lines)


def parse_manifest(text: str) -> tuple[dict[str, str], list[str]]:
    """Parse MANIFEST text into ``{relative path: sha256}`` and the problems found on the way.

    Every line must read ``<64 lowercase hex>  <path>``; paths must be valid release paths, listed once, and
    not the manifest itself. An empty manifest is a problem (a release always holds ``release.json``).

    Returns:
        The digests of the well-formed lines and one sentence per malformed line (``"MANIFEST line 3: ..."``).
    """
    digests: dict[str, str] = {}
    problems: list[str] = []
    if text and not text.endswith("\n"):
        problems.append(
            f"{MANIFEST_NAME}: the last line has no line ending (the file was truncated or edited)"
        )
    body = text.removesuffix("\n")
    for number, line in enumerate(body.split("\n") if body else [], start=1):
        match = _LINE.match(line)
        if match is None:
            problems.append(
                f"{MANIFEST_NAME} line {number}: expected '<sha256>  <path>', found {line[:80]!r}"
            )
            continue
        digest, path = match.groups()
        problem = path_problem(path)
        if problem is not None:
            problems.append(f"{MANIFEST_NAME} line {number}: {path!r}: {problem}")
        elif path == MANIFEST_NAME:
            problems.append(f"{MANIFEST_NAME} line {number}: the manifest lists itself")
        elif path in digests:
            problems.append(f"{MANIFEST_NAME} line {number}: {path} is listed twice")
        else:
            digests[path] = digest
    if not digests and not problems:
        problems.append(f"{MANIFEST_NAME}: the manifest lists no files")
    return digests, problems


def compare_manifest(expected: Mapping[str, str], actual: Mapping[str, str]) -> list[str]:
    """Compare the manifest's digests with the digests of the files actually present.

    Args:
        expected: ``{path: sha256}`` from the manifest.
        actual: ``{path: sha256}`` of every file present except the manifest.

    Returns:
        One sentence per offending file, naming it, in path order; empty when they agree.
    """
    problems: list[str] = []
    for path in sorted(set(expected) | set(actual)):
        if path not in actual:
            problems.append(f"{path}: listed in {MANIFEST_NAME} but missing")
        elif path not in expected:
            problems.append(f"{path}: present but not listed in {MANIFEST_NAME}")
        elif expected[path] != actual[path]:
            problems.append(
                f"{path}: content differs from {MANIFEST_NAME} "
                f"(sha256 {actual[path][:12]}…, expected {expected[path][:12]}…)"
            )
    return problems

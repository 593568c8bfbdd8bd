"""Errors of the release formats. ``exports`` is the bottom layer: it imports nothing from ``curation``;
callers that need their own error type (e.g. ``curation.errors.DatasetImportError``) translate these."""

from __future__ import annotations

__all__ = ["FormatError"]


class FormatError(ValueError):
    """A file is not in the format it claims; the message names the file, the place and the problem."""

"""The native release on disk: an immutable, self-verifying folder (and a zip of it) per version.

Layout of ``<dest_root>/<version>/``::

    release.json              the Release document (keys sorted, indent 2, UTF-8, trailing newline)
    README.md                 dataset card generated from release.json
    CHANGELOG.md              what changed since the previous release (or "first release")
    data/<dataset>/data.csv   the data tables, at each dataset's ``data_file`` path
    data/<dataset>/<name>     every file of a multi-file dataset (a DiscoveryBench folder), at its ``files`` path
    MANIFEST                  ``<sha256>  <path>`` for every other file, sorted by path (sha256sum format)

and ``<dest_root>/<version>.zip`` holds the same files under a top folder named ``<version>/``.

Writing is atomic: everything is built in a hidden sibling ``.<version>.partial-<pid>-<random>``, fsynced and
renamed into place, so a writer killed at any point leaves no ``<version>`` folder (at most a ``.partial``
leftover that :func:`~exports.release_folder.list_releases` ignores and
:func:`~exports.release_folder.cleanup_partials` removes). An existing version is never
overwritten. Reading first checks every file against ``MANIFEST``; a release that does not match was modified
after it was cut and is refused with :class:`~exports.errors.ReleaseIntegrityError`.

The manifest alone detects accidental and naive edits; it is not a signature: someone who edits a file *and*
rewrites ``MANIFEST`` and ``release.json`` consistently is not detected by it. Pass the manifest's own SHA-256,
kept somewhere the files' editor cannot reach (forkpaths records it in its database when the release is cut),
as ``manifest_sha256`` and such a rewrite is refused too; :mod:`exports.published` checks a published folder
and its zip that way.
"""


from exports.manifest import MANIFEST_NAME
from exports.native.document import (
    CHANGELOG_NAME,
    DATA_DIR,
    README_NAME,
    RELEASE_JSON,
    SUPPORTED_FORMAT_VERSIONS,
    dump_release_json,
    parse_release_json,
)
from exports.native.read import read_release, release_data_path, verify_release
from exports.native.write import STAGES, ProgressCallback, write_release
from exports.release_folder import cleanup_partials, list_releases, parse_version

__all__ = [
    "CHANGELOG_NAME",
    "DATA_DIR",
    "MANIFEST_NAME",
    "README_NAME",
    "RELEASE_JSON",
    "STAGES",
    "SUPPORTED_FORMAT_VERSIONS",
    "ProgressCallback",
    "cleanup_partials",
    "dump_release_json",
    "list_releases",
    "parse_release_json",
    "parse_version",
    "read_release",
    "release_data_path",
    "verify_release",
    "write_release",
]

"""Write a release as a Hugging Face dataset folder, ready for ``huggingface-cli upload``.

The folder holds one Parquet file per configuration (a kind of item the release holds) and split
(:mod:`exports.hf.tables`), the release's data files and ``release.json`` at their release paths (so the paths in
the rows resolve), ``LICENSE.md``, ``SHA256SUMS`` and the dataset card ``README.md`` whose YAML header the Hub and
``datasets.load_dataset`` read (:mod:`exports.hf.card`). A kind the release holds no item of gets no
configuration; the card names it as left out.

The folder is built in a hidden sibling and renamed into place when complete. Publishing it is the user's step.
"""

from __future__ import annotations

import hashlib
import io
import secrets
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

import exports.upgrade  # noqa: F401 - declares the parts every reader of a release knows (its kinds' tables)
from exports.errors import FormatError
from exports.hf.card import LICENCE_NAME, parquet_path, render_hf_card, render_licence
from exports.hf.tables import CONFIGS, config_rows, hf_configs
from exports.manifest import MANIFEST_NAME, parse_manifest, render_manifest, sha256_file
from exports.schema import Release

__all__ = ["CHECKSUMS_NAME", "CONFIGS", "HFExport", "write_hf_release"]

CHECKSUMS_NAME = "SHA256SUMS"


@dataclass(frozen=True)
class HFExport:
    """What an export wrote.

    Attributes:
        path: the folder.
        splits: configuration → split → rows written.
        left_out: the configurations not written (the release holds no item of their kind).
    """

    path: Path
    splits: dict[str, dict[str, int]] = field(default_factory=dict)
    left_out: list[str] = field(default_factory=list)


def _parquet_bytes(table: pa.Table) -> bytes:
    buffer = io.BytesIO()
    pq.write_table(table, buffer, compression="zstd")
    return buffer.getvalue()


def _write(path: Path, data: bytes) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return hashlib.sha256(data).hexdigest()


def write_hf_release(release: Release, release_dir: Path, dest: Path, *, manifest_sha256: str) -> HFExport:
    """Write ``release`` (unpacked and verified at ``release_dir``) as a Hugging Face dataset folder ``dest``.

    Args:
        release: the release document.
        release_dir: the verified release folder (its MANIFEST lists the files copied).
        dest: the folder to create; it must not exist.
        manifest_sha256: the SHA-256 of the release's MANIFEST as recorded when it was cut (for the card).

    Raises:
        FileExistsError: ``dest`` exists.
        FormatError: the release holds no item of any kind (nothing to load), or a release file changed while it
            was copied (its digest no longer matches the MANIFEST).
    """
    if dest.exists():
        raise FileExistsError(f"{dest} already exists")
    digests, problems = parse_manifest((release_dir / MANIFEST_NAME).read_text(encoding="utf-8"))
    if problems:
        raise FormatError(f"the release's MANIFEST cannot be read: {'; '.join(problems)}")
    configs = hf_configs()
    rows = config_rows(release)
    if not rows:
        raise FormatError(f"release {release.version} holds no item of any kind ({', '.join(c.name for c in configs)}),"
                          " only data tables, so a Hugging Face dataset of it would have no configuration to load; "
                          "export it with --format native")
    partial = dest.parent / f".{dest.name}.partial-{secrets.token_hex(4)}"
    try:
        sums: dict[str, str] = {}
        splits: dict[str, dict[str, int]] = {}
        for config in configs:
            for split, items in rows.get(config.name, {}).items():
                where = parquet_path(config.name, split)
                sums[where] = _write(partial / where, _parquet_bytes(pa.Table.from_pylist(items, schema=config.schema)))
                splits.setdefault(config.name, {})[split] = len(items)
        copied = sorted(p for p in digests if p == "release.json" or p.startswith("data/"))
        for path in copied:
            target = partial / path
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(release_dir / path, target)
            if sha256_file(target) != digests[path]:
                raise FormatError(f"{path} of release {release.version} changed while it was copied; export again")
            sums[path] = digests[path]
        sums[LICENCE_NAME] = _write(partial / LICENCE_NAME, render_licence(release).encode())
        (partial / CHECKSUMS_NAME).write_text(render_manifest(sums), encoding="utf-8")
        card = render_hf_card(release, splits, manifest_sha256=manifest_sha256,
                              data_files=[(p, digests[p]) for p in copied],
                              parquet_files=sorted((p, s) for p, s in sums.items() if p.endswith(".parquet")))
        (partial / "README.md").write_text(card, encoding="utf-8")
        partial.rename(dest)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return HFExport(path=dest, splits=splits, left_out=[c.name for c in configs if c.name not in splits])

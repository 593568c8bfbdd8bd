"""The dataset card (``README.md``) of a Hugging Face export: the YAML header the Hub reads (configurations and
their data files, licence, task categories, size, pretty name), then a card for people: what each configuration
holds, what the release does not hold, how to load it, the fields, the licence, how to cite it and checksums.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from exports.card import attribution_lines, licence_lines
from exports.hf.tables import HFConfig, hf_configs
from exports.schema import Release

__all__ = ["HF_LAYOUT_VERSION", "LICENCE_NAME", "parquet_path", "render_hf_card", "render_licence", "size_category"]

#: The version of this layout (configurations, their columns, file names); bump on any change. Nothing reads an
#: export back, so the card states it for the people and scripts that use the data.
HF_LAYOUT_VERSION = "1.0"
LICENCE_NAME = "LICENSE.md"

_SIZES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"),
          (10_000_000, "1M<n<10M"), (100_000_000, "10M<n<100M"), (1_000_000_000, "100M<n<1B"))


def size_category(rows: int) -> str:
    """The Hub's size category of a dataset of ``rows`` rows in all."""
    return next((label for bound, label in _SIZES if rows < bound), "1B<n<10B")


def parquet_path(config: str, split: str) -> str:
    """Where a configuration's split is written, relative to the export (the Hub's own naming)."""
    return f"{config}/{split}-00000-of-00001.parquet"


def _header(release: Release, splits: Mapping[str, Mapping[str, int]]) -> str:
    present = [c for c in hf_configs() if c.name in splits]
    categories = sorted({cat for c in present for cat in c.task_categories})
    meta: dict[str, Any] = {
        "pretty_name": f"forkpaths release {release.version}",
        "license": "other",
        "license_name": "forkpaths-release-terms",
        "license_link": LICENCE_NAME,
        "task_categories": categories,
        "tags": ["forkpaths", "data-analysis", "benchmark", "tabular"],
        "size_categories": [size_category(sum(n for s in splits.values() for n in s.values()))],
        "configs": [{"config_name": c.name,
                     "data_files": [{"split": split, "path": parquet_path(c.name, split)} for split in splits[c.name]],
                     **({"default": True} if i == 0 else {})} for i, c in enumerate(present)],
    }
    return "---\n" + yaml.safe_dump(meta, sort_keys=False, allow_unicode=True, width=1000) + "---\n"


def _fields(config: HFConfig) -> list[str]:
    out = [f"### `{config.name}`", "", f"One row is {config.row}.", ""]
    out += [f"- `{name}`: {description}" for name, (_, description) in config.fields.items()]
    return out + [""]


def _bibtex(release: Release, manifest_sha256: str) -> str:
    key = "forkpaths_release_" + release.version.replace(".", "_")
    return "\n".join([
        f"@misc{{{key},",
        f"  title        = {{forkpaths release {release.version}}},",
        f"  year         = {{{release.created_at.year}}},",
        f"  note         = {{Release {release.version} cut on {release.created_at.date().isoformat()} by forkpaths "
        f"{release.app_version}; MANIFEST SHA-256 {manifest_sha256}}},",
        "}",
    ])


def render_hf_card(release: Release, splits: Mapping[str, Mapping[str, int]], *, manifest_sha256: str,
                   data_files: Sequence[tuple[str, str]], parquet_files: Sequence[tuple[str, str]]) -> str:
    """Render the ``README.md`` of a Hugging Face export.

    Args:
        release: the release exported.
        splits: configuration → split → rows, for the configurations written (the others are named as left out).
        manifest_sha256: the SHA-256 of the release's MANIFEST as recorded when it was cut.
        data_files: (path, SHA-256) of the release files copied into the export, as its MANIFEST lists them.
        parquet_files: (path, SHA-256) of the Parquet files written.
    """
    present = [c for c in hf_configs() if c.name in splits]
    missing = [c for c in hf_configs() if c.name not in splits]
    first = present[0].name if present else ""
    out = [_header(release, splits), f"# forkpaths release {release.version}", "",
           "Expert ground truth about data-analysis decisions and data-science tasks, curated with "
           "forkpaths and exported as a Hugging Face dataset. This folder is release "
           f"{release.version} (cut {release.created_at.strftime('%Y-%m-%d %H:%M UTC')}, forkpaths "
           f"{release.app_version}, release format {release.format_version}, Hugging Face layout {HF_LAYOUT_VERSION}"
           + (f", after release {release.previous_version}" if release.previous_version else "") + "), "
           f"{len(release.datasets)} dataset{'s' if len(release.datasets) != 1 else ''}: "
           + ", ".join(f"`{d.name}`" for d in release.datasets) + ".", ""]
    if release.notes.strip():
        out += ["## Release notes", "", release.notes.strip(), ""]
    out += ["## Configurations", "", "| Configuration | What a row is | Splits (rows) |", "|---|---|---|"]
    for c in present:
        parts = ", ".join(f"`{split}` ({n:,})" for split, n in splits[c.name].items())
        out.append(f"| `{c.name}`{' (default)' if c.name == first else ''} | {c.title}: {c.row} | {parts} |")
    out.append("")
    if not present:
        out += ["This release holds no item of any kind: there is no configuration to load.", ""]
    if missing:
        out += ["**Not in this release.** A configuration is written only for the kinds of item a release holds:", ""]
        out += [f"- `{c.name}` is left out: this release has {c.missing}." for c in missing]
        out.append("")
    out += ["Annotators appear under pseudonyms only. Splits are `test` (a benchmark is a test set) except for "
            "hypothesis tasks, which keep DiscoveryBench's splits.", "",
            "This folder holds the release's ground truth (decisions with their consensus, correct MCQ options, "
            "gold hypotheses, programmatic checks and their artifacts). Publishing it makes the answers public: "
            "agents evaluated on it later may have seen them.", ""]
    if present:
        out += ["## Loading", "", "```python", "from datasets import load_dataset", "",
                f"ds = load_dataset(\"<this folder or your-org/your-dataset>\", \"{first}\")"]
        other = next((c.name for c in present[1:]), None)
        if other:
            out.append(f"{other} = load_dataset(\"<this folder or your-org/your-dataset>\", \"{other}\")")
        out += ["```", "",
                "Columns ending in `_json` hold JSON text (`json.loads`). Paths such as `data_file` are relative to "
                "this folder, where the data tables are. `release.json` is the whole release document, as forkpaths "
                "reads it.", "", "## Fields", ""]
        for c in present:
            out += _fields(c)
    out += ["## Licence", "", f"Summarised in [{LICENCE_NAME}]({LICENCE_NAME}).", "", *licence_lines(release),
            "## Citation", "", "```bibtex", _bibtex(release, manifest_sha256), "```", "",
            "Cite the sources this release builds on as well:", "", *attribution_lines(release),
            "## Checksums", "",
            f"The release's `MANIFEST` (as cut, `sha256sum -c` format) has SHA-256 `{manifest_sha256}`. The files "
            "copied from the release keep its MANIFEST's digests; `SHA256SUMS` lists every file of this folder "
            "but this card (check with `sha256sum -c SHA256SUMS`).", "",
            "| File | SHA-256 |", "|---|---|"]
    out += [f"| `{path}` | `{sha}` |" for path, sha in [*parquet_files, *data_files]]
    return "\n".join(out) + "\n"


def render_licence(release: Release) -> str:
    """``LICENSE.md``: the release's terms, linked from the card's header (``license_link``)."""
    return "\n".join([f"# Terms of forkpaths release {release.version}", "", *licence_lines(release),
                      "## Attribution", "", *attribution_lines(release)])

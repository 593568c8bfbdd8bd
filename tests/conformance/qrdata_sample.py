"""The QRData kind's conformance sample (:data:`tests.conformance.samples.SAMPLES` calls :func:`sample`): the shared
subset imported with the kind's importer and released, upstream's gold as the good submission, a regold that
changes one gold answer, and a scripted model that answers each question in its own shape."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sqlmodel import select

from curation.db import session_scope
from curation.models import Dataset
from curation.services.kind_import import import_kind
from tests.conformance.samples import Sample, World


def _golds(folder: Path) -> dict[str, str]:
    records = json.loads((folder / "QRData.json").read_text(encoding="utf-8"))
    index = json.loads((folder / "upstream_index.json").read_text(encoding="utf-8"))
    return {str(i): r["answer"] for i, r in zip(index, records, strict=True)}


def agent_reply(request: dict[str, Any]) -> str:
    """A number for a numerical question, the first choice offered for a multiple-choice one."""
    prompt = request["messages"][-1]["content"]
    marker = '"answer": "<one of '
    if marker in prompt:
        first = prompt.split(marker, 1)[1].split(",", 1)[0].split(">", 1)[0]
        return json.dumps({"answer": first, "rationale": "scripted"})
    return json.dumps({"answer": "-4.91", "rationale": "scripted"})


def sample(world: World, shared: Path) -> Sample:
    folder = shared / "qrdata"
    with session_scope(world.engine) as s:
        names = import_kind(session=s, actor=world.curator, kind="qrdata", path=folder,
                            store=world.settings.datasets_store, max_bytes=200 * 2**20).datasets
    world.cut("1.0.0", names)
    golds = _golds(folder)
    records = (folder / "QRData.json").read_text(encoding="utf-8")
    texts = " ".join(r["question"] + " " + r["data_description"] for r in json.loads(records))

    def regold() -> str:
        with session_scope(world.engine) as s:
            ds = s.exec(select(Dataset).where(Dataset.name == "qrdata_online_classroom")).one()
            part = dict(ds.parts["qrdata"])
            part["questions"] = [{**q, "answer": "-5.20"} if q["id"] == "352" else q for q in part["questions"]]
            ds.parts = {**ds.parts, "qrdata": part}
            s.add(ds)
        return world.cut("1.1.0", names)

    return Sample(version="1.0.0", good=[("answers.json", json.dumps({"answers": golds}).encode())],
                  bad=[("answers.json", b'{"answers": ["-4.91"]}')], regold=regold,
                  # the golds a blind reader must not find: those long enough to be told apart from other text
                  gold=sorted({g for g in golds.values() if len(g) >= 4 and g not in texts}),
                  agent_reply=agent_reply)

"""Source-blind review is blind: an LLM's alternative and an analyst's alternative that propose the same decision
are presented identically to a reviewer, field for field (the review page renders nothing else)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from curation.db import session_scope
from curation.models import ProposerDisplay, Role, Stage
from curation.services.alternatives import (
    TransformAlternativeInput,
    VariableAlternativeInput,
    check_alternative_transform,
    prepare_transform_check,
    propose_transform_alternative,
    propose_variable_alternative,
)
from curation.services.analyses.llm_alternatives import generate_alternatives
from curation.services.analyses.review_queue import ReviewItem, review_queue
from curation.services.annotation import submit_analysis
from curation.services.stages import set_review_settings, set_stage
from evaluation.llm import LLMConfig
from evaluation.sandbox import SandboxLimits
from evaluation.specs import ROOT_SPEC_ID, VariableType
from tests import factories as f
from tests.llm_server import ScriptedLLM

LIMITS = SandboxLimits(timeout_s=60, memory_mb=2048)
VARIABLE = {"variable_type": "Control", "concept": "storm strength", "columns": ["wind"], "rationale": "wind kills"}
TRANSFORM = {"code": "df['deaths_sqrt'] = np.sqrt(df['deaths'])", "output_col": "deaths_sqrt",
             "rationale": "less skew"}
TIMINGS = ("code_seconds", "data_seconds", "total_seconds")


def _responder(request: dict[str, Any]) -> str:
    prompt = request["messages"][-1]["content"]
    if "conceptual variables (independent" in prompt:
        return json.dumps({"variables": [VARIABLE]})
    # one transform, for the DV ("deaths") only, so that nothing is flagged as a duplicate
    return json.dumps({"transforms": [TRANSFORM] if '"concept": "deaths"' in prompt else []})


def _presented(item: ReviewItem) -> dict[str, Any]:
    """What the page shows of an item, without its ids and its place in the hash order."""
    shown = dataclasses.asdict(item)
    for key in ("target_id", "label", "variable_id"):
        shown.pop(key)
    if shown["check"]:
        shown["check"] = {k: v for k, v in shown["check"].items() if k not in TIMINGS}
    return shown


def test_an_llm_alternative_and_an_analysts_alternative_look_the_same_to_a_blind_reviewer(engine, store, tmp_path):
    ana, bob = f.user(engine, "ana"), f.user(engine, "bob")
    cur = f.user(engine, "cur", Role.CURATOR)
    by_llm = f.dataset(engine, store, name="storms", assign=[ana])
    by_peer = f.dataset(engine, store, name="gales", assign=[ana, bob])
    seeds = {}
    for ds, people in ((by_llm, [ana]), (by_peer, [ana, bob])):
        for u in people:
            ids = f.full_analysis(engine, u, ds.id)
            seeds[(ds.id, u.username)] = ids
            with session_scope(engine) as s:
                submit_analysis(session=s, actor=u, dataset_id=ds.id)
        with session_scope(engine) as s:
            set_stage(session=s, actor=cur, dataset_id=ds.id, stage=Stage.REVIEW)

    with ScriptedLLM(_responder) as server:
        report = generate_alternatives(
            session_scope=lambda: session_scope(engine), actor=cur, dataset_id=by_llm.id,
            config=LLMConfig(base_url=server.url, model="m", cache_dir=tmp_path / "cache", backoff_s=0.01),
            store=store, limits=LIMITS)
    assert report.created == 2 and report.errors == [] and report.duplicates == 0

    dv = seeds[(by_peer.id, "ana")]["dv"]
    with session_scope(engine) as s:
        data_path, chain = prepare_transform_check(session=s, actor=bob, dataset_id=by_peer.id, seed_id=dv,
                                                   parents=[ROOT_SPEC_ID], store=store)
    check = check_alternative_transform(data_path=data_path, chain=chain, code=TRANSFORM["code"],
                                        output_col=TRANSFORM["output_col"], limits=LIMITS)
    with session_scope(engine) as s:  # the analyst names the step, as analysts do
        propose_transform_alternative(session=s, actor=bob, dataset_id=by_peer.id, seed_id=dv, check=check,
                                      data=TransformAlternativeInput(spec_name="bob's root of deaths",
                                                                     parents=[ROOT_SPEC_ID], **TRANSFORM))
        propose_variable_alternative(session=s, actor=bob, dataset_id=by_peer.id, seed_id=None,
                                     data=VariableAlternativeInput(
                                         variable_type=VariableType.CONTROL, concept=VARIABLE["concept"],
                                         rationale=VARIABLE["rationale"], columns=VARIABLE["columns"]))

    def alternatives(dataset_id: int) -> dict[str, ReviewItem]:
        with session_scope(engine) as s:
            items = review_queue(session=s, actor=ana, dataset_id=dataset_id).items
        return {i.kind: i for i in items if i.target_kind == "alternative"}

    llm, peer = alternatives(by_llm.id), alternatives(by_peer.id)
    for kind in ("variable", "transform"):
        assert _presented(llm[kind]) == _presented(peer[kind]), kind
    assert llm["transform"].title == "transform creating deaths_sqrt"  # not alt_deaths_sqrt, not bob's name
    assert llm["transform"].source is None and llm["transform"].proposer is None

    with session_scope(engine) as s:  # with the source visible, names and sources come back
        set_review_settings(session=s, actor=cur, dataset_id=by_peer.id, source_visible=True,
                            proposer_display=ProposerDisplay.NAMED)
    visible = alternatives(by_peer.id)["transform"]
    assert visible.title == "bob's root of deaths" and visible.source == "peer" and visible.proposer == "bob"

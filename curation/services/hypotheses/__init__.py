"""Curating DiscoveryBench hypothesis tasks in forkpaths' three stages (issue 17, point 2).

* :mod:`.stage1`: each analyst writes, blind, a decomposed hypothesis per query, with a workflow and supporting
  code run in the sandbox;
* :mod:`.review`: stage 2, peers' and the LLM's hypotheses (:mod:`.llm`) judged with reasons;
* :mod:`.consensus`: stage 3, the gold hypothesis a decision rule or meeting makes justifiable, with provenance,
  and :func:`hypothesis_release_parts` for releases.
"""

from curation.services.hypotheses.common import (
    HypothesisInput,
    HypothesisVariableInput,
    dictionary_columns,
    is_hypothesis_dataset,
    task_label,
)
from curation.services.hypotheses.consensus import (
    GoldBoard,
    TaskGold,
    decide_gold,
    gold_board,
    hypothesis_release_parts,
)
from curation.services.hypotheses.review import (
    HypothesisItem,
    HypothesisReview,
    TaskReview,
    hypothesis_review,
)
from curation.services.hypotheses.stage1 import (
    OwnHypotheses,
    check_hypothesis_code,
    delete_hypothesis,
    own_hypotheses,
    save_hypothesis,
    start_hypothesis_check,
    submit_hypotheses,
)

__all__ = [
    "GoldBoard",
    "HypothesisInput",
    "HypothesisItem",
    "HypothesisReview",
    "HypothesisVariableInput",
    "OwnHypotheses",
    "TaskGold",
    "TaskReview",
    "check_hypothesis_code",
    "decide_gold",
    "delete_hypothesis",
    "dictionary_columns",
    "gold_board",
    "hypothesis_release_parts",
    "hypothesis_review",
    "is_hypothesis_dataset",
    "own_hypotheses",
    "save_hypothesis",
    "start_hypothesis_check",
    "submit_hypotheses",
    "task_label",
]

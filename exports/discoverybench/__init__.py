"""DiscoveryBench (Majumder et al. 2024, github.com/allenai/discoverybench; data under ODC-By 1.0) in its own
layout: models of ``metadata_<k>.json`` and the answer keys, a reader for a folder or a whole tree that copes
with every quirk upstream ships (evaluation-seeds-reference §1.3), and a writer whose output equals what was
read. The bottom layer: no database, no UI."""

from exports.discoverybench.answer_key import (
    ANSWER_KEY_COLUMNS,
    AnswerKey,
    AnswerKeyRow,
    parse_answer_key,
    write_answer_key,
)
from exports.discoverybench.metadata import (
    DEFAULT_STYLE,
    JsonStyle,
    MetadataFile,
    dump_metadata,
    parse_metadata,
    render_metadata,
)
from exports.discoverybench.models import (
    ColumnGroups,
    ColumnInfo,
    DatasetInfo,
    Hypotheses,
    MainHypothesis,
    Metadata,
    Query,
    QuestionType,
    normalise_question_type,
)
from exports.discoverybench.tree import (
    DataFile,
    DiscoveryBenchTree,
    GoldHypothesis,
    Task,
    TaskFolder,
    read_discoverybench,
    read_task_folder,
    write_discoverybench,
)

__all__ = [
    "ANSWER_KEY_COLUMNS",
    "DEFAULT_STYLE",
    "AnswerKey",
    "AnswerKeyRow",
    "ColumnGroups",
    "ColumnInfo",
    "DataFile",
    "DatasetInfo",
    "DiscoveryBenchTree",
    "GoldHypothesis",
    "Hypotheses",
    "JsonStyle",
    "MainHypothesis",
    "Metadata",
    "MetadataFile",
    "Query",
    "QuestionType",
    "Task",
    "TaskFolder",
    "dump_metadata",
    "normalise_question_type",
    "parse_answer_key",
    "parse_metadata",
    "read_discoverybench",
    "read_task_folder",
    "render_metadata",
    "write_answer_key",
    "write_discoverybench",
]

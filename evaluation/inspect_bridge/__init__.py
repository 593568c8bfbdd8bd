"""forkpaths and inspect_ai (UK AISI's evaluation harness), without a database.

* :mod:`~evaluation.inspect_bridge.answers` (no inspect import): the kinds an agent can answer, an answer's text as
  the kind's answer, answers scored by the kind's own engine;
* :mod:`~evaluation.inspect_bridge.task` (imports inspect_ai): a release as an inspect task of a kind;
* :mod:`~evaluation.inspect_bridge.logs` (imports inspect_ai when a log is read): an inspect log as forkpaths
  needs it.

inspect_ai is heavy to import: only ``task`` imports it at module level, and only inspect itself loads that
module (through the ``forkpaths`` entry point, :mod:`forkpaths._registry`).
"""

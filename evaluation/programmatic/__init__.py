"""Programmatic task checks (DataSciBench's task-function-code): outputs, the sandbox job, scoring, metrics,
ground truth by self-consistency, and the release gate. No database, no UI."""

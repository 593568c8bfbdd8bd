"""Services: one function per user action. They take a keyword-only ``session`` and never commit; the caller
wraps the action in :func:`curation.db.session_scope`."""

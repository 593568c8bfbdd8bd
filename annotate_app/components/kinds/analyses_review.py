"""The BLADE analyses kind's review queue: its decisions and alternatives (variables, transforms), filterable,
a page at a time."""

from __future__ import annotations

import streamlit as st

from annotate_app import state
from annotate_app.components.kinds.analyses_review_item import render_item
from curation.models import Stage, User
from curation.services.analyses.review_queue import ReviewQueue, filter_items

PAGE_SIZE = 10


def render_queue(user: User, queue: ReviewQueue) -> None:
    if queue.stage == Stage.CLOSED.value:
        st.warning("Stage 2 of this dataset is closed: votes are final and shown read-only.")
    elif not queue.can_vote:
        st.info("You look at this review as a curator; the analysts who submitted stage 1 vote.")
    # the filters side by side, each as wide as it needs (wrapping when the window is narrow): equal columns
    # cut "Transforms" off at 1024 px
    c1 = c3 = st.container(horizontal=True, vertical_alignment="bottom", gap="medium")
    c2 = st.container() if not queue.source_visible else c1  # the source-blind note goes on its own line
    kind = c1.segmented_control("Kind", ["variable", "transform"], key="review.kind",
                                format_func=lambda k: {"variable": "Variables", "transform": "Transforms"}[k])
    source = None
    if queue.source_visible:
        source = c2.segmented_control("Source", ["peer", "llm"], key="review.source",
                                      format_func=lambda s: {"peer": "Peers", "llm": "LLM"}[s])
    else:
        c2.caption("Source-blind review: whether a peer or the LLM proposed an item is hidden.")
    unvoted = c3.toggle("Not yet voted by me", key="review.unvoted", disabled=not queue.can_vote)
    items = filter_items(queue.items, kind=kind, source=source, unvoted_only=unvoted)
    finished = sum(i.finished_by_me for i in queue.items if not i.own)
    judgeable = sum(not i.own for i in queue.items)
    if queue.can_vote:
        st.progress(finished / judgeable if judgeable else 1.0,
                    text=f"You have judged {finished} of {judgeable} items · {len(items)} match the filters")
    else:
        st.caption(f"{len(queue.items)} items to judge · {len(items)} match the filters")
    pages = max(1, -(-len(items) // PAGE_SIZE))
    page = min(int(state.get(state.REVIEW_PAGE, 1) or 1), pages)
    if pages > 1:
        page = st.number_input(f"Page (of {pages}, {PAGE_SIZE} items each)", 1, pages, page, key="review.page_no")
        state.put(state.REVIEW_PAGE, page)
    for item in items[(page - 1) * PAGE_SIZE: page * PAGE_SIZE]:
        render_item(user, item, queue.can_vote and queue.stage == Stage.REVIEW.value, queue.dataset_id,
                    queue.proposable_columns, can_merge=queue.stage == Stage.REVIEW.value)
    if not items:
        st.success("Nothing left to judge with these filters.")

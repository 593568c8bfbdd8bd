"""forkpaths web app: the router. Resolves the signed-in user and shows the pages of their role."""

from __future__ import annotations

import sys
from pathlib import Path

import streamlit as st

if __package__ in (None, ""):  # `streamlit run annotate_app/app.py` runs this file as a script
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from annotate_app import context, heap, state  # noqa: E402
from annotate_app.components.session_cookie import sync_cookie  # noqa: E402
from annotate_app.text import md  # noqa: E402
from curation.models import Role  # noqa: E402

PAGES = Path(__file__).parent / "app_pages"

# No "Deploy" button or developer menu, however the app was started (forkpaths run, streamlit run from any
# folder): set here because Streamlit reads .streamlit/config.toml only from the folder it is started in.
st.set_option("client.toolbarMode", "minimal")
st.set_page_config(page_title="forkpaths", page_icon="🌿", layout="wide")

# Pages' addresses, for a signed-out visitor who opens a link to one (a bookmark, an expired sign-in): the
# sign-in form answers there, and once signed in the same address shows the page.
LINKED_PAGES = sorted(p.stem for p in PAGES.glob("*.py")
                      if p.stem not in ("__init__", "sign_in", "home", "pending"))

user = context.current_user()
if user is None:
    sign_in = [st.Page(PAGES / "sign_in.py", title="Sign in", icon="🔑", default=True)]
    sign_in += [st.Page(PAGES / "sign_in.py", title="Sign in", icon="🔑", url_path=name) for name in LINKED_PAGES]
    nav = st.navigation(sign_in, position="hidden")
elif user.is_pending:  # a single-sign-on account no admin has given a role yet: that page, at every address
    waiting = [st.Page(PAGES / "pending.py", title="Waiting for approval", icon="⏳", default=True)]
    waiting += [st.Page(PAGES / "pending.py", title="Waiting for approval", icon="⏳", url_path=name)
                for name in LINKED_PAGES]
    nav = st.navigation(waiting, position="hidden")
    with st.sidebar:
        if st.button("Sign out", key="sign_out", width="stretch"):
            context.sign_out()
            st.rerun()
else:
    staff = user.role in (Role.CURATOR.value, Role.ADMIN.value)
    sections: dict[str, list] = {}
    if user.role != Role.EVALUATOR.value:  # evaluators score agents; they do not annotate
        sections["Ground truth"] = [
            st.Page(PAGES / "home.py", title="Progress", icon="📊", default=True),
            st.Page(PAGES / "annotate.py", title="Annotate", icon="✍️"),
            st.Page(PAGES / "review.py", title="Review", icon="⚖️"),
            st.Page(PAGES / "consensus.py", title="Consensus", icon="🤝"),
            st.Page(PAGES / "programmatic.py", title="Programmatic checks", icon="🧮"),
        ]
        if staff:
            sections["Ground truth"] += [st.Page(PAGES / "datasets.py", title="Datasets", icon="🗂️"),
                                         st.Page(PAGES / "mcqs.py", title="MCQs", icon="❓"),
                                         st.Page(PAGES / "releases.py", title="Releases", icon="📦")]
    if staff or user.role == Role.EVALUATOR.value:
        if user.role == Role.EVALUATOR.value:
            # the evaluator's start page: the leaderboard at the app's root, out of the menu, so that the menu's
            # "Leaderboard" keeps its own address (/leaderboard) for links and bookmarks
            sections[""] = [st.Page(PAGES / "leaderboard.py", title="Leaderboard", icon="🏆", default=True,
                                    url_path="start", visibility="hidden")]
        sections["Evaluation"] = [
            st.Page(PAGES / "leaderboard.py", title="Leaderboard", icon="🏆"),
            st.Page(PAGES / "runs.py", title="Scoring runs", icon="🏁"),
            st.Page(PAGES / "agent_runs.py", title="Agent runs", icon="🤖"),
            st.Page(PAGES / "run_details.py", title="Run details", icon="🔎"),
            st.Page(PAGES / "compare.py", title="Compare runs", icon="🆚"),
            st.Page(PAGES / "judge_check.py", title="Judge validation", icon="🧪"),
        ]
    sections["You"] = [st.Page(PAGES / "account.py", title="Account", icon="👤")]
    if user.role == Role.ADMIN.value:
        sections["You"].insert(0, st.Page(PAGES / "admin.py", title="Users & assignments", icon="🛡️"))
    # every page stays in view: an admin has 14, more than Streamlit shows before folding the rest away
    nav = st.navigation(sections, expanded=True)
    with st.sidebar:
        st.caption(f"Signed in as **{md(user.display_name or user.username)}** · {user.role}")
        if st.button("Sign out", key="sign_out", width="stretch"):
            context.sign_out()
            st.rerun()
sync_cookie(context.session_cookie_name(), state.cookie_action())
context.show_flash()
try:
    nav.run()
finally:  # also when the page stops early (st.rerun, st.stop)
    heap.freeze_new_modules()

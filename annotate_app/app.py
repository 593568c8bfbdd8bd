"""forkpaths web app: the router. Resolves the signed-in user and shows the pages of their role."""

from __future__ import annotations

import sys
from pathlib import Path

import streamlit as st

if __package__ in (None, ""):  # `streamlit run annotate_app/app.py` runs this file as a script
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from annotate_app import context, state  # noqa: E402
from curation.models import Role  # noqa: E402

PAGES = Path(__file__).parent / "app_pages"

st.set_page_config(page_title="forkpaths", page_icon="🌿", layout="wide")

user = context.current_user()
if user is None:
    nav = st.navigation([st.Page(PAGES / "sign_in.py", title="Sign in", icon="🔑", default=True)], position="hidden")
else:
    pages = [
        st.Page(PAGES / "home.py", title="Progress", icon="📊", default=True),
        st.Page(PAGES / "annotate.py", title="Annotate", icon="✍️"),
    ]
    if user.role in (Role.CURATOR.value, Role.ADMIN.value):
        pages.append(st.Page(PAGES / "datasets.py", title="Datasets", icon="🗂️"))
        pages.append(st.Page(PAGES / "releases.py", title="Releases", icon="📦"))
    if user.role == Role.ADMIN.value:
        pages.append(st.Page(PAGES / "admin.py", title="Users & assignments", icon="🛡️"))
    pages.append(st.Page(PAGES / "account.py", title="Account", icon="👤"))
    nav = st.navigation(pages)
    with st.sidebar:
        st.caption(f"Signed in as **{user.display_name or user.username}** · {user.role}")
        if st.button("Sign out", key="sign_out", width="stretch"):
            state.sign_out()
            st.rerun()
context.show_flash()
nav.run()

"""What a single-sign-on account sees until an admin gives it a role."""

import streamlit as st

from annotate_app import context
from annotate_app.text import md

user = context.require_user()
st.title("⏳ Waiting for approval")
st.markdown(f"You are signed in as **{md(user.display_name or user.username)}** (user name `{user.username}`) "
            "through single sign-on.")
st.info("An administrator has to give your account a role before you can annotate, review or score. They see "
        "your account on their *Users & assignments* page; sign in again once they tell you it is done.",
        icon="⏳")

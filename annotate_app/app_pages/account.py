"""Account page: change one's own password."""

import streamlit as st

from annotate_app import context, state
from curation.services.accounts import change_own_password

user = context.require_user()
st.title("👤 Account")
st.write(f"**{user.display_name}** (`{user.username}`), role **{user.role}**.")

with st.form("change_password", clear_on_submit=True):
    old = st.text_input("Current password", type="password")
    new = st.text_input("New password", type="password")
    again = st.text_input("New password again", type="password")
    go = st.form_submit_button("Change password")
if go:
    if new != again:
        st.error("The two new passwords differ.")
    else:
        changed = context.attempt(
            lambda s: change_own_password(session=s, actor=user, old_password=old, new_password=new)
        )
        if changed is not None:
            state.sign_in(changed.id or 0, changed.auth_epoch)
            state.flash("Password changed.")
            st.rerun()

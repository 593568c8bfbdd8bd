"""Account page: change one's own password."""

import streamlit as st

from annotate_app import context, state
from annotate_app.text import md
from curation.services.accounts import MAX_PASSWORD_LENGTH, PASSWORD_RULE, change_own_password

user = context.require_user()
st.title("👤 Account")
st.markdown(f"**{md(user.display_name)}** (`{user.username}`), role **{user.role}**.")

if user.oidc_subject is not None:
    st.info("You sign in through single sign-on: your password is kept by your organisation's identity "
            "provider, not here.", icon="🔐")
    st.stop()

with st.form("change_password", clear_on_submit=True):
    old = st.text_input("Current password", type="password", max_chars=MAX_PASSWORD_LENGTH)
    new = st.text_input("New password", type="password", max_chars=MAX_PASSWORD_LENGTH,
                        help=PASSWORD_RULE)
    again = st.text_input("New password again", type="password", max_chars=MAX_PASSWORD_LENGTH)
    go = st.form_submit_button("Change password")
if go:
    if new != again:
        st.error("The two new passwords differ.")
    else:
        changed = context.attempt(lambda s: change_own_password(
            session=s, actor=user, old_password=old, new_password=new, keep_session_token=state.session_token(),
            first_admin_password_file=context.settings().first_admin_password_file,
        ))
        if changed is not None:
            state.flash("Password changed; you stay signed in here, other browsers were signed out.")
            st.rerun()

"""Sign-in page: single sign-on through the organisation's identity provider (when configured) and, always, the
local password form."""

import streamlit as st

from annotate_app import context
from annotate_app.components import sso

st.title("🌿 forkpaths")
st.caption("Expert ground truth for the garden of forking paths in data analysis.")

config = context.sso_config()
if config is not None:
    if not context.sso_ready():
        st.warning("Single sign-on is configured (FORKPATHS_OIDC_*), but this app was started without it: "
                   "start it with `forkpaths run`, which hands those settings to Streamlit. Sign in with your "
                   "forkpaths password meanwhile.", icon="⚠️")
    else:
        sso.set_browser_cookie()
        if (failed := sso.failed_return(config)) is not None:
            st.error(failed, icon="⚠️")
        if st.button(f"Sign in with {config.label}", type="primary", key="sign_in.sso"):
            context.start_sso(config)
        st.caption("New here? Your first sign-in asks an administrator for access.")
        st.divider()
        st.caption("Or with a forkpaths password")

with st.form("sign_in"):
    username = st.text_input("User name", key="sign_in.username")
    password = st.text_input("Password", type="password", key="sign_in.password")
    submitted = st.form_submit_button("Sign in", type="primary" if config is None else "secondary")

if submitted and context.sign_in(username, password):
    st.rerun()

if context.settings().first_admin_password_file.exists():
    st.caption(
        "First start? The admin's password was printed in the terminal that started forkpaths "
        "and saved in the data folder as first-admin-password.txt (removed once the admin changes it)."
    )

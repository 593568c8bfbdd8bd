"""Sign-in page."""

import streamlit as st

from annotate_app import context

st.title("🌿 forkpaths")
st.caption("Expert ground truth for the garden of forking paths in data analysis.")

with st.form("sign_in"):
    username = st.text_input("User name", key="sign_in.username")
    password = st.text_input("Password", type="password", key="sign_in.password")
    submitted = st.form_submit_button("Sign in", type="primary")

if submitted and context.sign_in(username, password):
    st.rerun()

if context.settings().first_admin_password_file.exists():
    st.caption(
        "First start? The admin's password was printed in the terminal that started forkpaths "
        "and saved in the data folder as first-admin-password.txt (removed once the admin changes it)."
    )

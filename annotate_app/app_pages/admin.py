"""Admin: create users, reset passwords, (de)activate accounts, change roles, assign analysts to datasets."""

import pandas as pd
import streamlit as st

from annotate_app import context, state
from annotate_app.text import md
from curation.models import Role
from curation.services.accounts import (
    MAX_PASSWORD_LENGTH,
    PASSWORD_RULE,
    create_user,
    list_users,
    reset_password,
    set_user_active,
    set_user_role,
)
from curation.services.checks import sandbox_isolation
from curation.services.datasets import ANNOTATING_ROLES, assign_analysts, assigned_user_ids, list_datasets

admin = context.require_user(Role.ADMIN)
st.title("🛡️ Users & assignments")
isolation = sandbox_isolation()
if isolation.weak:  # analysts' code is not (or cannot be) isolated by the operating system here
    st.warning(isolation.sentence(), icon="⚠️")
ROLES = [r.value for r in Role]

tab_users, tab_new, tab_assign = st.tabs(["Users", "New user", "Assign datasets"])

# Not clear_on_submit: a refused password must leave the other fields as typed; a created user gives the form
# fresh widgets (a new key) for the next one.
with tab_new, st.form(f"new_user.{state.form_version('new_user')}"):
    c1, c2, c3 = st.columns(3)
    username = c1.text_input("User name")
    display = c2.text_input("Display name")
    role = c3.selectbox("Role", ROLES)
    password = st.text_input("Initial password", type="password", help=PASSWORD_RULE,
                             max_chars=MAX_PASSWORD_LENGTH)
    if st.form_submit_button("Create user", type="primary"):
        made = context.attempt(lambda s: create_user(session=s, actor=admin, username=username, password=password,
                                                     role=Role(role), display_name=display))
        if made is not None:
            state.flash(f"Created {made.role} '{made.username}'.")
            state.bump_form("new_user")
            st.rerun()

users = context.attempt(lambda s: list_users(session=s, actor=admin)) or []
by_name = {u.username: u for u in users}

with tab_users:
    pending = [u.username for u in users if u.is_pending and u.is_active]
    if pending:
        st.info(f"Waiting for approval (first single sign-on): {', '.join(pending)}. Pick one under *Manage user* "
                "and give it a role.", icon="⏳")
    st.dataframe(
        pd.DataFrame([{"user": u.username, "name": u.display_name, "role": u.role or "pending approval",
                       "signs in with": "single sign-on" if u.oidc_subject else "password",
                       "active": u.is_active, "created": u.created_at} for u in users]),
        hide_index=True, width="stretch",
        column_config={"created": st.column_config.DatetimeColumn("created (UTC)", format="YYYY-MM-DD HH:mm")},
    )
    pick = st.selectbox("Manage user", list(by_name), key="admin.manage")
    target = by_name.get(pick)
    if target is not None:
        c1, c2, c3 = st.columns(3)
        if target.oidc_subject is not None:
            c1.caption(f"'{target.username}' signs in through single sign-on; the identity provider keeps the "
                       "password.")
        else:
            with c1.form("reset_pw", clear_on_submit=True):
                new_pw = st.text_input(f"New password for {target.username}", type="password",
                                       help=PASSWORD_RULE, max_chars=MAX_PASSWORD_LENGTH)
                if st.form_submit_button("Reset password"):
                    if context.attempt(lambda s: reset_password(
                            session=s, actor=admin, user_id=target.id or 0, new_password=new_pw,
                            first_admin_password_file=context.settings().first_admin_password_file)):
                        state.flash(f"Password of '{target.username}' reset; their open sessions ended.")
                        st.rerun()
        with c2.form("set_role"):
            new_role = st.selectbox("Role", ROLES, index=ROLES.index(target.role) if target.role in ROLES else None,
                                    placeholder="Choose a role")
            if st.form_submit_button("Approve with this role" if target.is_pending else "Change role"):
                if new_role is None:
                    st.error("Choose a role first.")
                elif context.attempt(lambda s: set_user_role(session=s, actor=admin, user_id=target.id or 0,
                                                           role=Role(new_role))):
                    state.flash(f"'{target.username}' is now {new_role}.")
                    st.rerun()
        label = "Deactivate account" if target.is_active else "Reactivate account"
        if c3.button(label, key="admin.toggle_active"):
            if context.attempt(lambda s: set_user_active(session=s, actor=admin, user_id=target.id or 0,
                                                         active=not target.is_active)):
                state.flash(f"'{target.username}' {'deactivated' if target.is_active else 'reactivated'}.")
                st.rerun()

with tab_assign:
    datasets = context.attempt(lambda s: list_datasets(session=s, actor=admin)) or []
    if not datasets:
        st.info("No datasets yet: register one on the Datasets page.")
    for ds in datasets:
        current = context.attempt(lambda s, d=ds: assigned_user_ids(session=s, dataset_id=d.id or 0)) or []
        names = [u.username for u in users if u.id in current]
        with st.form(f"assign_{ds.id}"):
            st.markdown(f"**{md(ds.name)}** — {md(ds.research_question)}")
            # only people who annotate: evaluators score agents (someone assigned before a role change stays
            # listed, so the admin can take them off)
            options = [u.username for u in users
                       if u.id in current or (u.is_active and u.role in ANNOTATING_ROLES)]
            chosen = st.multiselect("Assigned users (analysts, curators, admins)", options,
                                    default=names, key=f"assign.{ds.id}")
            if st.form_submit_button("Save assignments"):
                ids = [by_name[n].id or 0 for n in chosen]
                if context.attempt(lambda s, d=ds, i=ids: assign_analysts(session=s, actor=admin, dataset_id=d.id or 0,
                                                                          user_ids=i)) is not None:
                    state.flash(f"Assignments of '{ds.name}' saved.")
                    st.rerun()

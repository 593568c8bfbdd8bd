"""``forkpaths run``, ``init`` and ``create-user``: start the app (and its scoring worker), set up the database
and its accounts."""

from __future__ import annotations

import argparse
import getpass
import os
import shutil
import subprocess
import sys
from typing import TYPE_CHECKING, Any

from curation.account_rules import MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH, PASSWORD_RULE, Role

if TYPE_CHECKING:
    from curation.settings import Settings

# The settings, the database and the services are imported inside the commands (see curation/cli.py).

__all__ = ["PORTS_TRIED", "add_app_commands", "port_taken"]


def _ensure_bubblewrap(settings: Settings, *, install: bool) -> None:
    """Install Debian's bubblewrap when it is missing and the sandbox needs it (as root, with apt-get).

    Interactive runs are asked first; unattended runs as root install it. Otherwise say what to do.
    """
    if settings.sandbox != "bwrap" or shutil.which("bwrap"):
        return
    can = os.geteuid() == 0 and shutil.which("apt-get") is not None
    if can and install and sys.stdin.isatty():
        answer = input("  bubblewrap isolates analysts' code and is not installed. Install it now with apt-get? [Y/n] ")
        install = answer.strip().lower() in ("", "y", "yes")
    if not (can and install):
        print("  bubblewrap is not installed, so sanity checks will be refused: install it "
              "(apt-get install bubblewrap) or set FORKPATHS_SANDBOX=process for weak isolation.", flush=True)
        return
    print("  Installing bubblewrap (apt-get install bubblewrap), which isolates analysts' code…", flush=True)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-qq"], env=env, check=False)
    done = subprocess.run(["apt-get", "install", "-y", "-qq", "bubblewrap"], env=env, check=False)
    if done.returncode != 0:
        print("  Installing bubblewrap failed; sanity checks will be refused until it is installed.", flush=True)



PORTS_TRIED = 100
"""How many ports after the asked one ``forkpaths run`` tries when the asked one is taken."""



def port_taken(address: str | None, port: int) -> bool:
    """True when something already listens on ``port`` (at ``address``, or any address): another program, or
    another app, whose page a newcomer would open by mistake. Bound the way the app's server binds
    (SO_REUSEADDR: a port in TIME_WAIT is free), and asked on the loopback too (a server on 127.0.0.1 only)."""
    import socket

    host = address or ""
    try:
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except OSError:
        return False  # an address the server cannot use either: it says so itself
    for family, kind, proto, _name, where in infos:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(where)
            except OSError:
                return True
    with socket.socket() as client:
        client.settimeout(0.5)
        return client.connect_ex(("127.0.0.1" if host in ("", "0.0.0.0") else host, port)) == 0  # noqa: S104


def _free_port(address: str | None, port: int) -> int | None:
    """``port`` if it is free, else the next free one (None when none of the next PORTS_TRIED is), saying so."""
    if not port_taken(address, port):
        return port
    for other in range(port + 1, min(port + 1 + PORTS_TRIED, 65536)):
        if not port_taken(address, other):
            print(f"  Port {port} is taken: another program (perhaps another app) listens there. Using port "
                  f"{other} instead; choose one with --port.", flush=True)
            return other
    return None


def _cmd_run(args: argparse.Namespace, settings: Settings) -> int:
    from curation.bootstrap import initialise
    from curation.settings import PROJECT_ROOT

    port = _free_port(args.address, args.port)
    if port is None:
        print(f"Port {args.port} and the {PORTS_TRIED} after it are taken; choose a free one with --port.",
              file=sys.stderr, flush=True)
        return 2
    args.port = port
    _ensure_bubblewrap(settings, install=not args.no_install)
    report = initialise(settings)
    if report.generated_password:
        print(
            "\n  First start: an admin account was created.\n"
            f"    user name: {report.admin_username}\n    password:  {report.generated_password}\n"
            f"  (also saved in {report.password_file})\n",
            flush=True,
        )
    if report.starters_registered:
        print(f"  Starter datasets registered: {', '.join(report.starters_registered)}", flush=True)
    app = PROJECT_ROOT / "annotate_app" / "app.py"
    cmd = [sys.executable, "-m", "streamlit", "run", str(app), "--server.port", str(args.port),
           "--server.headless", "true", "--browser.gatherUsageStats", "false",
           "--client.toolbarMode", "minimal",  # no "Deploy" button
           "--server.maxUploadSize", str(settings.server_upload_mb)]  # each uploader states its own limit
    if args.address:
        cmd += ["--server.address", args.address]
    from curation.services.sso import streamlit_auth_args

    cmd += streamlit_auth_args(settings)  # single sign-on: the FORKPATHS_OIDC_* settings as Streamlit's [auth]
    print(f"  Open http://{args.address or 'localhost'}:{args.port} in your browser.\n", flush=True)
    if args.no_worker or not settings.resolved_database_url.startswith("postgresql"):
        os.execv(sys.executable, cmd)  # SQLite: the app scores runs in its own process
        return 0  # pragma: no cover
    # PostgreSQL: runs are scored by workers; one starts beside the app (more: `forkpaths worker` anywhere)
    worker = subprocess.Popen([sys.executable, "-m", "curation.cli", "worker"])
    print(f"  A scoring worker runs beside the app (pid {worker.pid}).\n", flush=True)
    try:
        return subprocess.call(cmd)
    finally:
        worker.terminate()
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            worker.kill()


def _cmd_init(_args: argparse.Namespace, settings: Settings) -> int:
    from curation.bootstrap import initialise

    report = initialise(settings)
    print(f"Database ready at {settings.resolved_database_url.split('@')[-1]}")
    if report.generated_password:
        print(f"First admin '{report.admin_username}', password: {report.generated_password}")
    return 0


def _cmd_create_user(args: argparse.Namespace, settings: Settings) -> int:
    from curation.bootstrap import initialise
    from curation.db import session_scope
    from curation.services.accounts import create_user, generate_password

    report = initialise(settings)
    if args.password_stdin:
        password = sys.stdin.readline().rstrip("\n")
    elif sys.stdin.isatty():
        password = getpass.getpass(f"Password for {args.username} ({MIN_PASSWORD_LENGTH} to {MAX_PASSWORD_LENGTH:,} "
                                   "characters; empty: generate one): ")
    else:
        password = ""
    generated = not password
    password = password or generate_password()
    with session_scope(report.engine) as session:
        user = create_user(session=session, actor=None, username=args.username, password=password,
                           role=Role(args.role), display_name=args.display_name or "")
        print(f"Created {user.role} '{user.username}'.")
    if generated:
        print(f"Generated password: {password}")
    return 0



def add_app_commands(sub: Any) -> None:
    run = sub.add_parser("run", help="start the web app (migrates the database first)")
    run.add_argument("--port", type=int, default=8501)
    run.add_argument("--address", default=None, help="address to listen on (default: all)")
    run.add_argument("--no-worker", action="store_true",
                     help="on PostgreSQL, do not start a scoring worker beside the app (run `forkpaths worker` "
                          "elsewhere)")
    run.add_argument("--no-install", action="store_true",
                     help="do not install bubblewrap when it is missing (it is installed as root with apt-get)")
    run.set_defaults(func=_cmd_run)
    sub.add_parser("init", help="create / migrate the database and the first admin").set_defaults(func=_cmd_init)
    cu = sub.add_parser("create-user", help="create an account")
    cu.add_argument("username")
    cu.add_argument("--role", choices=[r.value for r in Role], default=Role.ANALYST.value)
    cu.add_argument("--display-name")
    cu.add_argument("--password-stdin", action="store_true", help=f"read the password from standard input. {PASSWORD_RULE}")
    cu.set_defaults(func=_cmd_create_user)

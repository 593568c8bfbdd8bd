"""The attacks of issue 7, run as a hostile analyst's check code WITH THE AUDIT HOOK SWITCHED OFF.

The audit hook only explains refusals; these tests make sure the operating-system boundary (bubblewrap, the
job's namespaces, seccomp, rlimits) is what stops each attack. Every attack runs against a realistic data
directory inside the project folder (password file, SQLite database with password hashes and drafts, other
datasets) and a live "app" process (a small HTTP server with a secret in its environment) that must keep
serving afterwards.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

from evaluation.sandbox import SandboxLimits, TransformCheck, check_transform, isolation
from evaluation.sandbox import server as sandbox_server

PROJECT_ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "PASSWORD-SECRET-" + uuid.uuid4().hex
HASH = "$argon2id$v=19$HASH-SECRET-" + uuid.uuid4().hex
DRAFT = "DRAFT-SECRET-" + uuid.uuid4().hex
OTHER = "OTHER-DATASET-SECRET-" + uuid.uuid4().hex
ENV_SECRET = "ENV-SECRET-" + uuid.uuid4().hex

pytestmark = pytest.mark.usefixtures("os_sandbox")


@dataclass
class Scene:
    data_dir: Path
    data: Path
    password_file: Path
    db: Path
    other: Path
    app: subprocess.Popen[bytes]
    app_url: str

    def secrets(self) -> list[str]:
        return [PASSWORD, HASH, DRAFT, OTHER, ENV_SECRET]

    def app_serves(self) -> bool:
        try:
            with urllib.request.urlopen(self.app_url, timeout=5) as response:
                return response.status == 200
        except OSError:
            return False


@pytest.fixture(autouse=True)
def no_audit_hook() -> Iterator[None]:
    isolation.set_audit_hook(False)
    try:
        yield
    finally:
        isolation.set_audit_hook(True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def scene() -> Iterator[Scene]:
    # The default data directory lives in the project folder, next to the packages the sandbox can see.
    data_dir = PROJECT_ROOT / f".attack-data-{uuid.uuid4().hex[:8]}"
    (data_dir / "datasets" / "mine").mkdir(parents=True)
    (data_dir / "datasets" / "other").mkdir(parents=True)
    data = data_dir / "datasets" / "mine" / "data.csv"
    pd.DataFrame({"x": [1.0, 2.0, 3.0], "g": ["a", "b", "c"]}).to_csv(data, index=False)
    other = data_dir / "datasets" / "other" / "data.csv"
    other.write_text(f"secret\n{OTHER}\n")
    password_file = data_dir / "first-admin-password.txt"
    password_file.write_text(PASSWORD)
    db = data_dir / "forkpaths.db"
    with sqlite3.connect(db) as conn:
        conn.execute("create table user (name text, password_hash text, role text)")
        conn.execute("insert into user values ('analyst', ?, 'analyst')", (HASH,))
        conn.execute("create table draft (owner text, code text)")
        conn.execute("insert into draft values ('peer', ?)", (DRAFT,))
    port = _free_port()
    app = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(data_dir)],
        env={**os.environ, "FORKPATHS_DATABASE_URL": f"postgresql://app:{ENV_SECRET}@127.0.0.1:5432/app"},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 20
    result = Scene(data_dir, data, password_file, db, other, app, url)
    while not result.app_serves():
        assert time.monotonic() < deadline, "the stand-in app did not start"
        time.sleep(0.1)
    try:
        yield result
    finally:
        app.kill()
        app.wait()
        shutil.rmtree(data_dir, ignore_errors=True)


def attack(scene: Scene, code: str, **limits: object) -> TransformCheck:
    check = check_transform(data_path=scene.data, parent_codes=[], code=code, limits=SandboxLimits(**limits))
    leaked = [s for s in scene.secrets() if s in check.model_dump_json()]
    assert not leaked, f"the attack leaked {leaked}: {check.stdout!r} {check.error!r}"
    assert scene.app_serves(), "the app stopped serving"
    assert scene.password_file.read_text() == PASSWORD
    with sqlite3.connect(scene.db) as conn:
        assert conn.execute("select role from user").fetchall() == [("analyst",)]
    return check


def probe(scene: Scene, body: str, **limits: object) -> dict[str, object]:
    """Run ``body`` (which fills ``out``) and return ``out``: what the code could see or do."""
    code = "import json\nout = {}\n" + body + "\nprint('OUT' + json.dumps(out, default=str))"
    check = attack(scene, code, **limits)
    assert check.ok, check.error
    line = next(line for line in check.stdout.splitlines() if line.startswith("OUT"))
    return json.loads(line[3:])


def attempts(*statements: str) -> str:
    """Code that tries each statement and records how it failed (or what it returned) in ``out``."""
    lines = []
    for index, statement in enumerate(statements):
        lines += [
            "try:",
            f"    out[{index}] = repr({statement})[:200]",
            "except BaseException as exc:",
            f"    out[{index}] = 'FAILED ' + type(exc).__name__ + ': ' + str(exc)[:200]",
        ]
    return "\n".join(lines)


def assert_all_failed(out: dict[str, object]) -> None:
    succeeded = {k: v for k, v in out.items() if not str(v).startswith("FAILED")}
    assert not succeeded, f"these attempts succeeded: {succeeded}"


# ------------------------------------------------------------------------------------------------ reading secrets


def test_password_file_database_and_other_datasets_are_unreachable(scene: Scene) -> None:
    out = probe(scene, attempts(
        f"open({str(scene.password_file)!r}).read()",
        f"open({str(scene.other)!r}).read()",
        f"__import__('os').listdir({str(scene.data_dir)!r})",
        f"__import__('sqlite3').connect('file:{scene.db}?mode=ro', uri=True).execute('select * from user').fetchall()",
        f"__import__('sqlite3').connect({str(scene.db)!r}).execute(\"update user set role='admin'\")",
        "open('../job.json').read()",
        f"open({str(scene.data)!r}).read()",  # not even the job's own file: it came as a descriptor
    ))

    assert_all_failed(out)


def test_the_project_folder_shows_only_the_engine_packages(scene: Scene) -> None:
    out = probe(scene, "import os\n" + f"out['root'] = sorted(os.listdir({str(PROJECT_ROOT)!r}))")

    assert set(out["root"]) <= {"evaluation", "exports", ".venv"}  # type: ignore[arg-type]


def test_database_cannot_be_modified_even_by_path_guessing(scene: Scene) -> None:
    check = attack(scene, (
        "import sqlite3, glob\n"
        f"for path in glob.glob('/tmp/**/*.db', recursive=True) + glob.glob('{PROJECT_ROOT}/*/*.db'):\n"
        "    sqlite3.connect(path).execute(\"update user set role='admin'\")\n"
        f"conn = sqlite3.connect({str(scene.db)!r})\n"
        "conn.execute(\"update user set role='admin'\")\n"
        "conn.commit()"
    ))

    assert not check.ok
    assert check.error is not None and "OperationalError" in check.error


# -------------------------------------------------------------------------------------------- the app's process


def test_the_apps_environment_and_host_proc_are_unreachable(scene: Scene) -> None:
    pid = scene.app.pid
    out = probe(scene, "import os, ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n" + attempts(
        f"open('/proc/{pid}/environ').read()",
        "open('/proc/1/environ').read()",
        "open('/proc/self/environ').read()",
        f"os.readlink('/proc/{pid}/root')",
        "open('/dev/fd/0').read()",
        # Revealing what lies under the job's mounts, or mounting a procfs: refused by the kernel (-1).
        "libc.umount2(b'/proc', 2) == 0 or (_ for _ in ()).throw(OSError(ctypes.get_errno(), 'umount'))",
        "libc.mount(b'proc', b'/tmp', b'proc', 0, None) == 0 or (_ for _ in ()).throw(OSError('mount'))",
        "libc.unshare(0x10000000) == 0 and libc.mount(b'proc', b'/tmp', b'proc', 0, None) == 0 "
        "or (_ for _ in ()).throw(OSError('unshare+mount'))",
    ) + "\nout['proc'] = os.listdir('/proc')\nout['environ'] = dict(os.environ)")

    proc, environ = out.pop("proc"), out.pop("environ")
    assert_all_failed(out)
    assert proc == []
    assert not any(k.startswith("FORKPATHS") for k in environ)  # type: ignore[union-attr]


def test_tcp_to_postgres_and_to_the_app_fails(scene: Scene) -> None:
    port = int(scene.app_url.rsplit(":", 1)[1].strip("/"))
    out = probe(scene, "import socket, urllib.request\n" + attempts(
        "socket.create_connection(('127.0.0.1', 5432), timeout=3)",
        f"socket.create_connection(('127.0.0.1', {port}), timeout=3)",
        f"urllib.request.urlopen('http://127.0.0.1:{port}/first-admin-password.txt', timeout=3).read()",
        "socket.create_connection(('1.1.1.1', 53), timeout=3)",
        "socket.getaddrinfo('example.com', 80)",
    ))

    assert_all_failed(out)


def test_signalling_the_app_and_the_template_fails(scene: Scene) -> None:
    check_transform(data_path=scene.data, parent_codes=[], code="df['w'] = 1")  # the zygote is up
    zygote = sandbox_server._SANDBOX._zygote
    assert zygote is not None
    template_pids = process_tree(zygote.proc.pid)[:3]  # bubblewrap, its init, the zygote
    targets = [scene.app.pid, *template_pids, os.getpid()]
    body = "import os, signal\n" + attempts(
        *[f"os.kill({pid}, signal.SIGKILL)" for pid in targets],
        *[f"signal.pidfd_send_signal(os.pidfd_open({pid}), signal.SIGKILL)" for pid in targets],
        "os.killpg(0, signal.SIGKILL) if False else os.kill(-1, 0)",
    )
    out = probe(scene, body)

    out.pop(str(2 * len(targets)))  # kill(-1, 0) only reaches the job's own namespace: allowed, harmless
    not_failed = {k: v for k, v in out.items() if not str(v).startswith("FAILED")}
    # A pid number may exist inside the job's namespace (its own processes); then the signal hit the job only.
    assert all(int(k) % len(targets) != 0 for k in not_failed), not_failed  # the app's pid
    for pid in [scene.app.pid, *template_pids, os.getpid()]:
        os.kill(pid, 0)  # all still alive
    assert scene.app_serves()
    assert check_transform(data_path=scene.data, parent_codes=[], code="df['w'] = 2").ok


def test_kill_everything_visible_hurts_only_the_job(scene: Scene) -> None:
    check = attack(scene, "import os, signal\nos.kill(-1, signal.SIGKILL)\nimport time\ntime.sleep(5)")
    after = check_transform(data_path=scene.data, parent_codes=[], code="df['w'] = 1")

    assert not check.ok
    assert after.ok


# ------------------------------------------------------------------------------------------------ processes


def test_a_setsid_child_does_not_outlive_the_job(scene: Scene) -> None:
    check = attack(scene, (
        "import os, subprocess\n"
        "os.setsid()\n"
        "subprocess.Popen(['/bin/sleep', '317.25'], start_new_session=True)"
    ))
    forked = attack(scene, "import os, time\nos.setsid()\nif os.fork() == 0:\n    time.sleep(317.25)")

    assert not check.ok and not forked.ok
    time.sleep(0.5)
    assert job_processes() == []
    assert not any("sleep 317.25" in cmdline(pid) for pid in all_pids())


def test_fork_bomb_is_stopped(scene: Scene) -> None:
    started = time.monotonic()
    check = attack(scene, "import os\nwhile True:\n    os.fork()", timeout_s=10)

    assert not check.ok
    assert check.error is not None and ("BlockingIOError" in check.error or "PermissionError" in check.error)
    assert time.monotonic() - started < 10
    assert job_processes() == []


def test_threads_still_work(scene: Scene) -> None:
    out = probe(scene, (
        "import threading\nbox = []\nt = threading.Thread(target=lambda: box.append(1))\nt.start(); t.join()\n"
        "out['threads'] = box"
    ))

    assert out["threads"] == [1]


# --------------------------------------------------------------------------------------------- files, memory


def test_writes_outside_the_scratch_directory_fail(scene: Scene) -> None:
    target = PROJECT_ROOT / "evaluation" / f"evil_{uuid.uuid4().hex}.py"
    out = probe(scene, "import os\n" + attempts(
        f"open({str(target)!r}, 'w').write('x')",
        f"open({str(scene.data_dir / 'evil.txt')!r}, 'w').write('x')",
        f"df.to_csv({str(scene.data)!r})",
        f"os.remove({str(scene.password_file)!r})",
        "open('/usr/evil', 'w').write('x')",
        "open('/evil', 'w').write('x')",
        "open('/dev/evil', 'w').write('x')",
    ) + "\nopen('fine.txt', 'w').write('scratch is writable')\nout['scratch'] = open('fine.txt').read()"
      + FSTAT + "out['inodes'] = [ino for fd in range(64) if (ino := inode(fd))]")

    scratch, inodes = out.pop("scratch"), out.pop("inodes")
    assert_all_failed(out)
    assert scratch == "scratch is writable"
    assert not target.exists() and not (scene.data_dir / "evil.txt").exists()
    assert pd.read_csv(scene.data).shape == (3, 2)
    assert scene.data.stat().st_ino not in inodes  # no descriptor of the data file is left to the code


def test_two_jobs_cannot_see_each_others_files_or_processes(scene: Scene) -> None:
    writer_code = (
        "import os, time\n"
        "open('/tmp/peer-secret.txt', 'w').write('PEER')\n"
        "open('/dev/shm/peer-secret', 'w').write('PEER')\n"
        "open('peer-draft.txt', 'w').write('PEER')\n"
        "time.sleep(4)\n"
        "df['still_there'] = open('/tmp/peer-secret.txt').read()"
    )
    results: dict[str, TransformCheck] = {}
    writer = threading.Thread(target=lambda: results.update(
        writer=check_transform(data_path=scene.data, parent_codes=[], code=writer_code)))
    writer.start()
    time.sleep(1.5)
    out = probe(scene, "import os, glob\n" + attempts(
        "open('/tmp/peer-secret.txt').read()",
        "open('/dev/shm/peer-secret').read()",
        "glob.glob('/tmp/**/peer*', recursive=True) or (_ for _ in ()).throw(LookupError('none'))",
    ) + ALIVE + "out['pids'] = [p for p in range(1, 500) if alive(p)]")
    writer.join(timeout=60)

    pids = out.pop("pids")
    assert_all_failed(out)
    assert pids == [1, 2, 3]  # only its own namespace's init, its job's measuring process and itself
    assert results["writer"].ok, results["writer"].error
    assert results["writer"].preview[0]["still_there"] == "PEER"


@pytest.mark.parametrize(
    "code",
    ["x = bytearray(40 * 1024**3)", "a = np.ones(1024**3 // 8)", "chunks = [bytearray(50 * 1024**2) for _ in range(40)]"],
)
def test_memory_beyond_the_limit_fails(scene: Scene, code: str) -> None:
    check = attack(scene, code, memory_mb=512)

    assert not check.ok and check.error_kind in ("memory", "exception"), check.error
    assert check.error is not None and ("memory" in check.error.lower() or "MemoryError" in check.error)


def test_filling_the_scratch_disk_is_bounded(scene: Scene) -> None:
    check = attack(scene, (
        "block = b'x' * (1024 * 1024)\n"
        "for i in range(200):\n"
        "    with open(f'f{i}.bin', 'wb') as f:\n"
        "        for _ in range(8):\n"
        "            f.write(block)"
    ), max_file_mb=32)

    assert not check.ok
    assert check.error is not None and ("No space left" in check.error or "File too large" in check.error
                                        or "SIGXFSZ" in check.error)


# ------------------------------------------------------------------------------------------------- helpers


FSTAT = """
def inode(fd):
    try:
        return os.fstat(fd).st_ino
    except OSError:
        return None
"""
ALIVE = """
def alive(p):
    try:
        os.kill(p, 0)
        return True
    except OSError:
        return False
"""


def process_tree(pid: int) -> list[int]:
    found = [pid]
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as handle:
                children = handle.read().split()
        except OSError:
            continue
        for child in children:
            found += process_tree(int(child))
    return found


def job_processes() -> list[int]:
    """Live processes of jobs (see tests/evaluation/test_sandbox.py), after a moment to end."""
    from tests.evaluation.test_sandbox import job_processes as live_jobs

    deadline = time.monotonic() + 5
    while True:
        live = live_jobs()
        if not live or time.monotonic() > deadline:
            return live
        time.sleep(0.1)


def all_pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def test_the_audit_hook_is_really_off_here(scene: Scene) -> None:
    # Without the hook the refusal is the operating system's, not the interpreter's.
    check = attack(scene, "import socket\nsocket.create_connection(('127.0.0.1', 5432), timeout=3)")

    assert check.error_kind == "exception"
    assert check.error is not None and "[forkpaths-sandbox]" not in check.error
    assert "OSError" in check.error or "unreachable" in check.error or "refused" in check.error



def test_a_credentials_file_next_to_the_app_is_unreachable(scene: Scene, monkeypatch: pytest.MonkeyPatch) -> None:
    # The app's working directory (or script folder) is on sys.path and may hold a .env with credentials.
    home = PROJECT_ROOT / f".attack-home-{uuid.uuid4().hex[:8]}"
    home.mkdir()
    (home / ".env").write_text(f"FORKPATHS_LLM_API_KEY={ENV_SECRET}\n")
    monkeypatch.syspath_prepend(str(home))
    sandbox_server.shutdown()  # the next zygote is started with this sys.path
    try:
        out = probe(scene, attempts(f"open({str(home / '.env')!r}).read()", f"__import__('os').listdir({str(home)!r})"))
    finally:
        shutil.rmtree(home, ignore_errors=True)
        sandbox_server.shutdown()

    assert_all_failed(out)

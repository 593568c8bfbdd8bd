"""A long terminal command draws one progress line, redrawn in place on a terminal, and nothing elsewhere."""

from __future__ import annotations

import io
import os
import pty
import subprocess
import sys
from pathlib import Path

from curation.cli_progress import ProgressBar


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_the_bar_is_one_line_redrawn_in_place():
    out = _Terminal()
    bar = ProgressBar(out)
    for done in range(26):
        bar(done, 25, f"dataset {done}")
    text = out.getvalue()
    assert "\n" not in text  # 26 updates, not 26 lines
    assert text.count("\r") >= 26 and "25/25 dataset 25" in text
    assert text.endswith("\r")  # cleared at the end: the summary that follows starts on a clean line


def test_elsewhere_the_bar_prints_nothing():
    out = io.StringIO()
    bar = ProgressBar(out)
    for done in range(26):
        bar(done, 25, "x")
    bar.fraction("done", 1.0)
    assert out.getvalue() == ""


def test_release_create_on_a_terminal_redraws_one_line(tmp_path: Path, shared_blade):
    env = {**os.environ, "FORKPATHS_DATA_DIR": str(tmp_path / "data"), "FORKPATHS_LOAD_STARTER_DATASETS": "false",
           "FORKPATHS_ADMIN_PASSWORD": "admin password 1"}
    env.pop("FORKPATHS_DATABASE_URL", None)
    subprocess.run([sys.executable, "-m", "curation.cli", "import-blade", str(shared_blade / "datasets" / "hurricane")],
                   env=env, cwd=tmp_path, check=True, capture_output=True, timeout=120)
    leader, follower = pty.openpty()
    try:
        done = subprocess.run([sys.executable, "-m", "curation.cli", "release", "create", "--version", "1.0.0"],
                              env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=follower, timeout=120)
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal is closed and drained
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(leader)
    terminal = b"".join(chunks).decode()
    assert done.returncode == 0
    assert b"Release 1.0.0 cut" in done.stdout
    assert terminal.count("\r") > 2 and "%" in terminal  # drawn and redrawn in place ...
    assert "\n" not in terminal  # ... on one line (a terminal shows each newline as \r\n), without INFO logs
    assert "INFO" not in terminal

"""Release tampering and the releases folder's upkeep, through the services, on SQLite and PostgreSQL.

Every attack is made on the real files: a zip member replaced, zip bytes flipped, a MANIFEST rewritten with
matching checksums, a writer killed after publishing (a forked process that exits before committing), and
leftovers of interrupted writes found at start.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import logging
import os
import shutil
import zipfile
from pathlib import Path

import pytest
from sqlmodel import Session, select

from curation.bootstrap import initialise
from curation.db import session_scope
from curation.errors import NotFoundError, ReleaseError
from curation.models import ReleaseRecord, Role
from curation.services import release_exports as rex
from curation.services import releases as rel
from curation.services.annotation import submit_analysis
from curation.services.release_store import (
    WriterLock,
    reconcile_release_store,
    release_store_problems,
)
from curation.services.scoring import verified_release
from curation.settings import Settings
from exports.manifest import MANIFEST_NAME, render_manifest
from exports.native import read_release
from exports.release_folder import QUARANTINE_DIR, list_set_aside
from tests import factories as f
from tests.factories import artifacts_for

DATA = "data/storms/data.csv"


@pytest.fixture
def tiny(engine, store, tmp_path):
    curator = f.user(engine, "curator-t", Role.CURATOR)
    ana = f.user(engine, "analyst-t")
    ds = f.dataset(engine, store, assign=[ana])
    f.full_analysis(engine, ana, ds.id)
    with session_scope(engine) as s:
        submit_analysis(session=s, actor=ana, dataset_id=ds.id)
    w = {"engine": engine, "curator": curator, "ana": ana, "root": tmp_path / "releases", "store": store,
         "tmp": tmp_path}
    _cut(w, "1.0.0")
    return w


def _cut(w, version):
    with session_scope(w["engine"]) as s:
        return rel.cut_release(session=s, actor=w["curator"], version=version, notes="", artifacts=artifacts_for(w["root"]),
                               store=w["store"])


def _record(w, version="1.0.0") -> ReleaseRecord:
    with session_scope(w["engine"]) as s:
        return s.exec(select(ReleaseRecord).where(ReleaseRecord.version == version)).one()


def _forget_zip_hash(w, version="1.0.0"):
    """What a release cut before revision 0005 looks like: no zip hash recorded."""
    with session_scope(w["engine"]) as s:
        record = s.exec(select(ReleaseRecord).where(ReleaseRecord.version == version)).one()
        record.zip_sha256 = None
        s.add(record)


def _every_read(w, tmp_path):
    """Each service that hands out or shows the release; each must refuse a tampered one."""
    yield lambda s: rex.release_archive(session=s, actor=w["curator"], version="1.0.0", fmt="native",
                                        artifacts=artifacts_for(w["root"]))
    yield lambda s: rex.release_archive(session=s, actor=w["curator"], version="1.0.0", fmt="blade",
                                        artifacts=artifacts_for(w["root"]))
    yield lambda s: rex.export_release(session=s, actor=w["curator"], version="1.0.0", fmt="native",
                                       out=tmp_path / "out-native", artifacts=artifacts_for(w["root"]))
    yield lambda s: rel.read_release_for(session=s, actor=w["curator"], version="1.0.0",
                                         artifacts=artifacts_for(w["root"]))


def _assert_refused_everywhere(w, tmp_path, pattern):
    for read in _every_read(w, tmp_path):
        with session_scope(w["engine"]) as s, pytest.raises(ReleaseError, match=pattern):
            read(s)
    assert not (tmp_path / "out-native").exists()
    # what `forkpaths gt build VERSION` and scoring read is the release in the artifact store, by the MANIFEST
    # hash recorded at the cut: the published copy's damage does not reach it (the store's own is refused, see
    # tests/curation/test_run_artifacts.py)
    with session_scope(w["engine"]) as s:
        _, folder = verified_release(session=s, actor=w["curator"], release_version="1.0.0",
                                     artifacts=artifacts_for(w["root"]))
    assert _sha((folder / MANIFEST_NAME).read_bytes()) == _record(w).manifest_sha256
    assert folder.is_relative_to(w["tmp"] / "cache")


def _rezip(zip_path: Path, replace: dict[str, bytes]) -> None:
    """Rewrite the zip with the same members, in the same order, some with new content."""
    with zipfile.ZipFile(zip_path) as zf:
        members = [(info, zf.read(info)) for info in zf.infolist()]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as out:
        for info, data in members:
            rel_name = info.filename.partition("/")[2]
            out.writestr(info, replace.get(rel_name, data))
    zip_path.write_bytes(buffer.getvalue())


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_a_fresh_release_records_both_hashes_and_reads_back(tiny):
    record = _record(tiny)
    folder = tiny["root"] / "1.0.0"
    assert record.manifest_sha256 == _sha((folder / MANIFEST_NAME).read_bytes())
    assert record.zip_sha256 == _sha((tiny["root"] / "1.0.0.zip").read_bytes())
    with session_scope(tiny["engine"]) as s:
        name, data = rex.release_archive(session=s, actor=tiny["curator"], version="1.0.0", fmt="native",
                                         artifacts=artifacts_for(tiny["root"]))
    assert name == "forkpaths-1.0.0.zip" and data == (tiny["root"] / "1.0.0.zip").read_bytes()


@pytest.mark.parametrize("recorded", [True, False], ids=["zip-hash-recorded", "cut-before-zip-hashes"])
def test_a_replaced_zip_member_is_refused(tiny, tmp_path, recorded):
    if not recorded:
        _forget_zip_hash(tiny)
    zip_path = tiny["root"] / "1.0.0.zip"
    with zipfile.ZipFile(zip_path) as zf:
        original = zf.read(f"1.0.0/{DATA}")
    _rezip(zip_path, {DATA: original.replace(b"256", b"999")})
    _assert_refused_everywhere(tiny, tmp_path, rf"(?s)modified after it was cut.*{DATA}: content differs")
    assert _record(tiny).zip_sha256 == (_record(tiny).zip_sha256 if recorded else None)  # never trusted


def test_a_replaced_zip_member_with_its_zip_manifest_rewritten_is_refused(tiny, tmp_path):
    _forget_zip_hash(tiny)  # the harder case: only the MANIFEST hash stands between the attacker and the user
    zip_path = tiny["root"] / "1.0.0.zip"
    with zipfile.ZipFile(zip_path) as zf:
        files = {i.filename.partition("/")[2]: zf.read(i) for i in zf.infolist()}
    files[DATA] = files[DATA].replace(b"256", b"999")
    document = json.loads(files["release.json"])
    document["datasets"][0]["data_sha256"] = _sha(files[DATA])
    files["release.json"] = (json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()
    manifest = render_manifest({k: _sha(v) for k, v in files.items() if k != MANIFEST_NAME}).encode()
    _rezip(zip_path, {DATA: files[DATA], "release.json": files["release.json"], MANIFEST_NAME: manifest})
    assert read_release(zip_path).datasets[0].data_sha256 == _sha(files[DATA])  # consistent on its own
    _assert_refused_everywhere(tiny, tmp_path, r"MANIFEST: its SHA-256 .* recorded when the release was cut")


@pytest.mark.parametrize("where", ["member data", "central directory timestamp", "appended byte"])
def test_flipped_zip_bytes_are_refused(tiny, tmp_path, where):
    zip_path = tiny["root"] / "1.0.0.zip"
    data = bytearray(zip_path.read_bytes())
    if where == "member data":
        offset = len(data) // 3
    elif where == "central directory timestamp":
        offset = data.rindex(b"PK\x01\x02") + 12  # the last entry's modification time: members still read fine
    if where == "appended byte":
        data.append(0)
    else:
        data[offset] ^= 0x01
    zip_path.write_bytes(bytes(data))
    _assert_refused_everywhere(tiny, tmp_path, r"(?s)modified after it was cut.*1\.0\.0\.zip: its SHA-256")


def test_a_damaged_zip_of_a_release_without_zip_hash_is_refused(tiny, tmp_path):
    _forget_zip_hash(tiny)
    zip_path = tiny["root"] / "1.0.0.zip"
    zip_path.write_bytes(zip_path.read_bytes()[:-30])  # truncated: the end of the central directory is gone
    _assert_refused_everywhere(tiny, tmp_path, r"damaged or truncated")


def test_a_missing_zip_is_refused(tiny, tmp_path):
    (tiny["root"] / "1.0.0.zip").unlink()
    _assert_refused_everywhere(tiny, tmp_path, r"1\.0\.0\.zip: the zip is missing")


def test_a_manifest_rewritten_with_matching_hashes_is_refused(tiny, tmp_path):
    folder = tiny["root"] / "1.0.0"
    data = folder / DATA
    data.write_bytes(data.read_bytes().replace(b"256", b"999"))
    document = json.loads((folder / "release.json").read_text())
    document["datasets"][0]["data_sha256"] = _sha(data.read_bytes())
    (folder / "release.json").write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
    files = [p for p in folder.rglob("*") if p.is_file() and p.name != MANIFEST_NAME]
    (folder / MANIFEST_NAME).write_text(
        render_manifest({p.relative_to(folder).as_posix(): _sha(p.read_bytes()) for p in files}))
    assert read_release(folder).version == "1.0.0"  # the manifest alone no longer sees anything wrong
    _assert_refused_everywhere(tiny, tmp_path, r"(?s)release folder .* modified after it was cut and must not "
                                               r"be used:\n- MANIFEST: its SHA-256 .* rewritten")


def test_a_release_cut_before_zip_hashes_gets_one_on_its_first_full_check(tiny, caplog):
    _forget_zip_hash(tiny)
    with caplog.at_level(logging.WARNING, logger="curation.services.releases"), session_scope(tiny["engine"]) as s:
        rel.read_release_for(session=s, actor=tiny["curator"], version="1.0.0", artifacts=artifacts_for(tiny["root"]))
    assert _record(tiny).zip_sha256 == _sha((tiny["root"] / "1.0.0.zip").read_bytes())
    assert "zip's SHA-256" in caplog.text and "recorded now" in caplog.text
    zip_path = tiny["root"] / "1.0.0.zip"  # from now on a change anywhere in the zip is caught
    zip_path.write_bytes(zip_path.read_bytes() + b"\0")
    with session_scope(tiny["engine"]) as s, pytest.raises(ReleaseError, match="its SHA-256"):
        rel.read_release_for(session=s, actor=tiny["curator"], version="1.0.0", artifacts=artifacts_for(tiny["root"]))


def test_a_writer_killed_after_publishing_leaves_files_that_are_set_aside_and_reported(tiny):
    engine = tiny["engine"]
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child: cut, then die before the transaction commits
        code = 1
        try:
            engine.dispose(close=False)  # the parent's pooled connections are not the child's
            session = Session(engine)
            rel.cut_release(session=session, actor=tiny["curator"], version="1.0.1", notes="",
                            artifacts=artifacts_for(tiny["root"]), store=tiny["store"])
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    root = tiny["root"]
    assert (root / "1.0.1").is_dir() and (root / "1.0.1.zip").is_file()  # published, never recorded
    with session_scope(engine) as s:
        assert [r.version for r in rel.list_release_records(session=s, actor=tiny["curator"])] == ["1.0.0"]
        with pytest.raises(NotFoundError, match="There is no release 1.0.1"):
            rex.release_archive(session=s, actor=tiny["curator"], version="1.0.1", fmt="native", artifacts=artifacts_for(root))
    with session_scope(engine) as s:
        report = reconcile_release_store(session=s, artifacts=artifacts_for(root))
    assert sorted(x.name for x in report.set_aside) == ["1.0.1", "1.0.1.zip"] and report.skipped is None
    assert not (root / "1.0.1").exists() and (root / QUARANTINE_DIR).is_dir()
    assert all((x.path / "release.json").is_file() for x in report.set_aside if x.name == "1.0.1")  # kept
    with session_scope(engine) as s:
        problems = release_store_problems(session=s, actor=tiny["curator"], artifacts=artifacts_for(root))
    assert len(problems) == 2 and all("no release record was ever committed" in p for p in problems)
    _cut(tiny, "1.0.1")  # the version is free; the new 1.0.1 is intact
    with session_scope(engine) as s:
        view = rel.read_release_for(session=s, actor=tiny["curator"], version="1.0.1", artifacts=artifacts_for(root))
    assert view.release.version == "1.0.1"


def test_the_folder_is_left_alone_while_a_cut_holds_the_writer_lock(tiny):
    root = tiny["root"]
    shutil.copytree(root / "1.0.0", root / "7.0.0")  # looks unrecorded, but its writer may be alive
    lock = WriterLock(root)
    assert lock.try_acquire()
    try:
        with session_scope(tiny["engine"]) as s:
            report = reconcile_release_store(session=s, artifacts=artifacts_for(root))
    finally:
        lock.release()
    assert report.skipped and "being cut right now" in report.skipped
    assert (root / "7.0.0").is_dir() and list_set_aside(root) == []


def test_a_recorded_release_whose_files_are_gone_is_reported(tiny):
    shutil.rmtree(tiny["root"] / "1.0.0")
    with session_scope(tiny["engine"]) as s:
        report = reconcile_release_store(session=s, artifacts=artifacts_for(tiny["root"]))
        problems = release_store_problems(session=s, actor=tiny["curator"], artifacts=artifacts_for(tiny["root"]))
    assert report.missing == problems and len(problems) == 1 and "1.0.0 is recorded but" in problems[0]


def test_start_up_cleans_partials_and_sets_aside_unrecorded_releases(tmp_path, monkeypatch):
    monkeypatch.setenv("FORKPATHS_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("FORKPATHS_ADMIN_PASSWORD", "admin password 1")
    monkeypatch.setenv("FORKPATHS_LOAD_STARTER_DATASETS", "false")
    monkeypatch.delenv("FORKPATHS_DATABASE_URL", raising=False)
    settings = Settings()
    engine = initialise(settings).engine
    curator = f.user(engine, "cur", Role.CURATOR)
    f.dataset(engine, settings.datasets_store)
    root = settings.releases_store
    with session_scope(engine) as s:
        rel.cut_release(session=s, actor=curator, version="1.0.0", notes="", artifacts=artifacts_for(root),
                        store=settings.datasets_store, include_empty=True)
    # Leftovers of a writer that died mid-write; its pid now belongs to a live process (here: this one).
    partial_dir = root / f".1.0.1.partial-{os.getpid()}-0a1b2c3d"
    (partial_dir / "data").mkdir(parents=True)
    (partial_dir / "release.json").write_text("{}")
    partial_zip = root / f".1.0.1.zip.partial-{os.getpid()}-0a1b2c3d"
    partial_zip.write_bytes(b"PK")
    shutil.copytree(root / "1.0.0", root / "1.0.1")  # published by a writer killed before it committed
    engine.dispose()

    report = initialise(settings)
    try:
        assert sorted(p.name for p in report.releases.removed_partials) == sorted([partial_dir.name,
                                                                                   partial_zip.name])
        assert not partial_dir.exists() and not partial_zip.exists()
        assert [x.name for x in report.releases.set_aside] == ["1.0.1"] and not (root / "1.0.1").exists()
        assert sorted(p.name for p in root.iterdir()) == [".writer.lock", "1.0.0", "1.0.0.zip", QUARANTINE_DIR]
        with session_scope(report.engine) as s:
            assert rel.read_release_for(session=s, actor=curator, version="1.0.0",
                                        artifacts=artifacts_for(root)).release.version == "1.0.0"
    finally:
        report.engine.dispose()


@pytest.mark.parametrize("commit", [True, False], ids=["committed", "rolled-back"])
def test_one_transaction_may_cut_several_releases(tiny, commit):
    root = tiny["root"]
    expected = contextlib.nullcontext() if commit else pytest.raises(RuntimeError)
    with expected, session_scope(tiny["engine"]) as s:
        for version in ("1.1.0", "1.2.0"):
            rel.cut_release(session=s, actor=tiny["curator"], version=version, notes="", artifacts=artifacts_for(root),
                            store=tiny["store"])
        if not commit:
            raise RuntimeError("the rest of the action failed")
    lock = WriterLock(root)  # the transaction's end let go of the lock
    assert lock.try_acquire()
    lock.release()
    if commit:
        with session_scope(tiny["engine"]) as s:
            view = rel.read_release_for(session=s, actor=tiny["curator"], version="1.2.0", artifacts=artifacts_for(root))
        assert view.release.previous_version == "1.1.0"
    else:
        assert sorted(x.name for x in list_set_aside(root)) == ["1.1.0", "1.1.0.zip", "1.2.0", "1.2.0.zip"]
        assert sorted(p.name for p in root.iterdir() if not p.name.startswith(".")) == [
            "1.0.0", "1.0.0.zip", QUARANTINE_DIR]


def test_a_cut_that_fails_while_writing_lets_go_of_the_writer_lock(tiny):
    data = next(tiny["store"].rglob("data.csv"))
    original = data.read_bytes()
    data.write_bytes(original + b"1,1,1,1\n")  # changed after registration: the writer refuses it
    with session_scope(tiny["engine"]) as s, pytest.raises(ReleaseError, match="could not be written"):
        rel.cut_release(session=s, actor=tiny["curator"], version="1.0.1", notes="", artifacts=artifacts_for(tiny["root"]),
                        store=tiny["store"])
    lock = WriterLock(tiny["root"])
    assert lock.try_acquire()
    lock.release()
    data.write_bytes(original)
    assert _cut(tiny, "1.0.1").zip_sha256
    assert list_set_aside(tiny["root"]) == []


def _cli_on(tiny, tmp_path, monkeypatch) -> None:
    """The command line's settings pointed at ``tiny``'s database and data folder."""
    url = tiny["engine"].url.render_as_string(hide_password=False)
    if tiny["engine"].dialect.name == "postgresql":  # the fixture's schema of its own, as the command's option
        with tiny["engine"].connect() as conn:
            url += "?options=-csearch_path%3D" + str(conn.exec_driver_sql("SELECT current_schema()").scalar())
    monkeypatch.setenv("FORKPATHS_DATA_DIR", str(tmp_path))  # its releases/ is where tiny cut 1.0.0
    monkeypatch.setenv("FORKPATHS_DATABASE_URL", url)
    monkeypatch.setenv("FORKPATHS_LOAD_STARTER_DATASETS", "false")
    monkeypatch.setenv("FORKPATHS_ADMIN_PASSWORD", "not-used-here-1")


def test_cli_gt_build_reads_a_release_version_only_once_verified(tiny, tmp_path, monkeypatch, capsys):
    """`forkpaths gt build VERSION` refuses what scoring refuses: an unrecorded version, a rewritten MANIFEST."""
    from curation.cli import main

    _cli_on(tiny, tmp_path, monkeypatch)
    assert main(["gt", "build", "9.9.9", "--as", "curator-t"]) == 2
    assert "There is no release 9.9.9 (releases: 1.0.0)" in capsys.readouterr().err
    assert main(["gt", "build", "1.0.0", "--as", "analyst-t"]) == 2  # ground truth is for scoring roles
    assert "evaluator" in capsys.readouterr().err

    # the release is read from the artifact store: its data and its MANIFEST rewritten there, consistently
    folder = tiny["root"] / "1.0.0"
    files = {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*")
             if p.is_file() and p.name != MANIFEST_NAME}
    files[DATA] = files[DATA].replace(b"256", b"999")
    artifacts = artifacts_for(tiny["root"])
    for data in files.values():
        artifacts.put_bytes(data)
    manifest = artifacts.object_path(_record(tiny).manifest_sha256)
    manifest.chmod(0o644)
    manifest.write_text(render_manifest({rel: _sha(data) for rel, data in files.items()}))
    shutil.rmtree(artifacts.releases_cache, ignore_errors=True)
    assert main(["gt", "build", "1.0.0", "--as", "curator-t", "--json"]) == 2
    captured = capsys.readouterr()
    assert "The MANIFEST of release 1.0.0 (sha256" in captured.err and "is damaged" in captured.err
    assert captured.out == ""  # nothing was built from the tampered files


def test_cli_gt_build_of_a_release_version_parses_its_release_once(tiny, tmp_path, monkeypatch, capsys):
    """The release read (and checked) for `forkpaths gt build VERSION` is the one built from: its release.json is
    parsed once per command, not again by the build (every parse is counted, the real one runs)."""
    import exports.native.read as reader
    from curation.cli import main

    _cli_on(tiny, tmp_path, monkeypatch)
    parsed: list[str] = []
    real = reader.parse_release_json

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        parsed.append(kwargs.get("source", ""))
        return real(*args, **kwargs)

    monkeypatch.setattr(reader, "parse_release_json", counted)
    assert main(["gt", "build", "1.0.0", "--as", "curator-t", "--json"]) == 0
    out = capsys.readouterr().out
    assert [json.loads(line)["dataset"] for line in out.splitlines()] == ["storms"]
    assert len(parsed) == 1, parsed

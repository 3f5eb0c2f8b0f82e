"""A searched .env is read only when no other user can change it (issue 33, item 1).

The mode bits are not the whole answer: a POSIX ACL entry or a group that holds
other people lets a stranger edit LMREG_BASE_URL and receive the appSecret; and
``${LMREG_APP_SECRET}`` inside a planted value must never be expanded. The real
cases use ``setfacl`` and a second local user made for the test (root only,
removed after); the ACL parser is also tested on bytes, so it is tested everywhere.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from lmreg_nb.file_trust import (
    GROUP_OBJ,
    MASK,
    OTHER,
    USER,
    USER_OBJ,
    AclEntry,
    others_can_write,
    parse_posix_acl,
)
from lmreg_nb.settings import Settings

ENV_FILE = "LMREG_BASE_URL=https://stranger.example\nLMREG_APP_ID=file-app\n"

_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
_TOOLS = all(shutil.which(t) for t in ("useradd", "userdel", "groupadd", "groupdel"))
needs_users = pytest.mark.skipif(
    not (_ROOT and _TOOLS),
    reason="needs root and useradd/groupadd to make a second local user for the test",
)
needs_setfacl = pytest.mark.skipif(
    shutil.which("setfacl") is None, reason="setfacl is not installed (Debian: apt-get install acl)"
)


def _acl(*entries: tuple[int, int, int]) -> bytes:
    return struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *e) for e in entries)


def test_the_acl_parser_reads_the_kernels_layout() -> None:
    # The bytes `setfacl -m u:1001:rw` leaves in system.posix_acl_access.
    raw = bytes.fromhex(
        "0200000001000600ffffffff02000600e903000004000400ffffffff10000600ffffffff20000400ffffffff"
    )
    assert parse_posix_acl(raw) == [
        AclEntry(USER_OBJ, 6, 0xFFFFFFFF),
        AclEntry(USER, 6, 1001),
        AclEntry(GROUP_OBJ, 4, 0xFFFFFFFF),
        AclEntry(MASK, 6, 0xFFFFFFFF),
        AclEntry(OTHER, 4, 0xFFFFFFFF),
    ]
    for broken in (b"", b"\x02\x00\x00", _acl((USER_OBJ, 6, 0))[:-1], b"\x01\x00\x00\x00"):
        with pytest.raises(ValueError):
            parse_posix_acl(broken)


@pytest.mark.parametrize(
    ("entries", "writable"),
    [
        ([(USER_OBJ, 6, 0), (USER, 6, 4242), (GROUP_OBJ, 4, 0), (MASK, 6, 0), (OTHER, 4, 0)], True),
        # The mask takes write away from the named user: nobody else can write.
        (
            [(USER_OBJ, 6, 0), (USER, 6, 4242), (GROUP_OBJ, 4, 0), (MASK, 4, 0), (OTHER, 4, 0)],
            False,
        ),
        (
            [(USER_OBJ, 6, 0), (USER, 4, 4242), (GROUP_OBJ, 4, 0), (MASK, 6, 0), (OTHER, 4, 0)],
            False,
        ),
        ([(USER_OBJ, 6, 0), (GROUP_OBJ, 4, 0), (OTHER, 6, 0)], True),
    ],
)
def test_acl_entries_decide_who_can_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, entries: list, writable: bool
) -> None:
    target = tmp_path / ".env"
    target.write_text(ENV_FILE)
    target.chmod(0o600)
    raw = _acl(*entries)
    monkeypatch.setattr(os, "getxattr", lambda path, name: raw, raising=False)
    assert (others_can_write(target) is not None) is writable


@pytest.fixture
def stranger() -> Iterator[tuple[str, str]]:
    """A second local user with a group of their own: (user, group), removed after."""
    tag = uuid.uuid4().hex[:8]
    user, group = f"lmt33u{tag}", f"lmt33g{tag}"
    subprocess.run(["groupadd", group], check=True, capture_output=True)
    try:
        subprocess.run(
            ["useradd", "-M", "-N", "-g", group, "-s", "/usr/sbin/nologin", user],
            check=True,
            capture_output=True,
        )
        try:
            yield user, group
        finally:
            subprocess.run(["userdel", user], check=False, capture_output=True)
    finally:
        subprocess.run(["groupdel", group], check=False, capture_output=True)


def _work_with_env(monkeypatch: pytest.MonkeyPatch) -> Path:
    work = Path.home() / "work"
    work.mkdir()
    (work / ".env").write_text(ENV_FILE)
    (work / ".env").chmod(0o600)
    monkeypatch.chdir(work)
    assert Settings.load().env_file == (work / ".env").resolve()  # read before the change
    return work


@pytest.mark.slow  # a real group and ACLs on files (groupadd): file permissions are the point
@needs_users
@needs_setfacl
def test_a_dotenv_another_user_may_write_through_an_acl_is_not_read(
    monkeypatch: pytest.MonkeyPatch, stranger: tuple[str, str]
) -> None:
    work = _work_with_env(monkeypatch)
    subprocess.run(["setfacl", "-m", f"u:{stranger[0]}:rw", str(work / ".env")], check=True)
    assert (work / ".env").stat().st_mode & 0o022 == 0o020  # the mode shows the mask only
    s = Settings.load()
    assert s.env_file is None and s.base_url is None


@pytest.mark.slow  # a real group and ACLs on files (groupadd): file permissions are the point
@needs_users
@needs_setfacl
def test_a_folder_another_user_may_write_through_an_acl_is_not_searched(
    monkeypatch: pytest.MonkeyPatch, stranger: tuple[str, str]
) -> None:
    work = _work_with_env(monkeypatch)
    subprocess.run(["setfacl", "-m", f"u:{stranger[0]}:rwx", str(work)], check=True)
    assert Settings.load().env_file is None


@pytest.mark.slow  # a real group and ACLs on files (groupadd): file permissions are the point
@needs_users
def test_group_write_counts_only_for_a_group_without_other_members(
    monkeypatch: pytest.MonkeyPatch, stranger: tuple[str, str]
) -> None:
    work = _work_with_env(monkeypatch)
    dotenv = work / ".env"
    # The stranger's primary group (as gid 100 `users` is everyone's on some systems).
    shutil.chown(dotenv, group=stranger[1])
    dotenv.chmod(0o660)
    assert Settings.load().env_file is None
    # A group that holds nobody but this user may write: nobody else can.
    alone = f"lmt33a{uuid.uuid4().hex[:8]}"
    subprocess.run(["groupadd", alone], check=True, capture_output=True)
    try:
        shutil.chown(dotenv, group=alone)
        assert Settings.load().env_file == dotenv.resolve()
    finally:
        subprocess.run(["groupdel", alone], check=False, capture_output=True)


@pytest.mark.slow  # a real group and ACLs on files (groupadd): file permissions are the point
@needs_users
def test_a_folder_above_a_stranger_can_write_in_stops_the_dotenv(
    monkeypatch: pytest.MonkeyPatch, stranger: tuple[str, str]
) -> None:
    # The .env's own folder is private, but the one above is the stranger's group's:
    # they could move the folder away and put their own in its place.
    outer = Path.home() / "shared"
    (outer / "work").mkdir(parents=True)
    (outer / "work" / ".env").write_text(ENV_FILE)
    (outer / "work" / ".env").chmod(0o600)
    shutil.chown(outer, group=stranger[1])
    outer.chmod(0o770)
    monkeypatch.chdir(outer / "work")
    monkeypatch.setenv("HOME", str(outer / "work"))  # the search stops there: only above counts
    assert Settings.load().env_file is None


def test_a_searched_dotenv_expands_no_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    work = Path.home() / "work"
    work.mkdir()
    (work / ".env").write_text(
        "LMREG_MODEL_URL=https://stranger.example/v1/chat/completions?k=${LMREG_APP_SECRET}\n"
    )
    (work / ".env").chmod(0o600)
    monkeypatch.chdir(work)
    monkeypatch.setenv("LMREG_APP_SECRET", "SECRET-never-in-a-url-1234")
    s = Settings.load()
    assert s.env_file is not None
    assert s.model_url == "https://stranger.example/v1/chat/completions?k=${LMREG_APP_SECRET}"


def test_a_named_env_file_still_expands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    named = tmp_path / "school.env"
    named.write_text("LMREG_MODEL_NAME=${SCHOOL_MODEL}\n")
    monkeypatch.setenv("SCHOOL_MODEL", "qwen")
    assert Settings.load(env_file=named).model_name == "qwen"


# Issue 42 item 11: a group no local database lists (an sssd or LDAP group) may hold
# anyone; and a skipped .env says so instead of "no .env found".

needs_root = pytest.mark.skipif(not _ROOT, reason="needs root to give a file to another group")


def _unknown_gid() -> int:
    """A group id that no group entry and no user's primary group knows."""
    import grp
    import pwd

    primary = {p.pw_gid for p in pwd.getpwall()}
    for gid in range(61_000, 65_000):
        if gid in primary:
            continue
        try:
            grp.getgrgid(gid)
        except KeyError:
            return gid
    raise AssertionError("every gid from 61000 is known")


@needs_root
def test_a_group_no_database_lists_may_hold_anyone(monkeypatch: pytest.MonkeyPatch) -> None:
    work = _work_with_env(monkeypatch)
    dotenv = work / ".env"
    gid = _unknown_gid()
    os.chown(dotenv, -1, gid)  # as an LDAP group's file looks on a machine without sssd
    dotenv.chmod(0o660)
    reason = others_can_write(dotenv)
    assert reason is not None and str(gid) in reason
    assert Settings.load().env_file is None


@needs_root
@pytest.mark.parametrize(("lang", "words"), [("en", "was found but not read"), ("zh-CN", "找到了")])
def test_a_skipped_dotenv_is_named_not_reported_missing(
    monkeypatch: pytest.MonkeyPatch, lang: str, words: str
) -> None:
    from click.testing import CliRunner

    from lmreg_nb.cli import main

    work = _work_with_env(monkeypatch)
    os.chown(work / ".env", -1, _unknown_gid())
    (work / ".env").chmod(0o660)
    monkeypatch.setenv("LMREG_APP_SECRET", "app-secret-never-sent-1234")
    result = CliRunner().invoke(main, ["--lang", lang, "token"])
    assert result.exit_code == 2, result.output
    line = result.stderr.strip().splitlines()[-1]
    assert "LMREG_BASE_URL" in line and str(work / ".env") in line and words in line
    assert "no .env found" not in line and "没有找到 .env" not in line
    assert "chmod g-w" in line  # what to do

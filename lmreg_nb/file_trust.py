"""Who else can change a file: mode bits, POSIX ACL entries and group members (POSIX).

A searched ``.env`` decides where the appSecret is sent, so it is trusted only
when no user but its owner can write it or any folder above it. The mode bits
alone do not say that: a POSIX ACL (``setfacl -m u:other:rw``) grants write to
named users and groups, and a group may hold other people (gid 100 ``users``).
The ACL is read from the ``system.posix_acl_access`` extended attribute (the
binary layout of the Linux kernel's ``posix_acl_xattr.h``), no ``getfacl``
needed; elsewhere (macOS, Windows) only the mode bits are read.
"""

from __future__ import annotations

import errno
import os
import stat
import struct
from dataclasses import dataclass
from pathlib import Path

from .i18n import _, ngettext

__all__ = ["AclEntry", "above_reason", "others_can_change", "others_can_write", "parse_posix_acl"]

_ACL_XATTR = "system.posix_acl_access"
_ACL_VERSION = 2
# Tags of linux/posix_acl.h.
USER_OBJ, USER, GROUP_OBJ, GROUP, MASK, OTHER = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20
_WRITE = 0x02
#: errno values meaning "no ACL here" (none set, or a filesystem without ACLs).
_NO_ACL = {errno.ENODATA, errno.ENOTSUP, errno.EOPNOTSUPP, getattr(errno, "ENOATTR", -1)}


@dataclass(frozen=True)
class AclEntry:
    """One entry of a POSIX access ACL: its tag, permission bits (rwx = 4|2|1) and id."""

    tag: int
    perm: int
    id: int


def parse_posix_acl(raw: bytes) -> list[AclEntry]:
    """The entries of a ``system.posix_acl_access`` value; ValueError when it is not one."""
    if len(raw) < 4 or (len(raw) - 4) % 8:
        raise ValueError("not a POSIX ACL: wrong length")
    (version,) = struct.unpack_from("<I", raw, 0)
    if version != _ACL_VERSION:
        raise ValueError(f"not a POSIX ACL: version {version}")
    return [AclEntry(*struct.unpack_from("<HHI", raw, off)) for off in range(4, len(raw), 8)]


def others_can_write(
    path: Path, *, uid: int | None = None, owners: frozenset[int] | None = None
) -> str | None:
    """Why a user other than ``uid`` can change ``path``, or None when none can.

    ``owners`` are the owners accepted (default: ``uid`` alone); root-owned system
    folders pass with ``owners={uid, 0}``. A folder with the sticky bit (``/tmp``)
    still counts as writable by others: anyone may add a ``.env`` to it.
    """
    me = os.getuid() if uid is None else uid
    try:
        st = path.stat()
    except OSError as exc:
        return _("cannot be read ({reason})").format(reason=exc.strerror)
    if st.st_uid not in (owners or frozenset({me})):
        return _("owned by uid {uid}").format(uid=st.st_uid)
    acl = _read_acl(path)
    if acl is None:
        return _("its ACL cannot be read")
    if not acl:  # no ACL: the mode bits say it all
        if st.st_mode & stat.S_IWOTH:
            return _("writable by every user")
        if st.st_mode & stat.S_IWGRP:
            return _group_reason(st.st_gid, me)
        return None
    mask = next((e.perm for e in acl if e.tag == MASK), 0o7)
    for entry in acl:
        if not entry.perm & _WRITE:
            continue
        if entry.tag == OTHER:
            return _("writable by every user")
        # Named users and groups and the owning group get no more than the mask allows.
        if entry.tag == USER and entry.id != me and mask & _WRITE:
            return _("its ACL lets uid {uid} write").format(uid=entry.id)
        if entry.tag in (GROUP_OBJ, GROUP) and mask & _WRITE:
            gid = st.st_gid if entry.tag == GROUP_OBJ else entry.id
            reason = _group_reason(gid, me)
            if reason:
                return reason
    return None


def _read_acl(path: Path) -> list[AclEntry] | None:
    """The ACL's entries; [] when there is none; None when it exists but cannot be read."""
    getxattr = getattr(os, "getxattr", None)
    if getxattr is None:
        return []  # no xattr API (macOS, Windows): mode bits only
    try:
        raw = getxattr(path, _ACL_XATTR)
    except OSError as exc:
        return [] if exc.errno in _NO_ACL else None
    try:
        return parse_posix_acl(raw)
    except ValueError:
        return None


def _group_reason(gid: int, me: int) -> str | None:
    """Why group ``gid`` holds users other than ``me`` (None: it holds no one else)."""
    members = group_members(gid)
    if members is None:
        return _(
            "group {gid} can write it, and no group database here lists its members: "
            "a directory service's group may hold anyone"
        ).format(gid=gid)
    others = members - {me}
    if others:
        return ngettext(
            "group {gid} can write it, and holds another user",
            "group {gid} can write it, and holds {n} other users",
            len(others),
        ).format(gid=gid, n=len(others))
    return None


def group_members(gid: int) -> set[int] | None:
    """The uids in group ``gid``: named members and users whose primary group it is.

    A member name no passwd entry knows counts as someone else (uid -1). None when
    no group entry names ``gid`` (an sssd or LDAP group this machine cannot list):
    its members are unknown, so nobody can say it holds no one else.
    """
    import grp  # POSIX only, as every caller
    import pwd

    try:
        names = grp.getgrgid(gid).gr_mem
    except KeyError:
        return None
    uids = {p.pw_uid for p in pwd.getpwall() if p.pw_gid == gid}
    for name in names:
        try:
            uids.add(pwd.getpwnam(name).pw_uid)
        except KeyError:
            uids.add(-1)
    return uids


def others_can_change(path: Path) -> str | None:
    """Why a user other than this one (or root) can change what ``path`` holds, or None.

    The file itself counts, and every folder over it: in a folder another user can
    write, they can put a file of their own in its place. A sticky folder (``/tmp``)
    is the exception: nobody can rename or remove what is not theirs there. Both the
    path as given and the file a symbolic link leads to are checked. Windows: None
    (ACLs, not modes).
    """
    if getattr(os, "getuid", None) is None:
        return None
    owners = frozenset({os.getuid(), 0})
    reason = others_can_write(path, owners=owners)
    if reason:
        return reason
    given = path.absolute()
    return above_reason(given, owners) or above_reason(given.resolve(), owners)


def above_reason(path: Path, owners: frozenset[int]) -> str | None:
    """Why another user can swap ``path`` from a folder over it, naming the folder (a
    sticky one, as /tmp, is no reason); None when none can."""
    return next(filter(None, (_folder_reason(f, owners) for f in path.parents)), None)


def _folder_reason(folder: Path, owners: frozenset[int]) -> str | None:
    """Why another user can swap what ``folder`` holds, naming the folder; None if none can."""
    reason = others_can_write(folder, owners=owners)
    if reason is None or _sticky(folder, owners):
        return None
    return _("{folder} above it: {reason}").format(folder=folder, reason=reason)


def _sticky(folder: Path, owners: frozenset[int]) -> bool:
    try:
        st = folder.stat()
    except OSError:
        return False
    return bool(st.st_mode & stat.S_ISVTX) and st.st_uid in owners

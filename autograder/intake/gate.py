"""The intake gate: the one way a student's hand-in becomes the grader's
copy, whichever road it came by (an LMS download's archives, a folder
copied in by hand, the hub's exchange).

    take_folder(src, dest, *, reader_uid, reader_gid, owner_uid=None,
                owner_gid=None, caps=HAND_IN) -> Taken
    take_archive(archive, dest, *, reader_uid, reader_gid, owner_uid=None,
                 owner_gid=None, caps=HAND_IN) -> Taken

Both read the hand-in in a child process (gate_reader.py) that gives up
root for `reader_uid`:`reader_gid` (the student's own uid for an exchange
folder, a sandbox uid otherwise; ignored when not run as root) before it
reads a byte, never follows a link, and streams what it finds to this
process over a pipe. This process trusts none of it: it checks every name
(no `..`, no absolute path, no clash such as `x` beside `x/y`) and every
cap while the bytes arrive, and writes only files and folders it creates
itself in a staging folder beside `dest`: files 0600, folders 0700, owned
by `owner_uid`:`owner_gid` (when root), whatever modes the hand-in had, so
never a setuid, setgid, sticky or exec bit, and never a link, a pipe or a
device. Links, pipes, devices and sockets are refused and listed; so is a
name that clashes or would leave the folder. Past a cap (members, bytes of
one file, bytes in all, folder depth, seconds) or with an archive that
cannot be read, nothing is taken. Only a complete take is renamed into
place at `dest` (replacing what was there); a refused or interrupted one
leaves `dest` as it was.
"""
from __future__ import annotations

import os
import select
import shutil
import signal
import stat
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from autograder.intake.intake import MAX_FILES, plain

MB = 2 ** 20
READER = Path(__file__).resolve().with_name("gate_reader.py")
READ_BYTES = 4 * MB    # the most read from the reader's pipe at once
FRAME_BYTES = 1 * MB   # the largest frame the reader may send (it sends 256 KiB)
NAME_BYTES = 4096      # the longest path it may name


@dataclass(frozen=True)
class Caps:
    """What one hand-in may hold. A complete submission of the sample class
    (autograder/testbed/sample_class) has 19 files and folders, 1 MB in all,
    its largest file 127 KB, 3 folders deep."""
    members: int = MAX_FILES     # files, folders and refused entries
    file_bytes: int = 50 * MB    # any one file (grade.py's notebook cap)
    total_bytes: int = 200 * MB  # all files together, unpacked
    depth: int = 8               # folders deep
    seconds: float = 60          # the whole take, reading included

    def __post_init__(self):
        for name in ("members", "file_bytes", "total_bytes", "depth", "seconds"):
            value = getattr(self, name)
            if type(value) not in (int, float) or (name != "seconds" and type(value) is not int):
                raise TypeError(f"caps.{name} must be a number (got {value!r})")
            if value <= 0:
                raise ValueError(f"caps.{name} must be positive (got {value!r})")


HAND_IN = Caps()


@dataclass
class Taken:
    """What a take did: the files it took (paths below `dest`, as named in
    the hand-in: data, to escape with intake.plain before showing), what it
    refused (one line each: the name escaped, why),
    and, when nothing was taken, why (`failed`)."""
    files: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    failed: str | None = None

    @property
    def ok(self) -> bool:
        return self.failed is None

    def problems(self) -> list[str]:
        """The lines a student's problems get: the reason nothing was taken,
        then each refused entry."""
        head = [f"(hand-in): {self.failed}; nothing was taken"] if self.failed else []
        return head + self.refused


class Refused(Exception):
    """The whole hand-in is refused; the message says why."""


class Reader:
    """The frames the reader sends, read within the time left."""

    def __init__(self, fd: int, deadline: float, seconds: float):
        self.fd, self.deadline, self.seconds = fd, deadline, seconds
        self.buffer = bytearray()

    def take(self, n: int) -> bytes:
        while len(self.buffer) < n:
            left = self.deadline - time.monotonic()
            if left <= 0 or not select.select([self.fd], [], [], left)[0]:
                raise Refused(f"reading it took longer than {self.seconds:g} s")
            chunk = os.read(self.fd, READ_BYTES)
            if not chunk:
                raise Refused("the reader stopped before the end")
            self.buffer += chunk
        out = bytes(self.buffer[:n])
        del self.buffer[:n]
        return out

    def frame(self) -> tuple[bytes, bytes]:
        head = self.take(5)
        (size,) = struct.unpack(">I", head[1:])
        if size > FRAME_BYTES:
            raise Refused("the reader sent a frame too large")
        return head[:1], self.take(size)


def parts_of(name: bytes) -> tuple[str, ...] | None:
    """The folders and name of a path from the hand-in, or None when it is
    not a plain relative path (absolute, `..`, a NUL, too long). `.` and
    empty parts (`./lab//x`) are dropped."""
    if len(name) > NAME_BYTES or b"\0" in name or name.startswith(b"/"):
        return None
    parts = tuple(p for p in name.split(b"/") if p not in (b"", b"."))
    if any(p == b".." or len(p) > 255 for p in parts):
        return None
    return tuple(os.fsdecode(p) for p in parts)


class Staging:
    """A folder beside `dest` that only this process writes: everything in
    it is created here, with this process's modes and owner."""

    def __init__(self, dest: Path, owner: tuple[int, int] | None):
        self.path = Path(tempfile.mkdtemp(prefix=f".{dest.name}.taking-", dir=dest.parent))
        self.owner = owner
        self.top = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        self.settle(self.top, 0o700)
        self.kinds: dict[tuple[str, ...], str] = {(): "folder"}
        self.open_folders: dict[tuple[str, ...], int] = {(): self.top}

    def settle(self, fd: int, mode: int) -> None:
        os.fchmod(fd, mode)
        if self.owner is not None:
            os.fchown(fd, *self.owner)

    def clash(self, parts: tuple[str, ...], kind: str) -> str | None:
        """Why `parts` cannot be a `kind` here, or None."""
        for i in range(1, len(parts)):
            if self.kinds.get(parts[:i], "folder") != "folder":
                return f"its folder {plain('/'.join(parts[:i]))} is a file"
        have = self.kinds.get(parts)
        if have is not None and (kind == "file" or have == "file"):
            return f"a {have} of the same name came first"
        return None

    def folder(self, parts: tuple[str, ...]) -> int:
        """The folder `parts`, made (with those above it) if missing."""
        if parts in self.open_folders:
            return self.open_folders[parts]
        above = self.folder(parts[:-1])
        os.mkdir(parts[-1], 0o700, dir_fd=above)
        fd = os.open(parts[-1], os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=above)
        self.settle(fd, 0o700)
        self.kinds[parts] = "folder"
        self.open_folders[parts] = fd
        return fd

    def file(self, parts: tuple[str, ...]) -> int:
        fd = os.open(parts[-1], os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                     0o600, dir_fd=self.folder(parts[:-1]))
        self.settle(fd, 0o600)
        self.kinds[parts] = "file"
        return fd

    def close(self) -> None:
        for fd in self.open_folders.values():
            os.close(fd)
        self.open_folders = {}

    def place(self, dest: Path) -> None:
        """Put the finished copy at `dest`, the earlier one (if any) away."""
        self.close()
        old = None
        if os.path.lexists(dest):
            old = Path(tempfile.mkdtemp(prefix=f".{dest.name}.old-", dir=dest.parent))
            os.rename(dest, old / "copy")
        os.rename(self.path, dest)
        if old is not None:
            shutil.rmtree(old)

    def discard(self) -> None:
        self.close()
        shutil.rmtree(self.path, ignore_errors=True)


def receive(reader: Reader, staging: Staging, caps: Caps, taken: Taken) -> None:
    """Write what the reader sends into `staging`, checking as it comes."""
    members = total = 0
    while True:
        kind, payload = reader.frame()
        if kind == b"Z":
            return
        if kind == b"X":
            raise Refused(f"it cannot be read ({plain(payload.decode('utf-8', 'replace'), 300)})")
        if kind not in (b"D", b"F", b"R"):
            raise Refused("the reader sent something unexpected")
        members += 1
        if members > caps.members:
            raise Refused(f"more than {caps.members} files and folders")
        name, _, why = payload.partition(b"\0")
        shown = plain(os.fsdecode(name), 200)
        parts = parts_of(name)
        if kind == b"R":
            taken.refused.append(f"{shown}: {plain(why.decode('utf-8', 'replace'), 200)}; refused")
            continue
        if parts is not None and len(parts) > caps.depth:
            raise Refused(f"{shown} is more than {caps.depth} folders deep")
        problem = ("its name leaves its folder or is not a plain path" if parts is None
                   else None if not parts and kind == b"D"
                   else "an empty name" if not parts
                   else staging.clash(parts, "folder" if kind == b"D" else "file"))
        if kind == b"D":
            if problem:
                taken.refused.append(f"{shown}: {problem}; refused")
            elif parts:
                staging.folder(parts)
            continue
        fd = staging.file(parts) if problem is None else None
        size = 0
        try:
            while (frame := reader.frame())[0] == b"C":
                size += len(frame[1])
                total += len(frame[1])
                if size > caps.file_bytes:
                    raise Refused(f"{shown} is larger than {caps.file_bytes // MB} MiB")
                if total > caps.total_bytes:
                    raise Refused(f"more than {caps.total_bytes // MB} MiB in all")
                if fd is not None:
                    os.write(fd, frame[1])
            if frame[0] != b"E":
                raise Refused("the reader sent something unexpected")
        finally:
            if fd is not None:
                os.close(fd)
        if problem:
            taken.refused.append(f"{shown}: {problem}; refused")
        else:
            taken.files.append("/".join(parts))


def take(mode: str, source: int, dest: Path, reader_uid: int, reader_gid: int,
         owner: tuple[int, int] | None, caps: Caps) -> Taken:
    """Run the reader on `source` (an open folder or archive) and, when all went well, put what it sent at `dest`."""
    if not isinstance(caps, Caps):
        raise TypeError(f"caps must be a Caps (got {type(caps).__name__})")
    for name, value in (("reader_uid", reader_uid), ("reader_gid", reader_gid)):
        if type(value) is not int or value < 0:
            raise TypeError(f"{name} must be a uid or gid, an int >= 0 (got {value!r})")
    if os.geteuid() == 0 and reader_uid == 0:
        raise ValueError("reader_uid must not be root (0): the reader gives up root")
    dest = Path(dest)
    if not dest.parent.is_dir():
        raise ValueError(f"dest's folder does not exist (got dest={str(dest)!r})")
    taken = Taken()
    staging = Staging(dest, owner)
    proc = subprocess.Popen(
        [sys.executable, "-I", "-S", str(READER), mode, str(reader_uid), str(reader_gid),
         str(caps.depth), str(source)],
        pass_fds=(source,), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd="/", env={},
        start_new_session=True)
    placed = False
    try:
        receive(Reader(proc.stdout.fileno(), time.monotonic() + caps.seconds, caps.seconds),
                staging, caps, taken)
        if proc.wait(timeout=caps.seconds) != 0:
            raise Refused(f"the reader failed (exit status {proc.returncode})")
        staging.place(dest)
        placed = True
    except Refused as why:
        taken = Taken(failed=str(why), refused=taken.refused)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        if not placed:
            staging.discard()
    taken.files.sort()
    taken.refused.sort()
    return taken


def owner_of(owner_uid: int | None, owner_gid: int | None) -> tuple[int, int] | None:
    if (owner_uid is None) != (owner_gid is None):
        raise ValueError("owner_uid and owner_gid go together: give both or neither")
    if owner_uid is None or os.geteuid() != 0:
        return None
    return owner_uid, owner_gid


def take_folder(src: Path, dest: Path, *, reader_uid: int, reader_gid: int,
                owner_uid: int | None = None, owner_gid: int | None = None,
                caps: Caps = HAND_IN) -> Taken:
    """Copy the folder `src` to `dest` through the gate (see the module's
    docstring). `src` itself must be a folder, not a link to one: it is
    opened here without following a link, and everything below it by the
    reader as `reader_uid`, which must be allowed to read it."""
    try:
        fd = os.open(src, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as err:
        raise ValueError(f"src must be a folder and not a link (got src={str(src)!r}: "
                         f"{err.strerror})") from None
    try:
        return take("folder", fd, dest, reader_uid, reader_gid,
                    owner_of(owner_uid, owner_gid), caps)
    finally:
        os.close(fd)


def take_archive(archive: Path, dest: Path, *, reader_uid: int, reader_gid: int,
                 owner_uid: int | None = None, owner_gid: int | None = None,
                 caps: Caps = HAND_IN) -> Taken:
    """Unpack the zip or tar `archive` (plain, gzip, bzip2 or xz) to `dest`
    through the gate (see the module's docstring). `archive` is opened
    here, without following a link; the reader reads it as `reader_uid`. An archive inside it stays a file."""
    try:
        fd = os.open(archive, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as err:
        raise ValueError(f"archive cannot be opened (got archive={str(archive)!r}: "
                         f"{err.strerror})") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError(f"archive must be a regular file (got archive={str(archive)!r})")
        os.set_blocking(fd, True)
        return take("archive", fd, dest, reader_uid, reader_gid,
                    owner_of(owner_uid, owner_gid), caps)
    finally:
        os.close(fd)


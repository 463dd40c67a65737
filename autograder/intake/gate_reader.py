"""The unprivileged half of the intake gate (gate.py): it reads one
student's hand-in and streams what it finds to its parent over standard
output, and never writes a file.

gate.py starts it as `python -I -S gate_reader.py MODE UID GID DEPTH FD`, as
root or as the grading user. Before it looks at a single byte of the
hand-in, it imports all it will need (the interpreter's own files may be
closed to UID), gives up root for UID and GID with no extra groups, and
caps its own memory, CPU time and processes. Then:

  * `folder`: FD is the student's folder, opened by the parent without
    following a link; every name below it is opened relative to its
    folder with O_NOFOLLOW, so a link is never followed, and a pipe, a
    socket or a device is never read;
  * `archive`: FD is a zip or a tar (plain or compressed), read member
    by member;
    a link, pipe or device member is listed and never unpacked.

Everything it sends is data to the parent, which trusts none of it (the
reader may run as the student's own uid, who can tamper with it): frames
of one kind byte, a 4-byte big-endian length and that many bytes.

  D name          a folder
  F name          a regular file, its bytes follow as C frames, then E
  R name\\0why     something not taken, and why
  X why           the whole hand-in cannot be read (a broken archive)
  Z               the end
"""
import bz2  # noqa: F401  (imported before root is given up: tarfile and
import encodings.cp437  # noqa: F401  zipfile import these on first use)
import gzip  # noqa: F401
import lzma  # noqa: F401
import os
import resource
import stat
import struct
import sys
import tarfile
import zipfile
import zlib

CHUNK = 256 * 1024
MEMORY_BYTES = 512 * 2 ** 20  # the reader's address space; it holds one chunk
OUT = sys.stdout.buffer


def send(kind: bytes, payload: bytes = b"") -> None:
    OUT.write(kind + struct.pack(">I", len(payload)) + payload)


def send_file(name: bytes, stream) -> None:
    send(b"F", name)
    while chunk := stream.read(CHUNK):
        send(b"C", chunk)
    send(b"E")


def refuse(name: bytes, why: str) -> None:
    send(b"R", name + b"\0" + why.encode())


def kind_of(mode: int) -> str | None:
    """Why a file of this type is not taken, or None for a file or folder."""
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        return "not a regular file or folder"
    return None


def read_folder(top: int, depth: int) -> None:
    """Every file and folder below the folder open as `top`, names sorted,
    at most `depth` folders deep (a deeper folder is named, not entered:
    the parent refuses it)."""
    stack = [(top, b"")]
    while stack:
        fd, prefix = stack.pop()
        with os.scandir(fd) as entries:
            names = sorted(os.fsencode(e.name) for e in entries)
        folders = []
        for name in names:
            path = prefix + name
            try:
                mode = os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode
                if (why := kind_of(mode)) is not None:
                    refuse(path, why)
                    continue
                # O_NOFOLLOW and O_NONBLOCK: should the name become a link or a
                # pipe after the stat, the open fails or does not wait
                child = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK,
                                dir_fd=fd)
            except OSError as err:
                refuse(path, f"not readable ({err.strerror})")
                continue
            mode = os.fstat(child).st_mode
            if stat.S_ISDIR(mode):
                send(b"D", path)
                if path.count(b"/") + 1 < depth:
                    folders.append((child, path + b"/"))
                else:
                    os.close(child)
            elif stat.S_ISREG(mode):
                os.set_blocking(child, True)
                with os.fdopen(child, "rb") as stream:
                    send_file(path, stream)
            else:
                os.close(child)
                refuse(path, kind_of(mode) or "not a regular file or folder")
        stack.extend(reversed(folders))
        if fd != top:
            os.close(fd)


def read_zip(stream) -> None:
    with zipfile.ZipFile(stream) as archive:
        for info in archive.infolist():
            name = info.filename.encode("utf-8", "surrogateescape")
            mode = info.external_attr >> 16
            why = kind_of(mode) if stat.S_IFMT(mode) else None
            if why is not None:
                refuse(name, why)
            elif info.is_dir():
                send(b"D", name.rstrip(b"/"))
            else:
                with archive.open(info) as member:
                    send_file(name, member)


def read_tar(stream) -> None:
    # "r|*": strictly in order, never seeking back, whatever the compression
    with tarfile.open(fileobj=stream, mode="r|*") as archive:
        for member in archive:
            name = member.name.encode("utf-8", "surrogateescape")
            if member.isdir():
                send(b"D", name.rstrip(b"/"))
            elif member.isreg():
                send_file(name, archive.extractfile(member))
            elif member.issym() or member.islnk():
                refuse(name, "a symbolic link" if member.issym() else "a hard link")
            elif member.ischr() or member.isblk():
                refuse(name, "a device")
            elif member.isfifo():
                refuse(name, "a named pipe")
            else:
                refuse(name, "not a regular file or folder")


def give_up_root(uid: int, gid: int) -> None:
    if os.geteuid() == 0:
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def main() -> None:
    mode, uid, gid, depth, fd = sys.argv[1], *map(int, sys.argv[2:6])
    give_up_root(uid, gid)
    try:
        if mode == "folder":
            read_folder(fd, depth)
        else:
            stream = os.fdopen(fd, "rb")
            if zipfile.is_zipfile(stream):
                read_zip(stream)
            else:
                stream.seek(0)
                read_tar(stream)
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, zlib.error, lzma.LZMAError,
            OSError, NotImplementedError, RuntimeError, ValueError) as err:
        send(b"X", f"{type(err).__name__}: {err}".encode("utf-8", "replace")[:500])
    except MemoryError:
        send(b"X", b"the reader ran out of memory")
    send(b"Z")
    OUT.flush()


if __name__ == "__main__":
    main()

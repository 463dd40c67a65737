"""The intake gate (autograder/intake/gate.py) against a hostile intake
class: real zip and tar files and a real folder, each beside honest work
that must come out byte for byte, 0600 in 0700 folders, as root's."""
from __future__ import annotations

import io
import os
import signal
import stat
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

import pytest

from autograder.intake import gate
from tests.conftest import ROOT, tree_digest

ADA = ROOT / "autograder" / "testbed" / "sample_class" / "ada_complete"
# a few honest files of a complete submission, as the hand-in names them
HONEST = {"lab/01_why_retrieval.ipynb": ADA / "lab" / "01_why_retrieval.ipynb",
          "project/corpus/documents.json": ADA / "project" / "corpus" / "documents.json",
          "quiz/quiz.ipynb": ADA / "quiz" / "quiz.ipynb"}
READER = {"reader_uid": gate.SANDBOX_UID, "reader_gid": gate.SANDBOX_UID}
# control characters, ESC (a terminal title), a newline and a bidi override
NASTY = "\x1b]0;pwned\x07\nnothing was collected\u202etxt.exe"


def assert_honest(dest: Path, names=HONEST) -> None:
    """`dest` holds exactly the honest files, byte for byte, with the
    gate's own modes and no special bit anywhere."""
    assert tree_digest(dest) == {n: tree_digest(p.parent)[p.name] for n, p in names.items()}
    for path in [dest, *dest.rglob("*")]:
        mode = os.lstat(path).st_mode
        want = 0o700 if stat.S_ISDIR(mode) else 0o600
        assert stat.S_ISDIR(mode) or stat.S_ISREG(mode), path
        assert stat.S_IMODE(mode) == want, (path, oct(mode))
        assert os.lstat(path).st_uid == os.getuid()


def zip_of(path: Path, members: list[tuple[str, bytes, int]]) -> Path:
    """A zip of (name, bytes, st_mode) members; honest files added first."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, source in HONEST.items():
            z.write(source, name)
        for name, data, mode in members:
            info = zipfile.ZipInfo(name)
            info.external_attr = mode << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    return path


@pytest.mark.filterwarnings("ignore:Duplicate name")  # a second member of one name
def test_zip_links_setuid_clash_and_names(tmp_path):
    archive = zip_of(tmp_path / "hand-in.zip", [
        ("lab/shadow", b"/etc/shadow", stat.S_IFLNK | 0o777),
        ("lab/master.ipynb", b"../../source/quiz/quiz.ipynb", stat.S_IFLNK | 0o777),
        ("quiz/root_shell", b"#!/bin/sh\nid\n", stat.S_IFREG | 0o6777),
        ("x", b"a file", stat.S_IFREG | 0o644),
        ("x/y", b"inside a file", stat.S_IFREG | 0o644),
        ("lab/01_why_retrieval.ipynb", b"a second copy", stat.S_IFREG | 0o644),
        (NASTY, b"hi", stat.S_IFREG | 0o644),
        (f"lab/{NASTY}", b"/etc/passwd", stat.S_IFLNK | 0o777),
        ("../outside.txt", b"escape", stat.S_IFREG | 0o644),
        ("/etc/cron.d/x", b"escape", stat.S_IFREG | 0o644)])
    taken = gate.take_archive(archive, tmp_path / "out", **READER)
    assert taken.ok
    # the setuid file comes out a plain 0600 file; x stays, x/y is refused
    extra = {"quiz/root_shell": b"#!/bin/sh\nid\n", "x": b"a file", NASTY: b"hi"}
    for name, data in extra.items():
        assert (tmp_path / "out" / name).read_bytes() == data
        (tmp_path / "out" / name).unlink()
    assert_honest(tmp_path / "out")
    why = dict(taken.refused)
    # names are data: taken as named, shown escaped
    assert NASTY in taken.files
    assert why.pop("lab/\\x1b]0;pwned\\x07\\x0anothing was collected\\u202etxt.exe") == (
        "a symbolic link")
    assert why == {
        "lab/shadow": "a symbolic link", "lab/master.ipynb": "a symbolic link",
        "x/y": "its folder x is a file",
        "lab/01_why_retrieval.ipynb": "a file of the same name came first",
        "../outside.txt": "its name leaves its folder or is not a plain path",
        "/etc/cron.d/x": "its name leaves its folder or is not a plain path"}
    for line in taken.problems():
        assert line.isprintable() and "\u202e" not in line, line


def test_tar_links_pipes_and_devices(tmp_path):
    archive = tmp_path / "hand-in.tar.gz"
    with tarfile.open(archive, "w:gz") as t:
        for name, source in HONEST.items():
            t.add(source, f"./{name}")
        for name, kind, target in [("lab/sym", tarfile.SYMTYPE, "/etc/shadow"),
                                   ("lab/hard", tarfile.LNKTYPE, "/etc/shadow"),
                                   ("lab/pipe", tarfile.FIFOTYPE, ""),
                                   ("lab/zero", tarfile.CHRTYPE, ""),
                                   ("lab/disk", tarfile.BLKTYPE, "")]:
            info = tarfile.TarInfo(name)
            info.type, info.linkname, info.devmajor, info.devminor = kind, target, 1, 5
            t.addfile(info)
        info = tarfile.TarInfo(f"quiz/{NASTY}")
        info.mode, info.size = 0o4755, 2
        t.addfile(info, io.BytesIO(b"ok"))
    taken = gate.take_archive(archive, tmp_path / "out", **READER)
    assert taken.ok
    assert (tmp_path / "out" / "quiz" / NASTY).read_bytes() == b"ok"
    (tmp_path / "out" / "quiz" / NASTY).unlink()
    assert_honest(tmp_path / "out")
    assert dict(taken.refused) == {"lab/sym": "a symbolic link", "lab/hard": "a hard link",
                                   "lab/pipe": "a named pipe", "lab/zero": "a device",
                                   "lab/disk": "a device"}


def test_caps_refuse_the_whole_hand_in_and_keep_the_earlier_copy(tmp_path):
    """A bomb, 20,000 empty members, a truncated zip, too deep, too slow:
    nothing is taken, and the earlier good copy at `dest` stays."""
    dest = tmp_path / "out"
    assert gate.take_archive(zip_of(tmp_path / "good.zip", []), dest, **READER).ok
    bomb = zip_of(tmp_path / "bomb.zip", [("project/zeros.json", bytes(60 * gate.MB),
                                           stat.S_IFREG | 0o644)])
    assert bomb.stat().st_size < 1024 * 1024
    many = zip_of(tmp_path / "many.zip", [(f"n/{i:05}", b"", stat.S_IFREG | 0o644)
                                          for i in range(20_000)])
    deep = zip_of(tmp_path / "deep.zip", [("d/" * 9 + "f", b"x", stat.S_IFREG | 0o644)])
    truncated = tmp_path / "truncated.zip"
    truncated.write_bytes(many.read_bytes()[:len(many.read_bytes()) // 2])
    cases = {
        bomb: (gate.HAND_IN, "project/zeros.json is larger than 50 MiB"),
        many: (gate.HAND_IN, "more than 500 files and folders"),
        deep: (gate.HAND_IN, "is more than 8 folders deep"),
        truncated: (gate.HAND_IN, "it cannot be read (BadZipFile"),
        bomb.with_name("total"): (gate.Caps(file_bytes=100 * gate.MB, total_bytes=40 * gate.MB),
                                  "more than 40 MiB in all"),
        bomb.with_name("slow"): (gate.Caps(seconds=0.01), "took longer than 0.01 s")}
    for archive, (caps, why) in cases.items():
        source = bomb if archive.name in ("total", "slow") else archive
        taken = gate.take_archive(source, dest, **READER, caps=caps)
        assert not taken.ok and why in taken.failed, (archive.name, taken.failed)
        assert taken.problems()[0].startswith("(hand-in): ")
        assert_honest(dest)
        assert sorted(os.listdir(tmp_path)) == sorted(
            ["out", "good.zip", "bomb.zip", "many.zip", "deep.zip", "truncated.zip"]), \
            "a staging folder was left behind"


def stopped(proc: subprocess.Popen) -> None:
    """Stop `proc` and return once the kernel says it is stopped."""
    proc.send_signal(signal.SIGSTOP)
    stat_file = Path(f"/proc/{proc.pid}/stat")
    while stat_file.read_text().rpartition(")")[2].split()[0] != "T":
        assert proc.poll() is None, "the take ended before it could be interrupted"
        time.sleep(0.001)


def test_an_interrupted_take_keeps_the_earlier_copy(tmp_path):
    """Ctrl-C while 200 MiB stream in: the earlier copy stays, the staging
    folder and the reader are gone."""
    dest = tmp_path / "out"
    assert gate.take_archive(zip_of(tmp_path / "good.zip", []), dest, **READER).ok
    big = zip_of(tmp_path / "big.zip", [("project/big.json", bytes(200 * gate.MB),
                                         stat.S_IFREG | 0o644)])
    code = ("from autograder.intake import gate; gate.take_archive("
            f"{str(big)!r}, {str(dest)!r}, reader_uid={gate.SANDBOX_UID}, "
            f"reader_gid={gate.SANDBOX_UID}, caps=gate.Caps(file_bytes=2**30, "
            "total_bytes=2**30))")
    # Ctrl-C as a terminal sends it, whatever this run inherited: a command
    # started in the background by a shell without job control (`make test &`
    # in a script) ignores SIGINT, its children inherit that, and Python then
    # installs no KeyboardInterrupt at all (the take ran to the end, silent)
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    # Look only while the taking process is stopped (root writes every byte,
    # so nothing moves then): a take seen half done is still half done when
    # the Ctrl-C lands, however slow the machine is between the two.
    while True:
        assert proc.poll() is None and time.monotonic() < deadline, "the take never started"
        stopped(proc)
        if any(f.stat().st_size > gate.MB for f in tmp_path.glob(".out.taking-*/project/*")):
            break
        proc.send_signal(signal.SIGCONT)
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    proc.send_signal(signal.SIGCONT)
    try:
        err = proc.communicate(timeout=60)[1]
        assert b"KeyboardInterrupt" in err, f"exit status {proc.returncode}: {err[-2000:]!r}"
    finally:
        proc.kill()  # (a no-op once it has ended)
    assert_honest(dest)
    assert sorted(os.listdir(tmp_path)) == ["big.zip", "good.zip", "out"]
    # no process (the reader) still holds the archive open
    held = []
    for fd in Path("/proc").glob("[0-9]*/fd/*"):
        try:
            held += [fd] if os.readlink(fd) == str(big) else []
        except OSError:  # a process or descriptor that ended meanwhile
            continue
    assert held == []


def test_a_hand_copied_folder_with_a_link_a_pipe_and_a_setuid_file(tmp_path):
    src = tmp_path / "submitted" / "ada" / "work"
    for name, source in HONEST.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_bytes(source.read_bytes())
    secret = tmp_path / "secret.txt"  # outside the submission, 0600 root's
    secret.write_text("the master's answers")
    secret.chmod(0o600)
    (src / "lab" / "answers.txt").symlink_to(secret)
    (src / "quiz" / "linked").symlink_to(tmp_path, target_is_directory=True)
    os.mkfifo(src / "lab" / "pipe")
    shell = src / "quiz" / "shell"
    shell.write_bytes(b"#!/bin/sh\nid\n")
    shell.chmod(0o6755)
    src.chmod(0o755)
    taken = gate.take_folder(src, tmp_path / "copy", **READER)
    assert taken.ok
    assert (tmp_path / "copy" / "quiz" / "shell").read_bytes() == b"#!/bin/sh\nid\n"
    (tmp_path / "copy" / "quiz" / "shell").unlink()
    assert_honest(tmp_path / "copy")
    assert dict(taken.refused) == {"lab/answers.txt": "a symbolic link",
                                   "lab/pipe": "a named pipe",
                                   "quiz/linked": "a symbolic link"}
    # the source is read only, the link never followed
    assert os.readlink(src / "lab" / "answers.txt") == str(secret)


def test_a_folder_may_be_as_deep_as_the_cap_and_no_deeper(tmp_path):
    src = tmp_path / "work"
    deepest = src.joinpath(*"abcdefgh")  # 8 folders
    deepest.mkdir(parents=True)
    (deepest / "f.txt").write_text("deep")
    taken = gate.take_folder(src, tmp_path / "copy", **READER)
    assert taken.ok and taken.files == ["a/b/c/d/e/f/g/h/f.txt"]
    (deepest / "i").mkdir()
    taken = gate.take_folder(src, tmp_path / "copy", **READER)
    assert taken.failed == "a/b/c/d/e/f/g/h/i is more than 8 folders deep"
    assert (tmp_path / "copy" / "a/b/c/d/e/f/g/h/f.txt").read_text() == "deep"


@pytest.mark.skipif(os.geteuid() != 0, reason="reading as another uid needs root")
def test_the_reader_reads_as_the_unprivileged_uid(tmp_path):
    """A file only root may read is refused, not copied: the reader is
    not root."""
    src = tmp_path / "work"
    src.mkdir(mode=0o755)
    (src / "open.txt").write_text("anyone")
    (src / "closed.txt").write_text("root only")
    (src / "closed.txt").chmod(0o600)
    taken = gate.take_folder(src, tmp_path / "copy", **READER)
    assert taken.files == ["open.txt"]
    assert taken.refused == [("closed.txt", "not readable (Permission denied)")]


def test_bad_arguments_name_themselves(tmp_path):
    with pytest.raises(TypeError, match="reader_uid"):
        gate.take_folder(tmp_path, tmp_path / "c", reader_uid="nobody", reader_gid=1)
    with pytest.raises(ValueError, match="readable_by"):
        gate.take_folder(tmp_path, tmp_path / "c", **READER, readable_by="everyone")
    with pytest.raises(ValueError, match="caps.members"):
        gate.Caps(members=0)
    (tmp_path / "link").symlink_to(tmp_path)
    with pytest.raises(ValueError, match="src cannot be opened"):
        gate.take_folder(tmp_path / "link", tmp_path / "c", **READER)
    with pytest.raises(ValueError, match="archive cannot be opened"):
        gate.take_archive(tmp_path / "none.zip", tmp_path / "c", **READER)
    os.mkfifo(tmp_path / "pipe.zip")
    with pytest.raises(ValueError, match="archive must be a regular file"):
        gate.take_archive(tmp_path / "pipe.zip", tmp_path / "c", **READER)
    assert not (tmp_path / "c").exists()

"""A fixed-size disk for each student's home and for the exchange, on a
machine without disk quotas.

The hub's machine has no quota tools, so nothing stops one student from
filling the disk the hub, the grader and the whole class write to: a cell
that saves a few gigabytes in the home, or a folder written straight into
the exchange's inbound. Here each of them gets a file system of its own, an
ext4 image file of a fixed size mounted through a loop device:

* a student's home (`home_disk`, called by the spawner before each server
  starts): past the size, a write fails with "No space left on device" in
  that student's home alone. On the first start an empty image is mounted
  over the home and what the home held is moved onto it by the student's
  own tar (root reads none of it); on a later start (the hub or the
  server restarted) a home that is already a mount point is left as it is.
* the exchange (`exchange_disk`, called by `make hub` and `make release`
  when they would make the exchange): every student's inbound together can
  hold no more than its size, so a hoarder fills the exchange, never the
  machine's disk.

The images live in one folder that only root opens (DISKS, 0700), each
0600: a student can neither read another's image nor their own. Each is
reserved in full when it is made (posix_fallocate), so the disk the hub's
students can ever take is known the day the class starts: the number of
students times HOME_MB, plus EXCHANGE_MB. Mounts are nosuid and nodev.
Nothing here unmounts on its own: a home stays mounted when its server
stops (`unmount` takes it off, before `userdel -r` say).
"""
from __future__ import annotations

import contextlib
import os
import pwd
import re
import stat
import subprocess
from pathlib import Path

MB = 2 ** 20
DISKS = Path(os.environ.get("RAG_HUB_DISKS", "/srv/rag-course-hub/disks"))
HOME_MB = int(os.environ.get("RAG_HUB_HOME_MB", "512"))
EXCHANGE_MB = int(os.environ.get("RAG_HUB_EXCHANGE_MB", "4096"))
# mkfs.ext4 (and hubctl.py's useradd, runuser) live in the sbin folders,
# which a bare PATH (env -i, cron, CI) leaves out
for _sbin in ("/usr/sbin", "/sbin"):
    if _sbin not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = os.environ.get("PATH", "/usr/bin:/bin") + os.pathsep + _sbin


class DiskProblem(Exception):
    """An image that cannot be made or mounted; the message says what to do."""


def mount_points() -> set[str]:
    """Every mount point of this mount namespace (/proc/self/mountinfo,
    with its octal escapes undone)."""
    points = set()
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4]
        points.add(re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), point))
    return points


def mounted(path: Path) -> bool:
    return str(path) in mount_points()


def disks_folder(disks: Path) -> Path:
    """The images' folder, root's and 0700, made if missing."""
    disks.mkdir(parents=True, exist_ok=True)
    info = os.lstat(disks)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != 0:
        raise DiskProblem(f"{disks}, the folder of the hub's disk images, is not a folder of "
                          f"root's: remove it (or pick another, RAG_HUB_DISKS=...)")
    os.chmod(disks, 0o700)
    return disks


def make_image(image: Path, megabytes: int) -> None:
    """An empty ext4 image of `megabytes` MB at `image` (0600, reserved in
    full). Made beside its final name and renamed when complete, so that a
    failed attempt never leaves a half-made image to be mounted later."""
    if not isinstance(megabytes, int) or megabytes < 16:
        raise ValueError(f"megabytes must be an int of at least 16 (got megabytes={megabytes!r})")
    new = image.with_name(image.name + ".new")
    if os.path.lexists(new):
        os.unlink(new)  # an earlier attempt's, in a folder only root writes
    fd = os.open(new, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o600)
    try:
        os.posix_fallocate(fd, 0, megabytes * MB)
    except OSError as err:
        os.close(fd)
        os.unlink(new)
        raise DiskProblem(f"no room for a {megabytes} MB image at {image} ({err.strerror}): "
                          "free some disk, or make the images smaller") from None
    os.close(fd)
    # -m 0: no blocks kept for root, the student gets the whole size;
    # nodiscard keeps the reservation (a discard would punch it out again)
    done = subprocess.run(["mkfs.ext4", "-q", "-F", "-m", "0", "-E",
                           "nodiscard,root_owner=0:0", str(new)], capture_output=True, text=True)
    if done.returncode:
        os.unlink(new)
        raise DiskProblem(f"mkfs.ext4 could not make {image}: {done.stderr.strip()[-300:]}")
    os.rename(new, image)


def move_in(account: pwd.struct_passwd, old: int, home: Path) -> None:
    """Copy what the home held before its disk (the folder open as `old`,
    now under the mount) onto the disk at `home`: tar reads it and tar
    writes it, both as the student, so root reads none of the student's
    bytes and follows none of their links. What the student cannot read
    there is left out; more than the disk holds fails."""
    student = {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": [],
               "env": {"PATH": "/usr/bin:/bin", "LC_ALL": "C"}}
    # the child changes into the old folder through its inherited descriptor
    # while still root, then becomes the student before tar reads anything
    reader = subprocess.Popen(["tar", "--create", "--file=-", "--ignore-failed-read",
                               "--one-file-system", "."], cwd=f"/proc/self/fd/{old}",
                              pass_fds=(old,), stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, **student)
    try:
        writer = subprocess.run(["tar", "--extract", "--file=-", "--preserve-permissions",
                                 f"--directory={home}"], stdin=reader.stdout,
                                capture_output=True, text=True, timeout=600, cwd="/", **student)
    finally:
        reader.stdout.close()
        reader.kill()
        reader.wait()
    if writer.returncode:
        raise DiskProblem(f"{home} holds more than its disk takes, or files that cannot be "
                          f"moved: {writer.stderr.strip()[-300:]}")


def mount_image(image: Path, target: Path, options: str, fresh: bool) -> None:
    """Mount `image` at the folder `target` through a loop device (freed
    again when it is unmounted). On a `fresh` image, mkfs's empty
    lost+found goes: a folder root's and closed, it would sit in the
    student's file browser (e2fsck makes it again when it needs one)."""
    done = subprocess.run(["mount", "-o", f"loop,{options}", str(image), str(target)],
                          capture_output=True, text=True)
    if done.returncode or not mounted(target):
        raise DiskProblem(f"cannot mount {image} at {target}: {done.stderr.strip()[-300:]} "
                          "(this needs root and loop devices: /dev/loop-control)")
    if fresh:
        with contextlib.suppress(OSError):
            os.rmdir(target / "lost+found")


def unmount(path: Path) -> bool:
    """Take the file system mounted at `path` off (lazily when something
    still holds it open); whether one was mounted there."""
    if not mounted(path):
        return False
    if subprocess.run(["umount", str(path)], capture_output=True).returncode:
        subprocess.run(["umount", "--lazy", str(path)], check=True, capture_output=True)
    return True


def home_disk(name: str, disks: Path = DISKS, megabytes: int = HOME_MB) -> Path | None:
    """As root, before `name`'s server starts: their home on an image of
    `megabytes` MB (on the first start, with a copy of what the home held:
    `move_in`), the student's and 0700; returns the image, or None when the home is a mount
    point already (an earlier start's image, or the machine's own) or
    `megabytes` is 0 (no cap)."""
    if not megabytes:
        return None
    account = pwd.getpwnam(name)
    home = Path(account.pw_dir)
    info = os.lstat(home)
    parent = os.lstat(home.parent)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != account.pw_uid or \
            parent.st_uid != 0 or stat.S_IMODE(parent.st_mode) & 0o022:
        raise DiskProblem(f"{home} is not a folder of {name}'s in a folder only root "
                          "writes: the hub puts no disk image there")
    if mounted(home):
        return None
    image = disks_folder(disks) / f"home-{name}.img"
    fresh = not image.is_file()
    if fresh:
        make_image(image, megabytes)
    old = os.open(home, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        mount_image(image, home, "nosuid,nodev", fresh)
        os.chown(home, account.pw_uid, account.pw_gid)
        os.chmod(home, 0o700)
        if fresh:
            move_in(account, old, home)
    except DiskProblem as problem:
        unmount(home)  # the home as it was, and a new image next time
        if fresh:
            os.unlink(image)
        raise DiskProblem(f"{name}'s home cannot go on a {megabytes} MB disk: "
                          f"{problem}") from None
    finally:
        os.close(old)
    return image


def exchange_disk(root: Path, mode: int, disks: Path = DISKS,
                  megabytes: int = EXCHANGE_MB) -> str | None:
    """As root, before the exchange's folders are made: the exchange's root
    on an image of `megabytes` MB when it is new (missing or an empty
    folder), its root given `mode` when the image is new; returns what was
    done, in a line for the log (None when `megabytes` is 0, no cap). An
    exchange that already holds files is left where it is (its students'
    work would disappear under the mount): the line says how to move it."""
    if not megabytes:
        return None
    if os.path.lexists(root) and mounted(root):
        return f"{root}: a file system of its own already"
    if os.path.lexists(root) and (not root.is_dir() or root.is_symlink() or any(root.iterdir())):
        return (f"{root} holds files already, so it stays on the machine's disk, which "
                "the students can fill through it: collect everything, move it away and "
                f"make hub again to put it on a {megabytes} MB image of its own")
    label = "-".join(root.resolve().parts[1:]) or "root"
    image = disks_folder(disks) / f"exchange-{label}.img"
    fresh = not image.is_file()
    if fresh:
        make_image(image, megabytes)
    root.mkdir(parents=True, exist_ok=True)
    mount_image(image, root, "nosuid,nodev,noexec", fresh)
    if fresh:
        os.chmod(root, mode)
    return f"{root}: on {image}, {megabytes} MB for the whole exchange"

"""Limits on each student's server on the hub: one cgroup per server
(memory, process count, CPU), resource limits as the fallback, and the
home on a disk of a fixed size (hub/disks.py) before the server starts.

The hub runs every student's `jupyterhub-singleuser` and, under it, their
kernels and terminals. Without limits, one cell that allocates without end
or forks without end takes the machine, the hub and the whole class with
it. `CappedSpawner` (hub/jupyterhub_config.py uses it) makes a cgroup for
each server before it starts, moves the new process into it while still
root (before it drops to the student's account), so that nothing the
student runs is ever outside it, and kills whatever is left in it when the
server stops. The memory and process caps come from the grader's own
sandbox code (autograder/run/kernel_sandbox.py makes cgroups on v1 and v2);
the CPU share is added here.

The numbers, from what the course needs (hub/README.md, Limits):
a lab kernel peaks near 320 MB and a server with JupyterLab holds about
100 MB, so 1 GiB covers a server with two notebooks' kernels open;
256 processes and threads are ten times what one server with two kernels
uses; one CPU each keeps a busy student from starving the others on a
shared machine.
"""
from __future__ import annotations

import asyncio
import contextlib
import os
import resource
from pathlib import Path

from autograder.run.kernel_sandbox import join_cgroup, make_cgroup, remove_cgroup
# hub/disks.py: hub/ is on the path, as the folder of the script that runs
# (hubctl.py) or put there by jupyterhub_config.py, which loads this file
from disks import home_disk  # noqa: E402

MB = 2 ** 20
MEMORY_BYTES = int(os.environ.get("RAG_HUB_MEMORY_MB", "1024")) * MB
TASKS = int(os.environ.get("RAG_HUB_TASKS", "256"))
CPUS = float(os.environ.get("RAG_HUB_CPUS", "1"))
PERIOD_US = 100_000


def cpu_folder(cgroup: dict) -> Path | None:
    """The cgroup folder that takes this server's CPU cap: the same folder
    on v2, the `cpu` hierarchy's twin of the memory folder on v1 (None when
    this machine mounts no cpu controller)."""
    memory = Path(cgroup["join"][0])
    if cgroup["version"] == 2:
        return memory
    own = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(","):
            own[name] = path.lstrip("/")
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        sep = fields.index("-")
        if fields[sep + 1] == "cgroup" and "cpu" in fields[sep + 3].split(",") and "cpu" in own:
            # the same two last parts as the memory folder: rag-grade-<pid>/<name>
            return Path(fields[4], own["cpu"], *memory.parts[-2:])
    return None


def server_cgroup(name: str) -> dict | None:
    """As root, the cgroup of `name`'s server, capped; None when this
    machine offers none (the resource limits of `enter` still hold)."""
    cgroup = make_cgroup(f"hub-{name}", MEMORY_BYTES, TASKS)
    if cgroup is None:
        return None
    folder = cpu_folder(cgroup)
    quota = str(int(CPUS * PERIOD_US))
    with contextlib.suppress(OSError):
        if folder is not None and cgroup["version"] == 2:
            with contextlib.suppress(OSError):
                (folder.parent / "cgroup.subtree_control").write_text("+cpu")
            (folder / "cpu.max").write_text(f"{quota} {PERIOD_US}")
        elif folder is not None:
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "cpu.cfs_period_us").write_text(str(PERIOD_US))
            (folder / "cpu.cfs_quota_us").write_text(quota)
            cgroup["join"].append(str(folder))
    return cgroup


def enter(cgroup: dict | None) -> None:
    """In the new server's process, still root: into its cgroup, then the
    resource limits that hold with or without one (processes of the
    student's account; address space only when no cgroup caps memory)."""
    join_cgroup(cgroup)
    resource.setrlimit(resource.RLIMIT_NPROC, (TASKS, TASKS))
    if cgroup is None:
        # per process, so looser than the cgroup's cap on the server's whole
        # tree; virtual size runs ahead of resident memory (threads' stacks)
        size = 2 * MEMORY_BYTES
        resource.setrlimit(resource.RLIMIT_AS, (size, size))


def capped_spawner(base: type) -> type:
    """`base` (LocalProcessSpawner) with a cgroup per server and the
    student's home on a disk of its own (hub/disks.py)."""

    class CappedSpawner(base):
        cgroup: dict | None = None

        async def start(self):
            # before anything of the student's runs; mkfs may take a second,
            # which the hub spends serving the others
            image = await asyncio.to_thread(home_disk, self.user.name)
            if image is not None:
                self.log.info("%s's home: on %s", self.user.name, image)
            return await super().start()

        def make_preexec_fn(self, name):
            drop = super().make_preexec_fn(name)
            remove_cgroup(self.cgroup)  # a server restarted after a crash
            cgroup = self.cgroup = server_cgroup(name)
            if cgroup is None:
                self.log.warning("no cgroup for %s's server: only resource limits hold", name)

            def preexec():
                enter(cgroup)
                drop()
            return preexec

        async def stop(self, now=False):
            try:
                await super().stop(now=now)
            finally:
                # whatever the server left running (a kernel, a fork bomb's
                # children) goes with it
                remove_cgroup(self.cgroup)
                self.cgroup = None

    return CappedSpawner

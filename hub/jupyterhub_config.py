"""JupyterHub for this course on one machine: `make hub` runs the hub with it.

hub/hubctl.py checks the machine first and hands this file its settings in
RAG_HUB_* variables (ports it found free, the hub's state folder, the
exchange, the grader account, the students' environment). In short:

* login: PAM, each student with their Linux account and password, for the
  members of the group rag-students (`make hub-user U=name` adds one). For
  a one-day workshop, `make hub AUTH=shared` lets any account log in with
  one shared password (RAG_HUB_SHARED_PASSWORD, at least 8 characters);
  the accounts must still exist on the machine, as each server runs as one;
* servers: LocalProcessSpawner runs `jupyterhub-singleuser` from the hub's
  runtime (/opt/rag-course-hub/venv) as the student, JupyterLab first;
  the runtime's etc/jupyter turns off nbgrader's instructor tools
  (formgrader, create assignment, course list) and keeps the Assignments
  panel and Validate, with the exchange and the course id set;
* formgrader: a hub service run by the grader account on the graded
  course (GRADES/formgrader, from `make grade`), with the pack's
  Content-Security-Policy (autograder/reports/formgrader_csp.py); only the group
  formgrade-rag-building-blocks may open it (nbgrader's documented group
  and role), everyone else gets 403;
* idle servers stop after an hour (jupyterhub-idle-culler);
* limits: each server runs in a cgroup of its own (memory, processes,
  CPU), with resource limits as the fallback (hub/server_limits.py), and
  the student's home is a disk image of a fixed size (hub/disks.py;
  RAG_HUB_DISKS and RAG_HUB_HOME_MB come from hubctl.py).
"""
import os
import sys
from pathlib import Path

from jupyterhub.spawner import LocalProcessSpawner

# a configuration file, loaded by its path: hub/ is no package, so the
# module beside it is found by putting this folder on the path
sys.path.insert(0, str(Path(__file__).resolve().parent))
from server_limits import capped_spawner  # noqa: E402

c = get_config()  # noqa: F821 (JupyterHub injects get_config)
env = os.environ
COURSE = "rag-building-blocks"
state = Path(env["RAG_HUB_STATE"])
venv = Path(env["RAG_HUB_VENV"])
grader = env["RAG_HUB_GRADER"]
course = Path(env["RAG_HUB_GRADES"]) / "formgrader"

# where the hub listens: loopback only; put TLS in front for a class
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = int(env["RAG_HUB_PORT"])
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = int(env["RAG_HUB_API_PORT"])
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{env['RAG_HUB_PROXY_API_PORT']}"
c.ConfigurableHTTPProxy.command = [env["RAG_HUB_PROXY"]]
c.ConfigurableHTTPProxy.pid_file = str(state / "proxy.pid")
c.JupyterHub.db_url = f"sqlite:///{state / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(state / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(state / "jupyterhub.pid")

# who logs in
if env.get("RAG_HUB_AUTH", "pam") == "shared":
    c.JupyterHub.authenticator_class = "shared-password"
    c.SharedPasswordAuthenticator.user_password = env["RAG_HUB_SHARED_PASSWORD"]
    c.Authenticator.allow_all = True
else:
    c.JupyterHub.authenticator_class = "pam"
    c.PAMAuthenticator.allowed_groups = {env.get("RAG_HUB_STUDENTS", "rag-students")}
    c.PAMAuthenticator.open_sessions = False  # no systemd session per login
c.Authenticator.allowed_users = {grader}  # the grader logs in to reach formgrader

# each student's server
c.JupyterHub.spawner_class = capped_spawner(LocalProcessSpawner)
c.Spawner.cmd = [str(venv / "bin" / "jupyterhub-singleuser")]
c.Spawner.default_url = "/lab"
c.Spawner.environment = {"RAG_COURSE_EXCHANGE": env["RAG_COURSE_EXCHANGE"],
                         "PATH": f"{venv / 'bin'}:/usr/local/bin:/usr/bin:/bin"}
c.Spawner.http_timeout = 90
c.Spawner.start_timeout = 120

# formgrader as a service, run by the grader account (nbgrader's docs,
# "Using nbgrader with JupyterHub"), with the pack's CSP settings
service = f"formgrader-{COURSE}"
c.JupyterHub.load_groups = {service: {"users": [grader]}}
c.JupyterHub.load_roles = [
    {"name": service, "groups": [service],
     "scopes": [f"access:services!service={service}", "list:services",
                f"read:services!service={service}"]},
    {"name": "idle-culler", "services": ["idle-culler"],
     "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"]},
]
c.JupyterHub.services = [
    {"name": service,
     "url": f"http://127.0.0.1:{env['RAG_HUB_FORMGRADER_PORT']}",
     "user": grader,
     "cwd": str(course),
     "oauth_no_confirm": True,
     "command": [str(venv / "bin" / "jupyterhub-singleuser"),
                 f"--config={venv.parent / 'formgrader' / 'hub_service_config.py'}",
                 f"--ServerApp.root_dir={course}"],
     "environment": {"JUPYTERHUB_DEFAULT_URL": "/formgrader",
                     "PATH": f"{venv / 'bin'}:/usr/bin:/bin"}},
    {"name": "idle-culler",
     "command": [env.get("RAG_HUB_PYTHON", "python3"), "-m", "jupyterhub_idle_culler",
                 f"--timeout={env.get('RAG_HUB_CULL', '3600')}"]},
]

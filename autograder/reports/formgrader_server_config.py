"""Jupyter server settings of `course.py formgrader` (passed as `--config`).

Loads formgrader_csp (formgrader's pages run only their own, nonce'd
scripts) and sends every other page of the server with
formgrader_csp.server_policy() as its Content-Security-Policy.
"""
import sys
from pathlib import Path

# a config file, loaded by its path, that imports the module beside it by
# its bare name: the hub's formgrader service gets the two files alone, in a
# folder of their own (hub/hubctl.py), without the autograder package
HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # this server process only: no kernel sees it
    sys.path.insert(0, str(HERE))

import formgrader_csp  # noqa: E402

c = get_config()  # noqa: F821 (the config loader injects get_config)

c.ServerApp.jpserver_extensions.update({"formgrader_csp": True})
c.ServerApp.tornado_settings = {
    "headers": {"Content-Security-Policy": formgrader_csp.server_policy()}}

"""The student's Jupyter server: `make lab` points JUPYTER_CONFIG_DIR here.

nbgrader installs four server extensions. A student uses one, the Validate
button's; the other three are the instructor's (formgrader, and the
assignment and course lists of an exchange this course does not use), and
each would log a warning about a missing nbgrader_config.py or exchange
folder. labconfig/page_config.json turns off their JupyterLab side.
"""
c = get_config()  # noqa: F821 (Jupyter injects get_config)

c.ServerApp.jpserver_extensions = {
    "nbgrader.server_extensions.validate_assignment": True,
    "nbgrader.server_extensions.formgrader": False,
    "nbgrader.server_extensions.assignment_list": False,
    "nbgrader.server_extensions.course_list": False,
}

# jupyter_server keeps a notebook's connection alive with its own ping
# every 30 s and a 90 s timeout, and hands the same two numbers (meant as
# milliseconds) to tornado, which reads them as seconds and warns on each
# start that its timeout may not exceed its interval. A JupyterLab on the
# student's own computer needs no keep-alive: no ping, no warning.
c.ServerApp.tornado_settings = {"ws_ping_interval": 0}

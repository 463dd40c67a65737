"""Write hub/helm/chart-keys.txt from a Zero to JupyterHub chart's schema.

    python hub/helm/chart_keys.py path/to/jupyterhub/values.schema.yaml COMMIT DATE VERSION

The file lists every key path the schema names, keys joined by "/"; a
last key `*` marks a place where the chart takes any key, `~REGEX` a key
matching REGEX. tests/test_hub_k8s.py reads it offline.
"""
import sys
from pathlib import Path

import yaml

HEAD = """# Every key path of the Zero to JupyterHub chart's values.schema.yaml, one a
# line, its keys joined by "/", read from the chart's repository
# (jupyterhub/zero-to-jupyterhub-k8s, commit {commit} of {date}, app version
# {version}). A last key `*` means the chart takes any key there, a key
# `~REGEX` any key that matches REGEX. tests/test_hub_k8s.py checks every key
# of hub/helm/values.yaml against these, offline; hub/helm/chart_keys.py
# writes this file again from a newer chart's schema.
"""


def key_paths(node: dict, path: str = "") -> set[str]:
    found: set[str] = set()
    if not isinstance(node, dict):
        return found
    children = node.get("properties")
    if children:
        for key, child in children.items():
            here = f"{path}/{key}" if path else key
            found.add(here)
            found |= key_paths(child, here)
        # JSON schema: keys not named are allowed unless additionalProperties is false
        if node.get("additionalProperties", True) is not False and path:
            found.add(f"{path}/*")
    elif "object" in ([kind] if isinstance(kind := node.get("type"), str) else kind or []) \
            and node.get("additionalProperties", True) is not False \
            and not node.get("patternProperties"):
        found.add(f"{path}/*")
    for pattern, child in node.get("patternProperties", {}).items():
        here = f"{path}/~{pattern}"  # a key that matches this regular expression
        found.add(here)
        found |= key_paths(child, here)
    return found


if __name__ == "__main__":
    schema, commit, date, version = sys.argv[1:5]
    paths = sorted(key_paths(yaml.safe_load(Path(schema).read_text())))
    target = Path(__file__).with_name("chart-keys.txt")
    target.write_text(HEAD.format(commit=commit, date=date, version=version)
                      + "\n".join(paths) + "\n")

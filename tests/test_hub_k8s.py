"""The Kubernetes page's Helm values, checked offline (hub/kubernetes.md).

hub/helm/values.yaml must parse, and every key in it must be a key of the
Zero to JupyterHub chart: hub/helm/chart-keys.txt lists the chart schema's
key paths (hub/helm/chart_keys.py reads them from the chart). The values'
own choices the page argues for are checked too: culling on, the memory
request no lower than the figures measured on one machine, the exchange on
a ReadWriteMany claim mounted where the student configuration looks.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
HELM = ROOT / "hub" / "helm"
sys.path.insert(0, str(HELM))
import chart_keys  # noqa: E402


def schema_paths() -> list[list[str]]:
    lines = (HELM / "chart-keys.txt").read_text().splitlines()
    return [line.split("/") for line in lines if line and not line.startswith("#")]


def value_paths(node, path=()) -> list[tuple[str, ...]]:
    """Every key path of a values tree (lists are values, not keys)."""
    found = []
    if isinstance(node, dict):
        for key, child in node.items():
            found.append((*path, str(key)))
            found += value_paths(child, (*path, str(key)))
    return found


def known(path: tuple[str, ...], schema: list[list[str]]) -> bool:
    for keys in schema:
        for i, part in enumerate(path):
            if i >= len(keys):
                break
            if keys[i] == "*":
                return True
            if keys[i].startswith("~"):
                if not re.match(keys[i][1:], part):
                    break
            elif keys[i] != part:
                break
            if i == len(path) - 1:
                return True
    return False


def test_the_key_matcher_tells_chart_keys_from_others():
    schema = [["hub", "config", "~^[A-Z].*$", "*"], ["cull", "timeout"], ["hub", "extraEnv", "*"]]
    assert known(("hub", "config", "KubeSpawner", "anything"), schema)
    assert not known(("hub", "config", "lowercase"), schema)
    assert known(("cull", "timeout"), schema) and not known(("cull", "timout"), schema)
    assert known(("hub", "extraEnv", "X"), schema) and not known(("hub", "extraenv"), schema)


def test_the_key_list_is_the_schemas():
    """chart_keys.key_paths on a small schema gives the paths the list holds."""
    schema = {"type": "object", "additionalProperties": False, "properties": {
        "cull": {"type": "object", "additionalProperties": False,
                 "properties": {"timeout": {"type": "integer"}}},
        "hub": {"type": "object", "additionalProperties": False, "properties": {
            "config": {"type": "object", "additionalProperties": False,
                       "patternProperties": {"^[A-Z].*$": {"type": "object"}}},
            "extraEnv": {"type": "object"}}}}}
    assert chart_keys.key_paths(schema) == {
        "cull", "cull/timeout", "hub", "hub/config", "hub/config/~^[A-Z].*$",
        "hub/config/~^[A-Z].*$/*", "hub/extraEnv", "hub/extraEnv/*"}
    lines = schema_paths()
    assert len(lines) > 400 and ["cull", "timeout"] in lines
    assert ["singleuser", "storage", "extraVolumes"] in lines


def test_the_course_values_name_only_chart_keys():
    values = yaml.safe_load((HELM / "values.yaml").read_text())
    schema = schema_paths()
    unknown = ["/".join(p) for p in value_paths(values) if not known(p, schema)]
    assert unknown == [], f"keys the chart does not know: {unknown}"
    # a misspelt key is caught (the check is not vacuous)
    assert not known(("singleuser", "memroy"), schema)


def test_the_course_values_say_what_the_page_says():
    values = yaml.safe_load((HELM / "values.yaml").read_text())
    single = values["singleuser"]
    assert values["cull"]["enabled"] is True and values["cull"]["timeout"] == 3600
    size = {"M": 1, "G": 1024}
    guarantee = int(single["memory"]["guarantee"][:-1]) * size[single["memory"]["guarantee"][-1]]
    limit = int(single["memory"]["limit"][:-1]) * size[single["memory"]["limit"][-1]]
    # an idle Lab (~160 MB) and a kernel at its peak (~320 MB) must fit the request
    assert guarantee >= 160 + 320 and limit >= guarantee
    mount = single["storage"]["extraVolumeMounts"][0]
    assert mount["mountPath"] == single["extraEnv"]["RAG_COURSE_EXCHANGE"]
    assert single["defaultUrl"] == "/lab"
    roles = values["hub"]["loadRoles"]["formgrade-rag-building-blocks"]
    assert "access:services!service=formgrader-rag-building-blocks" in roles["scopes"]


@pytest.mark.parametrize("broken", ["singleuser:\n  memory: [1\n", "cull: {enabled: true\n"])
def test_a_broken_values_file_does_not_parse(broken):
    with pytest.raises(yaml.YAMLError):
        yaml.safe_load(broken)

"""editors/acp/agent.json is a valid ACP registry entry for this release: the registry's
required members and their formats, a ``uvx`` distribution of this package at this
version running ``agent-bridge acp``, and a 16x16 monochrome ``currentColor`` icon
(scripts/release.py runs the registry's own checks; tests/test_release.py runs it)."""

from __future__ import annotations

import json
import re
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import agent_bridge

ROOT = Path(__file__).resolve().parent.parent
ENTRY = ROOT / "editors" / "acp"


def test_agent_json_matches_the_release() -> None:
    entry = json.loads((ENTRY / "agent.json").read_text())
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    version = agent_bridge.__version__  # the one place (pyproject.toml reads it)
    assert set(entry) <= {
        "id",
        "name",
        "version",
        "description",
        "repository",
        "website",
        "authors",
        "license",
        "license_url",
        "icon",
        "distribution",
    }
    for member in ("id", "name", "version", "description", "distribution"):
        assert entry[member], member
    assert re.fullmatch(r"[a-z][a-z0-9-]*", entry["id"])
    assert entry["version"] == version
    assert re.match(r"[0-9]+\.[0-9]+\.[0-9]+", entry["version"])
    assert entry["license"] == project["license"]
    assert all(isinstance(a, str) for a in entry.get("authors", []))
    assert set(entry["distribution"]) == {"uvx"}
    uvx = entry["distribution"]["uvx"]
    assert set(uvx) <= {"package", "args", "env"}
    assert uvx["package"] == f"{project['name']}=={version}"
    assert uvx["args"] == ["acp"]
    # the package's console script is the one uvx runs
    assert "agent-bridge" in project["scripts"]


def test_icon_is_16x16_monochrome_current_color() -> None:
    root = ET.fromstring((ENTRY / "icon.svg").read_text())
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert root.get("width") == "16" and root.get("height") == "16"
    assert root.get("viewBox") == "0 0 16 16"
    colours = [
        value
        for element in root.iter()
        for name in ("fill", "stroke", "color", "stop-color")
        if (value := element.get(name)) is not None
    ]
    assert colours and set(colours) <= {"currentColor", "none"}
    assert "style" not in {k for e in root.iter() for k in e.attrib}

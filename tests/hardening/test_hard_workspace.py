"""Case 39: file paths from hosts and providers -- relative, ``..``, a sibling prefix, a
symlink escape, a NUL byte -- are rejected, with containment checked on the resolved
real path (``bridge/workspace.py``).

Host side: ``session/create``'s ``workspace`` goes through :func:`resolve_workspace` (the
relative / nonexistent / NUL forms over the wire are in
``tests/test_bridge_e2e.py::test_workspace_must_be_an_existing_absolute_directory``; the
symlink and not-a-directory forms are here).  Provider side: :func:`contained` is the
check for a path a provider names relative to the workspace.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import running_bridge
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_bridge.errors import BridgeError
from agent_bridge.workspace import contained, resolve_workspace

# --------------------------------------------------------------------------- fixtures


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    """work/a (the workspace) with a file, a subdirectory, links in and out, and a
    sibling work/ab whose name shares the prefix."""
    tmp_path = Path(os.path.realpath(tmp_path))
    work = tmp_path / "work"
    ws = work / "a"
    (ws / "sub").mkdir(parents=True)
    (ws / "sub" / "f.txt").write_text("x")
    sibling = work / "ab"
    sibling.mkdir()
    (sibling / "secret.txt").write_text("s")
    outside = tmp_path / "outside"
    outside.mkdir()
    (ws / "escape").symlink_to(outside)  # a directory link out of the workspace
    (ws / "escape_file").symlink_to(sibling / "secret.txt")
    (ws / "inner").symlink_to(ws / "sub")  # a link that stays inside
    (ws / "dangling").symlink_to(tmp_path / "nowhere" / "x")
    return {"ws": ws, "sibling": sibling, "outside": outside, "tmp": tmp_path}


def _rejected(ws: Path, path: str) -> bool:
    try:
        contained(str(ws), path)
    except BridgeError as exc:
        assert exc.error_code == "workspace_invalid"
        return True
    return False


# --------------------------------------------------------------------------- provider paths


@pytest.mark.parametrize(
    "path",
    [
        "..",
        "../ab/secret.txt",  # sibling via ..
        "sub/../../ab",
        "sub/../../../outside",
        "escape",  # symlink to a directory outside
        "escape/anything",
        "escape_file",  # symlink to a file in the sibling
        "inner/../../ab",  # .. after a symlink is resolved on the real path
        "a\0b",  # NUL
        "sub/\0",
    ],
)
def test_case_39_provider_path_escapes_rejected(tree: dict[str, Path], path: str) -> None:
    assert _rejected(tree["ws"], path), path


def test_case_39_sibling_prefix_is_not_inside(tree: dict[str, Path]) -> None:
    # "/…/work/ab" starts with the string "/…/work/a" but is not inside it.
    assert _rejected(tree["ws"], str(tree["sibling"]))
    assert _rejected(tree["ws"], str(tree["sibling"] / "secret.txt"))


def test_case_39_absolute_paths_inside_accepted_outside_rejected(tree: dict[str, Path]) -> None:
    ws = tree["ws"]
    assert contained(str(ws), str(ws / "sub" / "f.txt")) == str(ws / "sub" / "f.txt")
    assert _rejected(ws, "/etc/passwd")
    assert _rejected(ws, str(tree["outside"]))


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("", "."),
        (".", "."),
        ("sub/f.txt", "sub/f.txt"),
        ("sub/../sub/./f.txt", "sub/f.txt"),
        ("inner/f.txt", "sub/f.txt"),  # a link that stays inside is fine, as its target
        ("new/file/not/yet/there", "new/file/not/yet/there"),
    ],
)
def test_case_39_paths_inside_accepted_as_their_real_path(
    tree: dict[str, Path], path: str, expected: str
) -> None:
    ws = tree["ws"]
    assert contained(str(ws), path) == os.path.normpath(str(ws / expected))


def test_case_39_dangling_symlink_is_judged_by_its_target(tree: dict[str, Path]) -> None:
    assert _rejected(tree["ws"], "dangling")


def test_case_39_workspace_given_through_a_symlink_is_compared_on_its_real_path(
    tree: dict[str, Path],
) -> None:
    link = tree["tmp"] / "ws_link"
    link.symlink_to(tree["ws"])
    assert contained(str(link), "sub/f.txt") == str(tree["ws"] / "sub" / "f.txt")
    assert _rejected(link, "../ab")


def test_case_39_filesystem_root_as_workspace_contains_everything() -> None:
    # Regression: the string-prefix check compared against "//" and rejected every path.
    assert contained("/", "etc") == os.path.realpath("/etc")
    assert contained("/", "/") == "/"


_SEGMENTS = st.sampled_from(["..", ".", "sub", "f.txt", "escape", "inner", "ab", "a", "x", ""])


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(parts=st.lists(_SEGMENTS, max_size=6), absolute=st.booleans())
def test_case_39_property_accepted_paths_are_inside_on_the_real_path(
    tree: dict[str, Path], parts: list[str], absolute: bool
) -> None:
    ws = tree["ws"]
    path = "/".join(parts)
    if absolute:
        path = str(tree["tmp"] / "work" / path)
    real_ws = os.path.realpath(ws)
    try:
        result = contained(str(ws), path)
    except BridgeError:
        # Rejected: then the real path really is outside.
        real = os.path.realpath(os.path.join(real_ws, path))
        assert os.path.commonpath((real_ws, real)) != real_ws
        return
    assert result == os.path.realpath(result)
    assert os.path.commonpath((real_ws, result)) == real_ws


# --------------------------------------------------------------------------- host paths


@pytest.mark.parametrize("bad", ["relative", "./rel", "../up", "a\0b", "/\0"])
def test_case_39_host_workspace_relative_or_nul_rejected(bad: str) -> None:
    with pytest.raises(BridgeError) as info:
        resolve_workspace(bad)
    assert info.value.error_code == "workspace_invalid"


def test_case_39_host_workspace_must_resolve_to_a_directory(tree: dict[str, Path]) -> None:
    with pytest.raises(BridgeError):
        resolve_workspace(str(tree["ws"] / "sub" / "f.txt"))
    with pytest.raises(BridgeError):
        resolve_workspace(str(tree["ws"] / "dangling"))
    # A link or a path with ".." is accepted as the real directory it names.
    assert resolve_workspace(str(tree["ws"] / "escape")) == str(tree["outside"])
    assert resolve_workspace(str(tree["ws"] / "sub" / "..")) == str(tree["ws"])


async def test_case_39_host_workspace_over_the_wire(tree: dict[str, Path]) -> None:
    async with running_bridge("newline") as bridge:
        for bad in (str(tree["ws"] / "sub" / "f.txt"), str(tree["ws"] / "dangling")):
            reply = await bridge.call("session/create", {"provider": "scripted", "workspace": bad})
            assert reply["error"]["data"]["code"] == "workspace_invalid", bad
        # Reported as its real path, so the host sees where the session really works.
        ok = await bridge.result(
            "session/create", {"provider": "scripted", "workspace": str(tree["ws"] / "inner")}
        )
        assert ok["session"]["workspace"] == str(tree["ws"] / "sub")

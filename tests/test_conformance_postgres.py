"""The whole conformance corpus (``tests/conformance/*.jsonl``) replayed against a bridge
whose journal is PostgreSQL (``serve --journal``, a fresh database per transcript on the
test session's throwaway cluster), over stdio with newline framing: the wire is the
same whichever backend keeps the journal (``docs/fleet.md``).  The other transports and
framings are tests/test_conformance.py's, on SQLite."""

from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from conformance.replay import CORPUS_DIR, load_corpus_file, replay

FILES = sorted(CORPUS_DIR.glob("*.jsonl"))


@pytest.fixture(scope="module")
def outcomes(pg_cluster: Any) -> dict[Path, BaseException | None]:
    def run(path: Path) -> BaseException | None:
        try:
            transcript = load_corpus_file(path)
            url = pg_cluster.new_database()
            args = (*transcript.args, "--journal", url, "--node", "replay-node")
            transcript = dataclasses.replace(transcript, args=args)
            replay(transcript, "newline", listed_node="replay-node")
        except BaseException as exc:  # reported by the test of this file
            return exc
        return None

    with ThreadPoolExecutor(max_workers=3) as pool:
        return dict(zip(FILES, pool.map(run, FILES), strict=True))


@pytest.mark.timeout(900)  # the first case waits for the whole corpus
@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_replay_on_postgresql(path: Path, outcomes: dict[Path, BaseException | None]) -> None:
    error = outcomes[path]
    if error is not None:
        raise error

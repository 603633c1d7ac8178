"""Limits end to end: the real, pinned CLIs against stand-in model servers that refuse a
turn for a limit (an HTTP 429 with reset headers, a spent quota).  Every run ends
``run.failed`` with code ``provider_rate_limited``, the right ``cause`` and, where the CLI
passes one on, the reset time; never ``run.completed``.  What each CLI does with a 429:

* Claude Code retries it itself (``CLAUDE_CODE_MAX_RETRIES``, here 1), waiting what the
  server's ``retry-after`` says (its ``api_retry`` record announces the delay: the
  bridge's retry hint); a spent balance (HTTP 400 "credit balance is too low") is not
  retried.
* Codex retries per its provider's ``request_max_retries`` (here 0); on
  ``usage_limit_reached`` it reports the ``x-codex-*`` rate-limit headers as
  ``account/rateLimits/updated`` (the reset time) and fails the turn at once.
* Gemini CLI retries a per-minute 429 with backoff for minutes; a spent daily quota
  (``QuotaFailure`` with a per-day quota id) fails the prompt at once with ACP error 429.

Without a CLI these tests are skipped loudly; in CI a missing CLI fails them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from bridge_client import drive, start
from conftest import running_bridge
from provider_clis import require_cli
from standins.anthropic_server import AnthropicStandIn, ApiError, Text
from standins.gemini_server import GeminiStandIn
from standins.responses_server import CODEX_OFFLINE_CONFIG, ResponsesStandIn, reply

from agent_bridge.adapters.kit.limits import instant

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]

ROOT = Path(__file__).resolve().parent.parent
Msg = dict[str, Any]


def _failed(events: list[Msg]) -> Msg:
    """The run's terminal event, checked to be ``run.failed`` with a limit's code and
    no ``run.completed`` anywhere."""
    assert not [e for e in events if e["type"] == "run.completed"], events
    assert events[-1]["type"] == "run.failed", events[-1]
    error: Msg = events[-1]["error"]
    assert error["code"] == "provider_rate_limited" and error["retryable"] is True, error
    return error


def _within(iso: str, low: float, high: float) -> None:
    """``iso`` (the bridge's ``resetsAt``) lies between ``low`` and ``high`` (Unix s)."""
    seconds = time.mktime(time.strptime(iso, "%Y-%m-%dT%H:%M:%SZ")) - time.timezone
    assert low - 1 <= seconds <= high + 1, (iso, low, high)


# ----------------------------------------------------------------------------- Claude Code


@pytest.fixture
def claude_env(tmp_path: Path) -> Iterator[tuple[dict[str, str], AnthropicStandIn, Path]]:
    cli = require_cli("claude")
    for name in ("home", "config", "tmp", "work"):
        (tmp_path / name).mkdir()
    with AnthropicStandIn() as server:
        env = {
            "AGENT_BRIDGE_CLAUDE_PATH": cli,
            "HOME": str(tmp_path / "home"),
            "CLAUDE_CONFIG_DIR": str(tmp_path / "config"),
            "TMPDIR": str(tmp_path / "tmp"),
            "ANTHROPIC_BASE_URL": server.base_url,
            "ANTHROPIC_API_KEY": "dummy",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "CLAUDE_CODE_MAX_RETRIES": "1",
        }
        yield env, server, tmp_path / "work"


async def _claude_run(env: dict[str, str], work: Path, text: str) -> list[Msg]:
    async with running_bridge("newline", env=env) as bridge:
        created = await bridge.result(
            "session/create", {"provider": "claude-code", "workspace": str(work)}, timeout=30
        )
        session = created["session"]["sessionId"]
        events: list[Msg] = await drive(bridge, await start(bridge, session, text), timeout=60)
        await bridge.result("session/close", {"sessionId": session}, timeout=20)
    return events


async def test_claude_code_429_fails_rate_limited_with_the_retry_hint(
    claude_env: tuple[dict[str, str], AnthropicStandIn, Path],
) -> None:
    env, server, work = claude_env
    refused = ApiError(
        429,
        "rate_limit_error",
        "stand-in: slow down",
        headers={"retry-after": "1", "anthropic-ratelimit-requests-reset": "2026-12-02T05:00:00Z"},
    )
    server.push(refused, refused)
    before = time.time()
    events = await _claude_run(env, work, "hello")
    after = time.time()
    error = _failed(events)
    details = error["details"]
    assert details["cause"] == "rate_limited" and details["httpStatus"] == "429"
    # The CLI waited what retry-after said before its one retry, and announced it.
    assert details["retryAfterSeconds"] == "1"
    _within(details["resetsAt"], before, after + 1)
    assert [d for d in events if d["type"] == "diagnostic" and d["code"] == "provider_retry"]
    assert len(server.model_requests()) == 2  # the first try and the CLI's one retry
    assert "slow down" not in json.dumps(events)


async def test_claude_code_run_waits_for_the_reset_and_runs_again_under_the_policy(
    claude_env: tuple[dict[str, str], AnthropicStandIn, Path],
) -> None:
    env, server, work = claude_env
    refused = ApiError(429, "rate_limit_error", "stand-in: slow down", headers={"retry-after": "1"})
    server.push(refused, refused, Text("recovered"))
    async with running_bridge("newline", env=env) as bridge:
        params = {
            "provider": "claude-code",
            "workspace": str(work),
            "retryOnLimit": {"maxWaitSeconds": 30},
        }
        created = await bridge.result("session/create", params, timeout=30)
        session = created["session"]["sessionId"]
        events = await drive(bridge, await start(bridge, session, "hello"), timeout=60)
        await bridge.result("session/close", {"sessionId": session}, timeout=20)
    assert events[-1]["type"] == "run.completed", events[-1]
    codes = [e["code"] for e in events if e["type"] == "diagnostic"]
    assert codes.index("limit_retry_waiting") < codes.index("limit_retry_started"), codes
    assert "".join(e["text"] for e in events if e["type"] == "text.delta") == "recovered"
    assert [e["type"] for e in events].count("run.started") == 1  # one run, visibly retried


async def test_claude_code_spent_balance_is_quota_exhausted(
    claude_env: tuple[dict[str, str], AnthropicStandIn, Path],
) -> None:
    env, server, work = claude_env
    server.push(
        ApiError(
            400,
            "invalid_request_error",
            "Your credit balance is too low to access the Anthropic API.",
        )
    )
    events = await _claude_run(env, work, "hello")
    error = _failed(events)
    assert error["details"]["cause"] == "quota_exhausted", error
    assert error["details"]["httpStatus"] == "400"
    assert "resetsAt" not in error["details"]  # the API gives no reset for a balance
    assert "credit balance" not in json.dumps(events)


# ----------------------------------------------------------------------------- Codex

RESET = int(time.time()) + 3600


def _codex_headers(used: int) -> dict[str, str]:
    return {
        "x-codex-primary-used-percent": str(used),
        "x-codex-primary-window-minutes": "300",
        "x-codex-primary-reset-at": str(RESET),
        "x-codex-secondary-used-percent": "40",
        "x-codex-secondary-window-minutes": "10080",
        "x-codex-secondary-reset-at": str(RESET + 86400),
        "retry-after": "1",
    }


USAGE_LIMIT = reply(
    status=429,
    error="stand-in: usage limit",
    headers=_codex_headers(100),
    error_type="usage_limit_reached",
    error_fields={"resets_at": RESET, "plan_type": "plus"},
)
RATE_LIMIT = reply(
    status=429, error="stand-in: rate limit", headers=_codex_headers(50), error_type="rate_limit"
)


class Codex:
    def __init__(self, base: Path, server: ResponsesStandIn, cli: str) -> None:
        self.base, self.server, self.cli = base, server, cli
        self.work = base / "work"
        self.home = base / "codex-home"
        for d in (base / "home", base / "tmp", self.work, self.home):
            d.mkdir()
        (self.home / "config.toml").write_text(CODEX_OFFLINE_CONFIG)
        self.env = {
            "AGENT_BRIDGE_CODEX_PATH": cli,
            "HOME": str(base / "home"),
            "TMPDIR": str(base / "tmp"),
            "STUB_API_KEY": "dummy-key",
        }
        self.options: Msg = {
            "codexHome": str(self.home),
            "config": [
                f'model_providers.stub.base_url="{server.base_url}"',
                "model_providers.stub.request_max_retries=0",
                "model_providers.stub.stream_max_retries=0",
            ],
        }


@pytest.fixture
def codex(tmp_path: Path) -> Iterator[Codex]:
    cli = require_cli("codex")
    with ResponsesStandIn() as server:
        yield Codex(tmp_path, server, cli)
        assert {r.path for r in server.requests} <= {"/v1/responses"}


async def test_codex_usage_limit_reports_limits_and_fails_with_the_reset(codex: Codex) -> None:
    c = codex
    c.server.script(USAGE_LIMIT, RATE_LIMIT)
    async with running_bridge("newline", env=c.env) as bridge:
        params = {"provider": "codex", "workspace": str(c.work), "options": c.options}
        created = await bridge.result("session/create", params, timeout=30)
        session = created["session"]["sessionId"]
        none_yet = await bridge.result("provider/limits", {"provider": "codex"})
        assert none_yet == {"provider": "codex"}  # (empty meters are left out)

        events = await drive(bridge, await start(bridge, session, "hello"), timeout=60)
        error = _failed(events)
        assert error["details"] == {"cause": "quota_exhausted", "resetsAt": instant(RESET)}
        updates = [e for e in events if e["type"] == "limits.updated"]
        assert updates, "Codex's account/rateLimits/updated was not reported"
        primary, secondary = updates[-1]["meters"]
        assert primary == {
            "pool": "codex",
            "meter": "primary",
            "percent": 100.0,
            "windowSeconds": 18000,
            "resetsAt": instant(RESET),
            "status": "exhausted",
        }
        assert secondary["meter"] == "secondary" and secondary["status"] == "ok"
        read = await bridge.result("provider/limits", {"provider": "codex"})
        assert read["meters"] == [primary, secondary] and read["updatedAt"]

        # A plain 429 after Codex's own retries: rate limited.  Codex passes no reset on
        # for it; the primary window it reported exhausted still is, so its reset is the
        # earliest a retry can succeed.
        events = await drive(bridge, await start(bridge, session, "again"), timeout=60)
        error = _failed(events)
        assert error["details"] == {
            "cause": "rate_limited",
            "httpStatus": "429",
            "httpStatusClass": "4xx",
            "resetsAt": instant(RESET),
        }
        assert "stand-in" not in json.dumps(events)
        unknown = await bridge.call("provider/limits", {"provider": "no-such"})
        assert unknown["error"]["data"]["code"] == "provider_not_found"


def test_exec_exits_with_its_retryable_code_on_a_limit(codex: Codex) -> None:
    c = codex
    c.server.script(USAGE_LIMIT)
    argv = [sys.executable, "-m", "agent_bridge", "exec", "--provider", "codex"]
    for key, value in c.options.items():
        argv += ["--option", f"{key}={json.dumps(value)}"]
    argv += ["--workspace", str(c.work), "--state-dir", str(c.base / "state"), "hello"]
    env = {**c.env, "PATH": os.environ["PATH"]}
    done = subprocess.run(argv, env=env, capture_output=True, timeout=90, cwd=c.work)
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    last = lines[-1]["payload"]
    assert last["type"] == "run.failed", last
    assert last["error"]["details"]["cause"] == "quota_exhausted"
    assert done.returncode == 5, done.stderr[-2000:]  # transient: a retry may help


# ----------------------------------------------------------------------------- Gemini CLI


async def test_gemini_spent_daily_quota_is_quota_exhausted(tmp_path: Path) -> None:
    cli = require_cli("gemini")
    home, work = tmp_path / "home", tmp_path / "work"
    for d in (home / ".gemini", work, tmp_path / "tmp"):
        d.mkdir(parents=True)
    shutil.copy(ROOT / "tests" / "data" / "acp" / "gemini-settings.json", home / ".gemini")
    (home / ".gemini" / "gemini-settings.json").rename(home / ".gemini" / "settings.json")
    with GeminiStandIn() as server:
        env = {
            "AGENT_BRIDGE_GEMINI_PATH": cli,
            "HOME": str(home),
            "TMPDIR": str(tmp_path / "tmp"),
            "GEMINI_CLI_HOME": str(home),
            "GEMINI_API_KEY": "dummy",
            "GOOGLE_GEMINI_BASE_URL": server.base_url,
            "GEMINI_CLI_TRUST_WORKSPACE": "true",
        }
        async with running_bridge("newline", env=env) as bridge:
            params = {"provider": "gemini", "workspace": str(work)}
            created = await bridge.result("session/create", params, timeout=60)
            session = created["session"]["sessionId"]
            run = await start(bridge, session, "QUOTA please")
            events = await drive(bridge, run, timeout=90)
            error = _failed(events)
            # Gemini CLI passes neither the quota's RetryInfo nor a reset on over ACP.
            assert error["details"] == {"cause": "quota_exhausted"}
            assert "exhausted your daily quota" not in json.dumps(events)
        assert server.of_kind("stream"), "the turn never reached the stand-in"

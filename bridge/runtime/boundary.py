"""The provider-call boundary: what an adapter raises, translated once.

Every call from the runtime into an adapter (``create_session``, ``start_run``, ``wait``,
``interrupt``, ``steer``, ``export_recovery_record``, ``dispose``) goes through
:func:`provider_call`, so the rule is written in one place: a
:class:`~agent_bridge.errors.BridgeError` (a :class:`~agent_bridge.errors.ProviderFailure`
among them) is the adapter's classified answer and passes as it is; any other exception
is a contract violation, logged here with its traceback (never sent to a host) and turned
into a :class:`BridgeError` with the caller's code.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

from agent_bridge.errors import BridgeError
from agent_bridge.wire.errors import ErrorCode

__all__ = ["provider_call", "quietly"]

log = logging.getLogger("agent_bridge.runtime")


@contextlib.contextmanager
def provider_call(what: str, code: ErrorCode = "provider_contract") -> Iterator[None]:
    """Run the body as a call into a provider.  Raises :class:`BridgeError`: the one the
    provider raised, or ``BridgeError(code)`` for any other exception (logged as
    ``what``)."""
    try:
        yield
    except BridgeError:
        raise
    except Exception:
        log.exception("%s raised", what)
        raise BridgeError(code) from None


@contextlib.contextmanager
def quietly(what: str) -> Iterator[None]:
    """As :func:`provider_call` for calls whose failure changes nothing the runtime does
    next (``interrupt``, ``dispose``, ``export_recovery_record``): the failure is logged
    and swallowed."""
    try:
        yield
    except BridgeError as exc:
        log.warning("%s failed: %s", what, exc.error_code)
    except Exception:
        log.exception("%s raised", what)

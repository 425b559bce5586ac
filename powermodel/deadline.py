"""A deadline for the work of one request, which long loops check as they go.

A server cannot kill a Python thread: work that must stop in time stops itself. The owner of
the work (the dashboard, building a view for a request) sets a deadline with :func:`within`
around it; the loops of the work it calls (a rule check's rules, the ride-through report's
disturbances, a figure's traces, a measure's blocks) call :func:`check` at each turn, which
raises :class:`DeadlineExceeded` with the owner's reason once the deadline has passed. With no
deadline set (a script, the command line), :func:`check` does nothing.

:class:`DeadlineExceeded` is no :class:`~powermodel.errors.PowerModelError`: the work in
between answers bad input of its own by catching those (a response the load model cannot
take, a rule the profile cannot support) and goes on, and would go on past its deadline too.
It leaves the outermost :func:`within` as :class:`PastDeadline`, a PowerModelError, which the
owner says in words.

The deadline is held in a context variable, as ``decimal.localcontext`` and ``numpy.errstate``
hold their settings: each thread (each request of the server) sees only its own, and the
functions in between need no parameter for it. The pure models (``powermodel.models``) hold no
such state: a loop of theirs that must stop in time takes :func:`check` as a callable.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from powermodel.errors import PowerModelError

__all__ = ["DeadlineExceeded", "PastDeadline", "check", "within"]

_DEADLINE: ContextVar[tuple[float, str] | None] = ContextVar("deadline", default=None)


class DeadlineExceeded(Exception):
    """Work that ran past the deadline its owner gave it, on its way out to the owner's
    :func:`within`; the message says why it was given."""


class PastDeadline(PowerModelError):
    """Work stopped at the deadline its owner gave it, as the owner receives it (the
    reason in the message)."""


@contextmanager
def within(seconds: float, reason: str) -> Iterator[None]:
    """Run the block under a deadline ``seconds`` from now, past which :func:`check` raises
    :class:`DeadlineExceeded` with ``reason``. Inside another deadline the earlier one holds;
    the outermost turns the exceeded deadline into :class:`PastDeadline`.

    Parameters
    ----------
    seconds
        Time the work may take. [s]
    reason
        The message once it is past: what took too long and what to change.
    """
    at = time.monotonic() + seconds
    outer = _DEADLINE.get()
    token = _DEADLINE.set(outer if outer is not None and outer[0] <= at else (at, reason))
    try:
        yield
    except DeadlineExceeded as exc:
        if outer is not None:
            raise
        raise PastDeadline(str(exc)) from None
    finally:
        _DEADLINE.reset(token)


def check() -> None:
    """Raise :class:`DeadlineExceeded` when the work under way is past its deadline.

    Raises
    ------
    DeadlineExceeded
        With the reason :func:`within` was given.
    """
    deadline = _DEADLINE.get()
    if deadline is not None and time.monotonic() > deadline[0]:
        raise DeadlineExceeded(deadline[1])

"""One way to stop long work on SIGINT / SIGTERM: a flag that the signal sets and the loop polls.

Long work (the DUFM trainer, the network loop, the global search, the executors' drivers) runs inside
:func:`stop_on_signals`, which installs a :class:`StopFlag` as the SIGINT and SIGTERM handler and restores the
previous handlers on exit.  The loop checks ``flag.signum`` at a point where its state can be saved (after a
chunk of GD steps, after a batch or an epoch), writes its checkpoint, and raises
:class:`~deepcollapse._core.checks.Interrupted` (a ``KeyboardInterrupt``) carrying the signal number, a
one-line message and the command that resumes -- :meth:`StopFlag.interrupted` builds it.  The command line
prints both and exits with ``128 + signum`` (130 for Ctrl-C, 143 for SIGTERM).

Policies (arguments of :class:`StopFlag`):

- by default a *second* SIGINT raises ``KeyboardInterrupt`` at once: Ctrl-C twice gives up without saving;
- ``raise_now=True``: every signal raises ``KeyboardInterrupt`` in the handler, for work that saves its state
  in an ``except KeyboardInterrupt`` clause rather than at poll points (the search);
- ``on_first(signum)``: called once, on the first signal, e.g. to pass it on to worker processes.  It runs in
  a signal handler: it must not log or take locks.

Off the main thread (Python installs signal handlers there only) :func:`stop_on_signals` installs nothing
and yields a flag that is never set; the work then stops as the surrounding code decides (a Ray task, a
thread of a test).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from typing import Any

from deepcollapse._core.checks import Interrupted

__all__ = ["STOP_SIGNALS", "StopFlag", "stop_on_signals"]

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopFlag:
    """A SIGINT / SIGTERM handler that remembers the signal (see the module docstring for the policies).

    Parameters
    ----------
    on_first : callable, optional
        ``on_first(signum)``, called from the handler on the first signal only (must not log).
    give_up_on_second_sigint : bool
        A second SIGINT raises ``KeyboardInterrupt`` at once (default ``True``).
    raise_now : bool
        Raise ``KeyboardInterrupt`` from the handler on every signal (default ``False``: only set the flag).
    """

    def __init__(
        self,
        *,
        on_first: Callable[[int], None] | None = None,
        give_up_on_second_sigint: bool = True,
        raise_now: bool = False,
    ) -> None:
        self.signum: int | None = None
        self._on_first = on_first
        self._give_up = give_up_on_second_sigint
        self._raise_now = raise_now

    @property
    def stopped(self) -> bool:
        """True once a signal was received."""
        return self.signum is not None

    @property
    def name(self) -> str:
        """The received signal's name (``'SIGTERM'``), ``'SIGINT'`` if none was (a ``KeyboardInterrupt``)."""
        return signal.Signals(self.signum if self.signum is not None else signal.SIGINT).name

    def __call__(self, signum: int, frame: Any) -> None:
        first = self.signum is None
        if not first and signum == signal.SIGINT and self._give_up:  # second Ctrl-C: give up immediately
            raise KeyboardInterrupt
        self.signum = signum  # no logging here: a signal handler must not take the logging lock
        if first and self._on_first is not None:
            self._on_first(signum)
        if self._raise_now:
            raise KeyboardInterrupt(f"stopped by {self.name}")

    def interrupted(self, message: str, resume: str | None = None) -> Interrupted:
        """The exception to raise once the state is saved.

        Parameters
        ----------
        message : str
            One line saying what stopped and what was saved (say only what is on disk).
        resume : str, optional
            The command that continues the work.

        Returns
        -------
        Interrupted
            With the received signal's number (SIGINT when stopped by a plain ``KeyboardInterrupt``).
        """
        return Interrupted(self.signum if self.signum is not None else signal.SIGINT, message, resume)


@contextlib.contextmanager
def stop_on_signals(flag: StopFlag | None = None) -> Iterator[StopFlag]:
    """Install ``flag`` (a new :class:`StopFlag` if ``None``) for SIGINT and SIGTERM; restore the previous
    handlers on exit.

    Parameters
    ----------
    flag : StopFlag, optional
        The handler to install (pass one to choose its policy).

    Returns
    -------
    contextlib.AbstractContextManager[StopFlag]
        Yields the flag.  Off the main thread nothing is installed and the flag is never set.
    """
    flag = StopFlag() if flag is None else flag
    if threading.current_thread() is not threading.main_thread():
        yield flag
        return
    old = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    for s in STOP_SIGNALS:
        signal.signal(s, flag)
    try:
        yield flag
    finally:
        for s, h in old.items():
            signal.signal(s, h if h is not None else signal.SIG_DFL)

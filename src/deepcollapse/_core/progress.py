"""Progress bars of long work, also from inside the tasks of a sweep (issue 32, point 7).

Every long loop (the DUFM trainer's steps, a network's epochs) makes its bar with :func:`progress_bar`.  In a
plain call that is a ``tqdm`` bar on the terminal.  Inside a task that a process pool runs (a sweep,
``make demo``, ``reproduce``), the worker has no terminal of its own: the executor installs a *sink*
(:func:`report_progress_to`) and the bar becomes a :class:`ReportingBar` that sends its state (description,
count, total, unit, postfix) to the sink at most every ``interval`` seconds and when it closes; the driver
draws one bar per running task from those reports (``runs.executors``).  The bars' owners do not know which
of the two they got.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["ReportingBar", "progress_bar", "report_progress_to"]

#: Where bars report instead of drawing (set in a pool worker for the duration of a task), or ``None``.
_SINK: Callable[[dict[str, Any]], None] | None = None


class ReportingBar:
    """The part of ``tqdm``'s interface the loops use (``update``, ``set_postfix``, ``close``, ``n``,
    ``total``), sending ``{"desc", "n", "total", "unit", "postfix", "closed"}`` to ``sink``.

    Parameters
    ----------
    sink : callable
        Receives each report (a dict); must not raise.
    total, initial : int
        As for ``tqdm``.
    desc, unit : str
        As for ``tqdm``.
    interval : float
        Seconds between reports (the last one is always sent by :meth:`close`).
    """

    def __init__(
        self,
        sink: Callable[[dict[str, Any]], None],
        *,
        total: int | None,
        initial: int = 0,
        desc: str = "",
        unit: str = "it",
        interval: float = 0.5,
    ) -> None:
        self.sink, self.total, self.n, self.desc, self.unit = sink, total, initial, desc, unit
        self.postfix: str = ""
        self.interval = interval
        self._sent = -float("inf")
        self.closed = False
        self._send(force=True)

    def _send(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._sent < self.interval:
            return
        self._sent = now
        self.sink(
            {
                "desc": self.desc,
                "n": self.n,
                "total": self.total,
                "unit": self.unit,
                "postfix": self.postfix,
                "closed": self.closed,
            }
        )

    def update(self, n: int = 1) -> None:
        self.n += n
        self._send()

    def set_postfix(
        self, ordered_dict: dict[str, Any] | None = None, refresh: bool = True, **kwargs: Any
    ) -> None:
        items = {**(ordered_dict or {}), **kwargs}
        self.postfix = ", ".join(f"{k}={v}" for k, v in items.items())
        self._send()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._send(force=True)


def progress_bar(
    *, total: int | None, desc: str, unit: str, initial: int = 0, disable: bool = False, **kwargs: Any
) -> Any:
    """A progress bar: a :class:`ReportingBar` when a sink is installed (a task in a pool worker), else a
    ``tqdm`` bar (``disable`` hides it; ``kwargs`` go to ``tqdm``).

    Parameters
    ----------
    total, initial : int
        As for ``tqdm``.
    desc, unit : str
        As for ``tqdm``.
    disable : bool
        No bar (``progress=False``); also no reports.

    Returns
    -------
    tqdm or ReportingBar
        The bar.
    """
    if _SINK is not None and not disable:
        return ReportingBar(_SINK, total=total, initial=initial, desc=desc, unit=unit)
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, desc=desc, unit=unit, disable=disable, **kwargs)


@contextlib.contextmanager
def report_progress_to(sink: Callable[[dict[str, Any]], None] | None) -> Iterator[None]:
    """Inside the block, :func:`progress_bar` reports to ``sink`` instead of drawing (``None``: draw)."""
    global _SINK
    previous, _SINK = _SINK, sink
    try:
        yield
    finally:
        _SINK = previous

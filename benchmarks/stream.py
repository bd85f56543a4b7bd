"""Rows printed as they are measured: the protocol every benchmark that ``gpu_check.py`` runs follows.

A benchmark prints each measured row at once as one JSON object on its own line of stdout (flushed), so that
a step killed at its time limit still leaves the rows it finished; its last line is the whole result, one
JSON object with ``"final": true``.  :class:`Budget` lets a benchmark stop starting rows that would not finish
within its own limit (``--max-seconds``), which it then reports as ``skipped`` rows instead of being killed.
"""

from __future__ import annotations

import json
import math
import time
from typing import Any

__all__ = ["Budget", "emit", "final", "read_rows"]


def emit(row: dict[str, Any]) -> None:
    """Print ``row`` as one JSON line on stdout, flushed (non-finite floats as ``null``)."""
    print(json.dumps(_finite(row)), flush=True)


def final(result: dict[str, Any]) -> None:
    """Print the whole result as the last JSON line, marked ``"final": true``."""
    emit({**result, "final": True})


def read_rows(text: str) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """Parse a benchmark's stdout: ``(rows, final)``; lines that are not JSON objects are ignored, ``final``
    is ``None`` when the benchmark did not finish."""
    rows: list[dict[str, Any]] = []
    last: dict[str, Any] | None = None
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict) and obj.get("final") is True:
            last = obj
        elif isinstance(obj, dict):
            rows.append(obj)
    return rows, last


class Budget:
    """A wall-clock allowance in seconds (``None``: unlimited), started at construction."""

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self.start = time.perf_counter()

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def left(self) -> float:
        return math.inf if self.seconds is None else self.seconds - self.elapsed()

    def allows(self, predicted_seconds: float) -> bool:
        """Whether a row predicted to take ``predicted_seconds`` still fits in what is left."""
        return predicted_seconds <= self.left()


def _finite(obj: Any) -> Any:
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_finite(v) for v in obj]
    return obj

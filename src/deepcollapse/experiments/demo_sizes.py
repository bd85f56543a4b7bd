"""The demo's default size, apart from :mod:`.demo` so that ``deepcollapse demo --help`` shows it without
importing the experiment framework (pandas, the sweep machinery): start-up time of the command line."""

from __future__ import annotations

__all__ = ["DEMO_RUNS", "DEMO_STEPS"]

DEMO_STEPS = 100_000  # GD steps per run of the flagship problem (a few minutes on 2 cores)
DEMO_RUNS = 8  # seeds of the flagship run (the paper's figure: 10)

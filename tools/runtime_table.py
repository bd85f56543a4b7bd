"""The README's table of paper-scale runtimes on one GPU, produced from the rates a ``make gpu-check`` measured.

Reads the gpu-check JSON (``benchmarks/results/gpu_check.json``: ``benchmarks/gpu_check.py --out``) and
writes the table between the README's markers ``<!-- runtime-table:start -->`` and
``<!-- runtime-table:end -->``; without a JSON from a GPU the table says that nothing is measured yet::

    python tools/runtime_table.py            # print the table
    python tools/runtime_table.py --write    # put it into README.md
    python tools/runtime_table.py --check    # exit 1 if README.md's table is not what the JSON gives

The table is made of sections, one function each in :data:`SECTIONS` (``summary -> rows``, a row being
``{"experiment", "work", "estimate", "basis"}``): :func:`dufm_section` gives the basin atlases from the
DUFM engine's measured runs·steps/s and the per-run analysis cost (the model of
:mod:`deepcollapse.experiments.basin_runtime`); a section for the network presets is one more function.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from deepcollapse.experiments.basin_runtime import (  # noqa: E402
    atlas_runtime,
    costs_from_gpu_check,
    duration_text,
)

README = ROOT / "README.md"
RESULTS = ROOT / "benchmarks" / "results" / "gpu_check.json"
START, END = "<!-- runtime-table:start -->", "<!-- runtime-table:end -->"
Row = dict[str, str]


def dufm_section(summary: dict[str, Any]) -> list[Row]:
    """The basin atlases (``basins-gpu``, ``basins``) on the measured GPU: stepping from the DUFM rows of
    their runs per trainer call, the per-run analysis on the GPU box's CPUs, as many task processes as it
    has CPUs (what ``reproduce`` starts)."""
    from deepcollapse.experiments.basins import BASINS_GPU, BASINS_LAPTOP

    rows = []
    for name, atlas in (("basins-gpu", BASINS_GPU), ("basins", BASINS_LAPTOP)):
        costs = costs_from_gpu_check(atlas, summary)
        est = atlas_runtime(atlas, costs, summary.get("cpus"), "cuda")
        a = est.attrs
        source = next(iter(costs.values())).source
        rows.append(
            {
                "experiment": f"`reproduce {name}`",
                "work": f"{_n(atlas.total_runs)} runs × {_n(atlas.steps)} GD steps, {a['tasks']} trainer calls "
                f"of {atlas.runs_per_task} runs",
                "estimate": f"{duration_text(a['wall_s'])} (stepping {duration_text(a['device_s'])}; analysis "
                f"{duration_text(a['host_s'])} CPU time over {a['workers']} processes)",
                "basis": f"DUFM {source}; analysis rows",
            }
        )
    return rows


def _n(x: int) -> str:
    """``107520`` as ``107 520``."""
    return f"{x:,}".replace(",", " ")


#: the table's sections, in order (a network section is one more ``summary -> rows`` function)
SECTIONS: list[Callable[[dict[str, Any]], list[Row]]] = [dufm_section]


def measured(summary: dict[str, Any] | None) -> bool:
    """Whether ``summary`` is a gpu-check that ran on a GPU (not skipped, not the CPU dry run)."""
    return bool(summary) and summary.get("gpu_check") == "ran"  # type: ignore[union-attr]


def render(summary: dict[str, Any] | None, source: str = "benchmarks/results/gpu_check.json") -> str:
    """The table (markdown) for ``summary``, or the sentence that nothing is measured yet."""
    if not measured(summary):
        return (
            f"Not measured yet: no `make gpu-check` from a GPU in `{source}`. Run `make gpu-check "
            "PYTHON=python3` on a GPU box, commit the JSON it writes, then `python tools/runtime_table.py "
            "--write`."
        )
    assert summary is not None
    head = (
        f"Measured by `make gpu-check` on {summary['device']} ({summary.get('date', 'date not recorded')}, torch "
        f"{summary.get('torch')}, {summary.get('cpus')} CPUs; `{source}`), written by `tools/runtime_table.py`:"
    )
    lines = [head, "", "| experiment | work | estimated wall time | from |", "|---|---|---|---|"]
    for section in SECTIONS:
        for row in section(summary):
            lines.append(f"| {row['experiment']} | {row['work']} | {row['estimate']} | {row['basis']} |")
    return "\n".join(lines)


def replace_table(readme: str, table: str) -> str:
    """``readme`` with the text between the markers replaced by ``table``."""
    if START not in readme or END not in readme:
        raise ValueError(f"README.md has no {START} ... {END} markers")
    before, rest = readme.split(START, 1)
    _, after = rest.split(END, 1)
    return f"{before}{START}\n{table}\n{END}{after}"


def load(path: Path) -> dict[str, Any] | None:
    return json.loads(path.read_text()) if path.is_file() else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, default=RESULTS, help="the gpu-check JSON")
    group = ap.add_mutually_exclusive_group()
    group.add_argument("--write", action="store_true", help="put the table into README.md")
    group.add_argument("--check", action="store_true", help="exit 1 if README.md's table differs")
    args = ap.parse_args()
    path = args.json.resolve()
    table = render(load(path), str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path))
    text = README.read_text()
    new = replace_table(text, table)
    if args.write:
        README.write_text(new)
    elif args.check:
        if new != text:
            print("README.md's runtime table is not what tools/runtime_table.py gives; run it with --write")
            return 1
    else:
        print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())

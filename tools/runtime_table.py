"""The README's table of paper-scale runtimes on one GPU, produced from the rates a ``make gpu-check`` measured.

Reads the gpu-check JSON (``benchmarks/results/gpu_check.json``: ``benchmarks/gpu_check.py --out``) and
writes the table between the README's markers ``<!-- runtime-table:start -->`` and
``<!-- runtime-table:end -->``; without a JSON from a GPU the table says that nothing is measured yet::

    python tools/runtime_table.py            # print the table
    python tools/runtime_table.py --write    # put it into README.md
    python tools/runtime_table.py --check    # exit 1 if README.md's table is not what the JSON gives

The table is made of sections, one function each in :data:`SECTIONS` (``summary -> rows``, a row being
``{"experiment", "work", "estimate", "basis"}``):

- :func:`dufm_section`: the basin atlases from the DUFM engine's measured runs·steps/s and the per-run
  analysis cost (the model of :mod:`deepcollapse.experiments.basin_runtime`);
- :func:`net_section`: the network paper presets from the network step's measured images/s per seed.  The
  runs of a preset are grouped into trainer calls exactly as ``reproduce NAME --device cuda`` groups them
  (:func:`deepcollapse.nets.seed_groups.group_runs`: the seeds and learning-rate points of one architecture in
  one batch); a call of S seeds takes ``epochs × N_train / r(S)`` seconds, with ``r(S)`` the images/s per seed
  of ``benchmarks/net_throughput.py``'s CUDA rows ``batched S=...`` (``single`` for S = 1) for the preset's
  input shape, linear between the measured S (beyond them: the nearest).  Training steps only: evaluations
  (every 10 epochs) and data loading come on top; beside it, one seed at a time (``runs × epochs × N_train /
  r(1)``).

``tests/core/test_readme_runtime_table.py`` checks that the README holds what this tool gives and the
arithmetic of both sections on made-up rates.
"""

from __future__ import annotations

import argparse
import itertools
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
        work = f"{_n(atlas.total_runs)} runs × {_n(atlas.steps)} GD steps"
        try:
            costs = costs_from_gpu_check(atlas, summary)
        except ValueError as exc:  # the DUFM step left no rows (stopped at its limit, or failed)
            rows.append({"experiment": f"`reproduce {name}`", "work": work, "estimate": "not measured",
                         "basis": str(exc).removeprefix("the gpu-check JSON has ")})  # fmt: skip
            continue
        est = atlas_runtime(atlas, costs, summary.get("cpus"), "cuda")
        a = est.attrs
        source = next(iter(costs.values())).source
        rows.append(
            {
                "experiment": f"`reproduce {name}`",
                "work": f"{work}, {a['tasks']} trainer calls of {atlas.runs_per_task} runs",
                "estimate": f"{duration_text(a['wall_s'])} (stepping {duration_text(a['device_s'])}; analysis "
                f"{duration_text(a['host_s'])} CPU time over {a['workers']} processes)",
                "basis": f"DUFM {source}; analysis rows",
            }
        )
    return rows


#: Training images of the full datasets (the standard splits the network presets read).
TRAIN_IMAGES = {"cifar10": 50_000, "mnist": 60_000}


def net_rates(summary: dict[str, Any]) -> dict[str, dict[int, float]]:
    """``shape -> {S: images/s per seed}`` of the network step's measured CUDA rows ``single`` and
    ``batched S=...`` (the rows the step printed, kept also when it stopped at its limit)."""
    rows = summary.get("steps", {}).get("net_throughput", {}).get("rows", [])
    out: dict[str, dict[int, float]] = {}
    for r in rows:
        label = str(r.get("label", ""))
        if r.get("device") != "cuda" or r.get("skipped") or r.get("error") or "shape" not in r:
            continue
        if (label == "single" or label.startswith("batched S=")) and "images_per_s_per_seed" in r:
            out.setdefault(r["shape"], {})[int(r["seeds"])] = float(r["images_per_s_per_seed"])
    return out


def rate_at(rates: dict[int, float], S: int) -> float:
    """Images/s per seed at S seeds: measured, or linear between the nearest measured S (beyond: the ends)."""
    if S in rates:
        return rates[S]
    below, above = [s for s in rates if s < S], [s for s in rates if s > S]
    if not below:
        return rates[min(above)]
    if not above:
        return rates[max(below)]
    a, b = max(below), min(above)
    return rates[a] + (rates[b] - rates[a]) * (S - a) / (b - a)


def preset_calls(name: str) -> tuple[str, int, int, list[int]]:
    """``(input shape, epochs, training images, seeds per trainer call)`` of network preset ``name`` as
    ``reproduce NAME --device cuda`` runs it (``batch_seeds``: the preset's, ``auto``)."""
    from deepcollapse.experiments.net_presets import NET_PRESETS, net_preset
    from deepcollapse.nets.seed_groups import group_runs

    preset, cfg = NET_PRESETS[name], net_preset(name).to_dict()
    cfg.update(device="cuda")
    keys = list(preset.sweep)
    overrides = [dict(zip(keys, values)) for values in itertools.product(*preset.sweep.values())]
    configs = [{**cfg, **o, "seed": s} for o in overrides for s in range(preset.seeds)]
    shape = cfg["dataset"]
    n = TRAIN_IMAGES[shape] * (len(cfg["classes"]) if cfg.get("classes") else 10) // 10
    return shape, int(cfg["epochs"]), n, [len(g) for g in group_runs(configs)]


def net_section(summary: dict[str, Any]) -> list[Row]:
    """The network paper presets (``net-*``) on the measured GPU, seeds batched as ``reproduce NAME
    --device cuda`` batches them (module docstring)."""
    from deepcollapse.experiments.net_presets import NET_PRESETS

    rates = net_rates(summary)
    rows = []
    for name in NET_PRESETS:
        shape, epochs, n, calls = preset_calls(name)
        sizes = sorted(set(calls))
        work = (
            f"{sum(calls)} runs × {_n(epochs)} epochs of {_n(n)} images, {len(calls)} trainer "
            f"call{'s' * (len(calls) > 1)} of {' or '.join(map(str, sizes))} seeds"
        )
        if shape not in rates:
            rows.append({"experiment": f"`reproduce {name}`", "work": work,
                         "estimate": "not measured", "basis": f"no network rows for {shape}"})  # fmt: skip
            continue
        r = rates[shape]
        batched = sum(epochs * n / rate_at(r, S) for S in calls)
        alone = sum(calls) * epochs * n / rate_at(r, 1)
        per_seed = ", ".join(f"{rate_at(r, S):.0f} at S = {S}" for S in sizes)
        rows.append(
            {
                "experiment": f"`reproduce {name}`",
                "work": work,
                "estimate": f"{duration_text(batched)} of training steps (one seed at a time: "
                f"{duration_text(alone)})",
                "basis": f"network rows ({shape}): images/s per seed {per_seed}",
            }
        )
    return rows


def _n(x: int) -> str:
    """``107520`` as ``107 520``."""
    return f"{x:,}".replace(",", " ")


#: the table's sections, in order
SECTIONS: list[Callable[[dict[str, Any]], list[Row]]] = [dufm_section, net_section]


def measured(summary: dict[str, Any] | None) -> bool:
    """Whether ``summary`` is a gpu-check that ran on a GPU (not skipped, not the CPU dry run)."""
    return bool(summary) and summary.get("gpu_check") == "ran"  # type: ignore[union-attr]


def render(summary: dict[str, Any] | None, source: str = "benchmarks/results/gpu_check.json") -> str:
    """The table (markdown) for ``summary``, or the sentence that nothing is measured yet."""
    if not measured(summary):
        return (
            f"Not measured yet: no `make gpu-check` from a GPU in `{source}`. Run `make gpu-check "
            "PYTHON=python3` on a GPU box, commit the JSON it writes, then `python tools/runtime_table.py "
            "--write`. Meanwhile every `reproduce NAME` of the basin atlases and the network presets prints its "
            "own estimate, measured on its device, before it starts."
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

"""Every shipped sweep file runs, and every number its header states as measured is recomputed here.

A header states its measured results in lines of the form

    #   mean of mean_rank over seeds, per point: 13.67 / 11.0 / 1.33 / 1.0  (± 1.5)

(statistic ``mean | std | min | max`` of a ``results.csv`` column over the seeds of each point, one value per
point in the order of ``summary.csv``, and the tolerance).  The test parses those lines, runs the sweep with
two workers and compares: a result that drifts (a kernel change, a new default) fails here instead of leaving
a stale number in the documentation.  The flagship and binary files are also the paper checks of 2024 §6.1
(Fig. 2) and 2023 Theorem 3, asserted from the same runs.

Together these sweeps take about two minutes of CPU on a 2-core machine (flagship ≈ 35 s, the rest ≈ 10-40 s
each): they are claims (``make check``, marker ``check``); only the seconds-long ``smoke_sweep`` is recomputed
in the fast tier.
"""

from __future__ import annotations

import json
import math
import re
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from deepcollapse.runs.sweep import SweepResult, SweepSpec, run_sweep
from deepcollapse.theory.constructions import loss_dnc, loss_srg

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
_CHECK = re.compile(
    r"^#\s+(mean|std|min|max) of (\w+) over seeds, per point:\s*(.+?)\s*\(± ([0-9.eE+-]+)\)\s*$"
)
_STATS = {"mean": "mean", "std": "std", "min": "min", "max": "max"}
_RESULTS: dict[str, SweepResult] = {}
#: Shipped sweeps recomputed in the fast tier (`make test`, seconds); the others are claims (`make check`).
FAST_CONFIGS = ("smoke_sweep",)


def header_checks(path: Path) -> list[tuple[str, str, list[float], float]]:
    """(statistic, column, values per point, tolerance) for every check line of a config header."""
    checks = []
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        m = _CHECK.match(line)
        if m:
            values = [float(v) for v in m.group(3).split("/")]
            checks.append((m.group(1), m.group(2), values, float(m.group(4))))
    return checks


def run_config(name: str, tmp_path_factory: pytest.TempPathFactory) -> SweepResult:
    """Run ``configs/<name>.yaml`` once per test session (two workers, as its header's command does; one for
    the seconds-long sweeps of the fast tier, where starting a pool costs more than it saves: the numbers do
    not depend on the worker count)."""
    if name not in _RESULTS:
        spec = SweepSpec.from_dict(yaml.safe_load((CONFIGS / f"{name}.yaml").read_text()))
        out = tmp_path_factory.mktemp(name)
        workers = 1 if name in FAST_CONFIGS else 2
        t0 = time.perf_counter()
        _RESULTS[name] = run_sweep(spec, out, workers=workers, progress=False)
        _SECONDS[name] = time.perf_counter() - t0
    return _RESULTS[name]


_SECONDS: dict[str, float] = {}


def runtime_ceiling(path: Path) -> float:
    """The busy-machine ceiling in seconds (``Expected runtime: ..., up to ~N min|s on a busy ...``)."""
    m = re.search(r"Expected runtime:.*?up to ~(\d+(?:\.\d+)?) (min|s)\b", path.read_text(), re.S)
    assert m, f"{path.name}: its header states no 'Expected runtime: ... up to ~N min' ceiling"
    return float(m.group(1)) * (60.0 if m.group(2) == "min" else 1.0)


def test_check_lines_parse():
    text = "# x\n#   mean of final_loss over seeds, per point: 0.1 / 0.25  (± 1e-3)\nname: a\n# std of x: 1\n"
    p = Path(pytest.importorskip("tempfile").mkdtemp()) / "c.yaml"
    p.write_text(text)
    assert header_checks(p) == [("mean", "final_loss", [0.1, 0.25], 1e-3)]


PACKAGE_CONFIGS = Path(__file__).resolve().parents[2] / "src" / "deepcollapse" / "experiments" / "configs"


def test_every_config_header_states_its_command_and_checks():
    """configs/*.yaml (and any YAML shipped inside the package): a measured result comes with check lines."""
    for path in sorted([*CONFIGS.glob("*.yaml"), *PACKAGE_CONFIGS.glob("*.yaml")]):
        head = path.read_text().split("\nname:")[0]
        if path.parent == CONFIGS:
            assert f"deepcollapse sweep configs/{path.name}" in head, path
        if "measured" in head.replace("runtime", "").split("Expected result", 1)[-1]:
            assert header_checks(path), f"{path.name}: a measured result without check lines"


@pytest.mark.parametrize(
    "name",
    [
        n if n in FAST_CONFIGS else pytest.param(n, marks=pytest.mark.check)
        for n in sorted(p.stem for p in CONFIGS.glob("*.yaml"))
    ],
)
def test_config_header_numbers_are_what_the_sweep_computes(name, tmp_path_factory):
    checks = header_checks(CONFIGS / f"{name}.yaml")
    result = run_config(name, tmp_path_factory)
    points = list(result.summary["point"])
    assert not result.runs["diverged"].any()
    # the header's runtime is a claim too: this run (as its command runs it) stays under the stated ceiling
    assert _SECONDS[name] <= runtime_ceiling(CONFIGS / f"{name}.yaml"), (name, _SECONDS[name])
    for stat, column, values, tol in checks:
        assert len(values) == len(points), (name, column, points)
        grouped = result.runs.groupby("point")[column]
        computed = [float(getattr(grouped.get_group(p), _STATS[stat])()) for p in points]
        computed = [0.0 if math.isnan(c) else c for c in computed]  # std of one seed
        for p, want, got in zip(points, values, computed):
            assert abs(got - want) <= tol, (
                f"{name}: {stat} of {column} at {p} is {got:.6g}, header says {want}"
            )


def _runs(result: SweepResult) -> list[dict]:
    rows = []
    for f in sorted(result.out_dir.glob("points/*/*/summary.json")):
        s = json.loads(f.read_text())
        rows += [{**r, "loss_dnc": s["loss_dnc"], "point": f.parent.parent.name} for r in s["runs"]]
    return rows


@pytest.mark.check
def test_flagship_gd_beats_dnc_with_middle_ranks_5_to_8(tmp_path_factory):
    """2024 §6.1 / Fig. 2 top: K = 10, n = 50, L = 4, width 30, every λ = 0.004, lr 0.5, 8 seeds, 50 000
    steps: a majority of runs below L_DNC, the best within 3 % of L_SRG, intermediate ranks mostly 5-8
    (DNC: 10)."""
    result = run_config("flagship", tmp_path_factory)
    L_dnc = loss_dnc(10, 4, 50, 0.004, 0.004).loss  # independent closed forms
    L_srg = loss_srg(10, 4, 50, 0.004, 0.004).loss
    runs = _runs(result)
    assert len(runs) == 8
    finals = [r["final_loss"] for r in runs if not r["diverged"]]
    assert sum(f < L_dnc for f in finals) > len(runs) / 2
    assert min(finals) <= 1.03 * L_srg
    mid = [r["ranks_pre"][:-1] for r in runs if not r["diverged"] and r["final_loss"] < L_dnc]
    assert all(max(m) < 10 for m in mid)
    assert sum(all(5 <= k <= 8 for k in m) for m in mid) >= len(mid) / 2


@pytest.mark.check
def test_binary_runs_reach_dnc_for_every_depth(tmp_path_factory):
    """2023 Theorem 3: for K = 2, DNC is the global optimum; GD reaches L_DNC for L = 3, 4 (and 5)."""
    result = run_config("binary_depth", tmp_path_factory)
    runs = pd.DataFrame(_runs(result))
    assert set(runs["point"]) == {"layers=3", "layers=4", "layers=5"}
    for point, rows in runs.groupby("point"):
        L = int(point.split("=")[1])
        L_dnc = loss_dnc(2, L, 50, 0.004, 0.004).loss
        for _, r in rows.iterrows():
            assert not r["diverged"]
            assert abs(r["final_loss"] - L_dnc) <= 1e-4 * L_dnc, (point, r["final_loss"], L_dnc)
            assert r["classification"] == "dnc"


def test_wd_rank_zero_threshold_text_is_computed():
    """The λ* of the wd_rank header: L_DNC(15, 4, 50, λ, λ) < 1/2 just below it and = 1/2 just above (the
    closed form of the DNC loss, independent of ``zero_threshold``); the header's value at its precision."""
    from deepcollapse.experiments.registry import zero_threshold_lam

    head = (CONFIGS / "wd_rank.yaml").read_text().split("\nname:")[0]
    stated = float(re.search(r"λ\* ≈ ([0-9.]+)", head).group(1))
    lam = zero_threshold_lam(15, 4, 50)
    assert loss_dnc(15, 4, 50, 0.999 * lam, 0.999 * lam).loss < 0.5
    assert loss_dnc(15, 4, 50, 1.001 * lam, 1.001 * lam).loss == pytest.approx(0.5, abs=1e-12)
    assert f"{lam:.4f}" == f"{stated:.4f}"

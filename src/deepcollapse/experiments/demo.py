"""``deepcollapse demo``: the toolkit's tour in a few minutes on a 2-core CPU, written as one HTML report.

1. Theory: the closed-form DNC and SRG optimal losses of the flagship problem (K = 10, L = 4, n = 50,
   every λ = 0.004), ranks and scales (2024 Theorem 5: SRG beats DNC).
2. The flagship 4-DUFM of 2024 Fig. 2 top (width 30, lr 0.5) with 8 seeds (the figure: 10) and as many steps
   as fit in a few minutes (default 100 000), split into two batched trainer calls of 4 seeds that run on the
   two cores: loss against L_DNC and L_SRG, DNC1 per layer, singular values at the end, and each run's
   analysis (final loss, ranks, classification) next to the theory values.
3. 2024 Fig. 3 left: L_SRG / L_DNC against r for L = 3, 4, 5.
4. 2024 Fig. 1: class means and Gram matrices of the SRG solution beside the DNC one (K = 10, L = 4).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from deepcollapse._core.checks import check_int
from deepcollapse.experiments.demo_sizes import DEMO_RUNS, DEMO_STEPS
from deepcollapse.experiments.dufm_helpers import FLAGSHIP
from deepcollapse.experiments.framework import Context, Experiment
from deepcollapse.experiments.paper2024 import fig1, fig2_panels, fig2_spec, fig3_left

__all__ = ["DEMO_RUNS", "DEMO_STEPS", "run_demo"]


def _theory_section(ctx: Context) -> None:
    from deepcollapse.theory import compare

    K, L, n, lam = FLAGSHIP["classes"], FLAGSHIP["layers"], FLAGSHIP["n"], FLAGSHIP["lam"]
    c = compare(K, L, n, lam, lam)
    ctx.configs["theory"] = {"classes": K, "layers": L, "n": n, "lam_h": lam, "lam_w": lam}
    ctx.report.section(
        f"1. Theory: K = {K}, L = {L}, n = {n}, λ = {lam} everywhere",
        "Closed-form optimal losses of the DNC (Definition 1) and SRG (Definition 4) constructions; "
        "the all-zero "
        "point has loss 1/2.",
    )
    keys = [
        "loss_dnc",
        "loss_srg",
        "ratio",
        "loss_zero",
        "rank_dnc",
        "rank_srg",
        "rank_srg_post",
        "srg_construction",
        "srg_beats_dnc",
        "Lambda",
        "zero_threshold",
    ]
    ctx.table(pd.DataFrame([{k: c.get(k) for k in keys}]), "theory_flagship", "Theory engine (compare).")


def _demo_body(steps: int, runs: int) -> object:
    def body(ctx: Context) -> None:
        _theory_section(ctx)
        spec = fig2_spec(False, steps=steps, seeds=runs)
        spec.name = "demo-flagship"
        ctx.report.section(
            f"2. Flagship 4-DUFM (2024 Fig. 2 top): {runs} seeds × {steps} steps",
            "Full-batch gradient descent, K = 10, n = 50, L = 4, width 30, λ = 0.004, lr 0.5 "
            "(the full figure, 10 seeds: `deepcollapse reproduce fig2-top`).",
        )
        result = ctx.sweep(spec, "flagship")
        fig2_panels(ctx, result, prefix="flagship")
        ctx.report.section("3. 2024 Fig. 3 left (theory)")
        fig3_left(ctx)
        ctx.report.section("4. 2024 Fig. 1 (theory) at the flagship's n = 50")
        fig1(ctx, n=FLAGSHIP["n"])

    return body


def run_demo(
    out_dir: str | Path,
    *,
    steps: int = DEMO_STEPS,
    runs: int = DEMO_RUNS,
    executor: str = "local",
    workers: int | None = None,
    ray_address: str | None = None,
    progress: bool = True,
    force: bool = False,
) -> Path:
    """Run the demo into ``out_dir`` (finished parts are skipped on re-runs); return the report's path.

    Parameters
    ----------
    out_dir : str or Path
        The output folder (created; one holding another experiment is refused unless ``force``).
    steps : int
        GD steps of each flagship run (default :data:`DEMO_STEPS`).
    runs : int
        Flagship seeds (default :data:`DEMO_RUNS`).
    executor : str, default "local"
        ``"local"`` or ``"ray"`` (:func:`~deepcollapse.runs.executors.run_tasks`).
    workers : int, optional
        Task processes (``None``: one per pending task up to the CPU count).
    ray_address : str, optional
        The Ray cluster to join (``executor="ray"``).
    progress : bool, default True
        Show progress bars on stderr.
    force : bool, default False
        Write into a folder that holds another experiment, re-training runs whose config differs.

    Returns
    -------
    Path
        ``out_dir/report.html``.

    Examples
    --------
    A demo of one 2-step run (seconds; the default is about a minute):

    >>> import tempfile
    >>> run_demo(tempfile.mkdtemp(), steps=2, runs=1, progress=False).name
    'report.html'
    """
    steps = check_int("steps", steps, min=1)
    runs = check_int("runs", runs, min=1)
    exp = Experiment(
        "demo",
        "deepcollapse",
        "demo",
        "Theory comparison, the flagship DUFM experiment (8 of the figure's 10 seeds), and 2024 Fig. 3 "
        "left, in one report.",
        f"Flagship DUFM: {runs} seeds, {steps} steps; theory: K = 10, L = 4, n = 50, λ = 0.004.",
        "about 1 min on an idle 2-core CPU, up to ~10 min on a busy shared one (the report states this "
        "run's own measured time)",
        "dufm",
        _demo_body(steps, runs),  # type: ignore[arg-type]
        command=f"deepcollapse demo --steps {steps} --runs {runs}",
    )
    return exp.run(
        out_dir, executor=executor, workers=workers, ray_address=ray_address, progress=progress, force=force
    )

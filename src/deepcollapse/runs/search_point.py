"""One point of a global search as an executor task: ``run_search_point(config, out)``.

``search_dufm`` for the configured rounds (or wall-time budget), then the Hessian verdict of the best
solution; a "not critical" or "undecided at kinks" verdict is followed by the active-set refinement on the
kink manifold (:func:`~deepcollapse.landscape.kinks.refine_at_kinks`, ``kink_refinement.json``): a refined
point at least as low is saved as ``solutions/refined.npz`` and its verdict replaces the first one (the
refinement stops by its count of rounds, not by wall time); a point still not certified (neither "critical at
a kink" nor "local minimum") is descended further
(:func:`~deepcollapse.landscape.descent.descend_until_certified`, :data:`DESCENT_ROUNDS` rounds; ``descent``
in the row), a lower point saved as ``solutions/descended.npz`` with its verdict; then the table row in
``point.json`` (the ``search`` task kind's done marker in :mod:`deepcollapse.runs.kinds`). Its own module so
that the task-kind table (whose runner imports it when it runs) and the ``best-known`` experiment (which
builds the tasks) do not import each other.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from deepcollapse._core.io import atomic_write_json, finite_or_none, read_json

__all__ = ["DESCENT_ROUNDS", "run_search_point"]

#: rounds of continued descent of a point whose verdict is not certified (a count: deterministic)
DESCENT_ROUNDS = 8


def run_search_point(config: dict[str, Any], out: str | Path, progress: bool = False) -> dict[str, Any]:
    """One point of the table (the ``search`` task of :mod:`~deepcollapse.runs.executors`):
    ``search_dufm`` for the configured rounds or budget (resuming what ``out`` holds), then the Hessian
    verdict of the best solution (``landscape.json``); writes the table row to ``point.json`` (the task's done
    marker). A search that already used its budget or rounds is reused, so deleting ``point.json`` redoes only
    the verdict.  A plain dict: the table row as written to ``point.json`` (its keys are the table's columns;
    the experiment updates it with a registry's row), returned to the executor as every task's result is.

    Parameters
    ----------
    config : dict
        A :class:`~deepcollapse.landscape.search.SearchConfig` as a dict (its ``to_dict()``).
    out : str or Path
        The point's folder (``summary.json``, ``solutions/``, ``landscape.json``, ``point.json``).
    progress : bool, default False
        Show the search's progress bar.

    Returns
    -------
    dict
        The table row: ``classes``, ``layers``, ``best_loss``, ``loss_dnc``, ``loss_srg``, ``verdict``,
        ``solution``, ... (also in ``point.json``).

    Examples
    --------
    >>> import tempfile
    >>> from deepcollapse.landscape.search import SearchConfig
    >>> config = SearchConfig(
    ...     classes=2, layers=2, n=1, lam_h=0.01, lam_w=[0.01, 0.01], width=2, runs=2, steps=50, rounds=1
    ... ).to_dict()
    >>> row = run_search_point(config, tempfile.mkdtemp())
    >>> row["classes"], row["layers"], row["best_loss"] <= row["loss_dnc"] * (1 + 1e-9)
    (2, 2, True)
    """
    from deepcollapse.landscape.kinks import refine_verdict
    from deepcollapse.landscape.search import SearchConfig, search_dufm
    from deepcollapse.landscape.verdicts import landscape, load_point

    folder = Path(out)
    summary_path = folder / "summary.json"
    saved = read_json(summary_path) if summary_path.is_file() else {}
    search = SearchConfig(**config)
    # a point whose search is complete is not searched again (delete point.json to redo the verdict)
    finished = search.searched(int(saved.get("rounds", 0)), float(saved.get("elapsed_s", 0.0)))
    summary = saved if finished else search_dufm(search, folder, progress=progress)
    params, problem, _ = load_point(str(folder))
    sharpened = refine_verdict(params, problem, landscape(params, problem), max_seconds=None)
    before, land, best = sharpened.before, sharpened.landscape, summary["solutions"][0]
    best_loss, solution, refinement = summary["best_loss"], f"solutions/{best['file']}", None
    if sharpened.refinement is not None:
        refinement = sharpened.refinement.to_file_dict()
        atomic_write_json(folder / "kink_refinement.json", finite_or_none(refinement))
    else:  # a verdict redone (point.json deleted) leaves no refinement of an earlier verdict behind
        (folder / "kink_refinement.json").unlink(missing_ok=True)
    if sharpened.params is None:
        (folder / "solutions" / "refined.npz").unlink(missing_ok=True)
    else:
        assert sharpened.refinement is not None  # a refined point comes with its refinement
        best_loss = sharpened.refinement.loss_after
        solution = _save(
            folder, "refined.npz", sharpened.params, problem, best_loss, f"kink refinement of {solution}"
        )
    verdict_before_descent, descent = _verdict(land), None
    start = sharpened.params or params
    descended = _descend(start, problem, land)
    if descended is not None:
        descent = descended.to_file_dict()
    ended = None if descended is None else descended.outcome(start)
    if ended == "moved":
        assert descended is not None and descended.params is not None and descended.loss_after is not None
        best_loss, land = descended.loss_after, descended.landscape
        solution = _save(
            folder,
            "descended.npz",
            descended.params,
            problem,
            best_loss,
            f"continued descent from {solution}",
        )
    else:
        (folder / "solutions" / "descended.npz").unlink(missing_ok=True)
        if ended == "same":  # the given point, judged with the descent's larger budgets
            assert descended is not None
            land = descended.landscape
    atomic_write_json(folder / "landscape.json", finite_or_none(land.to_file_dict()))
    srg = summary["loss_srg"]
    row = {
        "classes": config["classes"],
        "layers": config["layers"],
        "best_loss": best_loss,
        "loss_dnc": summary["loss_dnc"],
        "loss_srg": srg,
        "best_over_srg": None if srg is None else best_loss / srg,
        "best_over_dnc": best_loss / summary["loss_dnc"],
        "structure": best["structure"],
        "rank_profile": "-".join(map(str, best["ranks"])),
        "source": best["source"],
        "verdict": _verdict(land),
        "verdict_before_refinement": _verdict(before),
        "kink_refinement": refinement,
        "verdict_before_descent": verdict_before_descent,
        "descent": descent,
        "grad_norm": land["grad_norm"],
        "clarke_residual": land["clarke_residual"],
        "lambda_min_off_symmetry": land["lowest_eigenvalues_off_symmetry"][0],
        "search_s": summary["elapsed_s"],
        "search_cpu_s": summary["cpu_s"],
        "rounds": summary["rounds"],
        "solution": solution,
    }
    atomic_write_json(folder / "point.json", finite_or_none(row))
    return row


def _save(folder: Path, name: str, params: Any, problem: Any, loss: float | None, source: str) -> str:
    """Write ``params`` (``[H_1, W_1, .., W_L]`` of ``problem``) with its loss and source to
    ``folder/solutions/name``; the row's ``solution`` entry (relative to ``folder``)."""
    from deepcollapse.landscape.solution_file import save_solution

    H1, *weights = params
    save_solution(
        folder / "solutions" / name,
        H1,
        weights,
        n=problem.n,
        lam_h=problem.lam_h,
        lam_w=problem.lam_w,
        extra={"loss": loss, "source": source},
        family=problem.family,
    )
    return f"solutions/{name}"


def _descend(params: Any, problem: Any, land: Any) -> Any:
    """:func:`~deepcollapse.landscape.descent.descend_until_certified` from a point whose verdict ``land`` is
    not certified (:data:`DESCENT_ROUNDS` rounds); ``None`` for a certified one."""
    from deepcollapse.landscape.descent import CERTIFIED, descend_until_certified

    if land["verdict"] in CERTIFIED:
        return None
    return descend_until_certified(params, problem, rounds=DESCENT_ROUNDS)


def _verdict(land: Any) -> str:
    """The verdict with its note in parentheses (the table's ``verdict`` column)."""
    return str(land["verdict"]) + (f" ({land['verdict_note']})" if land.get("verdict_note") else "")

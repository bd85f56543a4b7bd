"""The ``best-known`` experiment: the lowest L-DUFM losses the search finds for K = 3..16, L = 3..5.

For each (K, L) at n = 50, λ = 0.004 for every parameter, width 30: ``search_dufm`` (resumable, one folder
per point under ``points/``) for ``rounds`` rounds (12; a count, no wall clock: the same table on a busy or
an idle machine), then the Hessian verdict of the
best solution found (:func:`~deepcollapse.landscape.verdicts.landscape`, cached in ``landscape.json``);
a "not critical" or "undecided at kinks" verdict is followed by the active-set refinement on the kink manifold
(:func:`~deepcollapse.landscape.kinks.refine_at_kinks`; ``kink_refinement.json``), whose point, when at least
as low, is saved as ``solutions/refined.npz`` and re-judged (the row's ``verdict``, beside
``verdict_before_refinement``, ``kink_refinement`` and the final ``clarke_residual``); a point still not
certified is descended further (:func:`~deepcollapse.landscape.descent.descend_until_certified`, a count of
rounds; ``descent``, ``verdict_before_descent``, ``solutions/descended.npz``); the row goes to
``point.json``.  With a best-known registry (``reproduce --registry``, default the user's) every point is
offered to it and a lower registry row (user or shipped) replaces the point in the table (``best_from``
says which, ``search_loss`` keeps the search's own).  Each point is one ``search`` task of
:mod:`~deepcollapse.runs.executors`, so ``--workers`` processes (or a Ray cluster) run points in
parallel.  Outputs: ``tables/best_known.csv`` (best-known loss, L_DNC, L_SRG, best / L_SRG,
structure and rank profile, verdict), ``results.csv`` (the same rows, with ``point`` and ``seed``),
``figures/best_known.png|pdf`` (best-known / L_DNC against K, one curve per L, the SRG construction
dashed) and the solutions themselves (``points/K*_L*/solutions/rank01.npz``, checkable with
``deepcollapse theory check``).  Re-running into the same folder reuses finished points.

``reproduce best-known --loss ce`` (and ``--activation`` / ``--eps``) runs the same table for another model
family: the search with that family's float64 objective, beside the DNC and SRG constructions re-optimised
for it (:func:`~deepcollapse.theory.family_compare.compare_family`); its columns carry the suffix
``_family`` (``loss_dnc_family`` is L_DNC^CE under cross-entropy, not the MSE closed form), its points go to
``points/<family>/`` and its table to ``tables/best_known_<family>.csv`` (e.g. ``best_known_ce``).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from deepcollapse.experiments.best_known_settings import BestKnownSettings
from deepcollapse.experiments.framework import Context, Experiment, register
from deepcollapse.landscape.verdict_classes import VERDICT_CLASSES, is_certified, verdict_class

if TYPE_CHECKING:
    from deepcollapse.landscape.best_known_types import RegistryRow

__all__ = [
    "BEST_KNOWN_FULL",
    "BEST_KNOWN_SMOKE",
    "VERDICT_CLASSES",
    "best_known_rows",
    "best_known_table",
    "family_tag",
    "improved_cells",
    "verdict_class",
    "verdict_counts",
]

log = logging.getLogger(__name__)

#: the shipped table: :class:`BestKnownSettings`' defaults (K = 3..16, L = 3..5, n = 50, λ = 0.004, width 30,
#: 12 rounds of 32 starts x 10 000 steps per point)
BEST_KNOWN_FULL: dict[str, Any] = BestKnownSettings().to_dict()
BEST_KNOWN_SMOKE: dict[str, Any] = {
    "classes": [3, 6],
    "layers": [3],
    "n": 3,
    "lam": 0.004,
    "width": 8,
    "budget": 0.5,
    "runs": 4,
    "steps": 200,
    "rounds": 1,
}


def family_tag(family: dict[str, Any] | None) -> str:
    """A short name of a model family for folders and file names: ``""`` for MSE + ReLU, else e.g. ``"ce"``,
    ``"ce_linear"`` or ``"mse_relu_eps0.1"`` (the loss, then the activation unless ReLU, then ε).

    Parameters
    ----------
    family : dict or None
        ``{"loss", "activation", "eps"}`` (``None``: MSE + ReLU).

    Returns
    -------
    str
        The tag (empty for the papers' family).

    Examples
    --------
    >>> family_tag(None), family_tag({"loss": "ce"}), family_tag({"activation": "relu_eps", "eps": 0.1})
    ('', 'ce', 'mse_relu_eps0.1')
    """
    fam = {"loss": "mse", "activation": "relu", "eps": None, **(family or {})}
    if fam["loss"] == "mse" and fam["activation"] == "relu" and fam["eps"] is None:
        return ""
    tag = fam["loss"] + ("" if fam["activation"] == "relu" else f"_{fam['activation']}")
    return tag + ("" if fam["eps"] is None else f"{fam['eps']:g}")


def _search_config(K: int, L: int, s: dict[str, Any], family: dict[str, Any] | None = None) -> dict[str, Any]:
    from deepcollapse.landscape.search import SearchConfig

    return SearchConfig(
        classes=K,
        layers=L,
        n=s["n"],
        lam_h=s["lam"],
        lam_w=[s["lam"]] * L,
        width=s["width"],
        runs=s["runs"],
        steps=s["steps"],
        budget=s["budget"],
        rounds=s.get("rounds"),
        **{k: v for k, v in (family or {}).items() if v is not None},
    ).to_dict()


def best_known_rows(
    out: Path,
    settings: dict[str, Any],
    run: Any = None,
    progress: bool = False,
    family: dict[str, Any] | None = None,
    registry: Any = None,
    command: str = "deepcollapse reproduce best-known",
) -> list[dict[str, Any]]:
    """Search (or reuse) every (K, L) of ``settings`` under ``out/points`` and return the table rows.

    ``run``: how to run the list of :class:`~deepcollapse.runs.executors.Task` (the experiment's
    :meth:`Context.tasks`, i.e. its executor and workers); default: one after the other in this process.
    ``family``: ``{"loss", "activation", "eps"}`` of the searched model (default MSE + ReLU); another family's
    points go to ``out/points/<family_tag>/``, so two families never reuse each other's points.
    ``registry``: a best-known :class:`~deepcollapse.landscape.best_known.Registry` (``None``: none); each
    point's solution is offered to it (with its verdict and ``command`` as provenance) as soon as the point
    is finished, and a row of it or of the shipped registry below the point replaces the point in the table
    (:func:`registry_minimum`).

    Parameters
    ----------
    out : Path
        The experiment folder.
    settings : dict
        :data:`BEST_KNOWN_FULL`'s keys: ``classes`` and ``layers`` (lists), ``n``, ``lam``, ``width``,
        ``budget``, ``runs``, ``steps``, ``rounds``.
    run : callable, optional
        As above: ``run(tasks, on_done)``, with ``on_done(task, outcome)`` to call as each task finishes
        (:func:`~deepcollapse.runs.executors.run_tasks`' ``on_done``).
    progress : bool, default False
        Progress bars of the default ``run``.
    family : dict, optional
        As above.
    registry : Registry, optional
        As above.
    command : str
        The provenance of the points offered to ``registry``.

    Returns
    -------
    list of dict
        One per (K, L), ``layers`` outer: the point's ``point.json`` plus ``search_loss``, ``best_from``
        (``"this search"`` or the registry row's source), ``solution`` (relative to ``out`` unless a
        registry's) and ``run_dir``; the rows of :func:`best_known_table`.

    Examples
    --------
    One tiny search (K = 3, L = 2; seconds):

    >>> import tempfile
    >>> settings = {**BEST_KNOWN_SMOKE, "classes": [3], "layers": [2], "budget": 0.1, "steps": 20, "runs": 2}
    >>> row = best_known_rows(Path(tempfile.mkdtemp()), settings)[0]
    >>> row["classes"], row["layers"], row["best_from"], row["solution"].startswith("points/K3_L2/")
    (3, 2, 'this search', True)
    """
    from deepcollapse.runs.executors import Task, run_tasks

    tag = family_tag(family)
    points = out / "points" / tag if tag else out / "points"
    tasks = [
        Task(
            "search",
            _search_config(K, L, settings, family),
            str(points / f"K{K}_L{L}"),
            f"K{K}_L{L}" + (f"_{tag}" if tag else ""),
        )
        for L in settings["layers"]
        for K in settings["classes"]
    ]

    def offer(task: Task, outcome: Any) -> None:  # each point as it finishes: a stopped table loses none
        row = json.loads((Path(task.out_dir) / "point.json").read_text())
        registry_minimum(Path(task.out_dir), row, registry, command)

    on_done = offer if registry is not None else None
    (run or (lambda ts, on_done: run_tasks(ts, workers=1, progress=progress, on_done=on_done)))(
        tasks, on_done
    )
    rows = []
    for t in tasks:
        row = json.loads((Path(t.out_dir) / "point.json").read_text())
        row["search_loss"] = row["best_loss"]
        row["best_from"] = "this search"
        if registry is not None:
            best = registry_minimum(Path(t.out_dir), row, registry, command)
            if best is not None:
                row.update(_registry_columns(best))
        if not Path(row["solution"]).is_absolute():  # a registry's file stays where the registry keeps it
            row["solution"] = str((Path(t.out_dir) / row["solution"]).relative_to(out))
        row["run_dir"] = t.out_dir
        rows.append(row)
        log.info("best-known K = %d, L = %d: %.10f", row["classes"], row["layers"], row["best_loss"])
    return rows


def registry_minimum(folder: Path, row: dict[str, Any], registry: Any, command: str) -> RegistryRow | None:
    """Offer a search point's solution to ``registry``; return the row below it, if any.

    The point is ``folder / row["solution"]`` with its verdict and Clarke residual from ``landscape.json``;
    the answer is the cell's row of ``registry`` or of the shipped registry where it is below the point
    (:func:`~deepcollapse.landscape.best_known.is_below`), else ``None`` (the search's point is the lowest).

    Parameters
    ----------
    folder : Path
        The point's search folder.
    row : dict
        Its table row (``point.json``): ``solution`` (relative to ``folder``) and ``best_loss``.
    registry : Registry
        The best-known registry offered the point (:class:`~deepcollapse.landscape.best_known.Registry`).
    command : str
        The provenance of the offer.

    Returns
    -------
    RegistryRow or None
        The lower registry row (its ``path`` the registry's solution file).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from deepcollapse.landscape.best_known import Registry
    >>> from deepcollapse.landscape.solution_file import save_solution
    >>> from deepcollapse.theory.constructions import dnc_solution
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> s = dnc_solution(3, 2, 2, 0.01, 0.01, width=3)
    >>> _ = save_solution(d / "p" / "a.npz", s.H1, s.weights, n=2, lam_h=0.01, lam_w=[0.01, 0.01])
    >>> row = {"solution": "a.npz", "best_loss": s.loss}
    >>> registry_minimum(d / "p", row, Registry.load(d / "registry"), "doc") is None  # it is the lowest
    True
    """
    from deepcollapse._core.io import read_json
    from deepcollapse.landscape.best_known import Provenance, is_below, merge, shipped_registry

    land_file = folder / "landscape.json"
    land = read_json(land_file) if land_file.is_file() else {}
    offer = registry.offer(
        folder / row["solution"],
        Provenance.now(command),
        verdict=land.get("verdict"),
        clarke_residual=land.get("clarke_residual"),
    )
    best = merge(registry, shipped_registry()).get(offer.key)
    if best is None or best.path is None or not is_below(best.loss, row["best_loss"]):
        return None
    return best


def _registry_columns(best: RegistryRow) -> dict[str, Any]:
    # a table row's columns where a registry row replaces the search's point: best_loss, solution (the
    # registry's file), verdict, clarke_residual, structure and rank_profile (of the registry's point) and
    # best_from (which registry, and the command that found it)
    from deepcollapse.landscape.search_state import describe_solution
    from deepcollapse.landscape.targets import load_point

    params, problem, _ = load_point(str(best.path))
    desc = describe_solution(params[0], params[1:], problem)
    return {
        "best_loss": best.loss,
        "solution": str(best.path),
        "verdict": best.verdict or "not judged",
        "clarke_residual": best.clarke_residual,
        "structure": desc.classification,
        "rank_profile": "-".join(map(str, desc.ranks or [])),
        "best_from": f"registry {best.registry}: {best.provenance.command} ({best.provenance.date})",
    }


#: the columns a best-known table shows (for a family other than MSE + ReLU the construction columns get
#: the suffix ``_family``: they are the constructions re-optimised for that family, not the closed forms)
TABLE_COLUMNS = [
    "classes",
    "layers",
    "best_loss",
    "loss_dnc",
    "loss_srg",
    "best_over_dnc",
    "best_over_srg",
    "structure",
    "rank_profile",
    "verdict",
    "clarke_residual",
    "open_reason",
    "best_from",
]
_CONSTRUCTION_COLUMNS = ("loss_dnc", "loss_srg", "best_over_dnc", "best_over_srg")


def best_known_table(rows: list[dict[str, Any]], family: dict[str, Any] | None = None) -> pd.DataFrame:
    """The best-known table from the points' rows (``point.json``), sorted by (L, K).

    Parameters
    ----------
    rows : list of dict
        One per (K, L): at least ``classes, layers, best_loss, loss_dnc, loss_srg``; ``best_over_dnc`` and
        ``best_over_srg`` are (re)computed here as ``best_loss / loss_dnc`` and ``best_loss / loss_srg``
        (``None`` where SRG is undefined).
    family : dict, optional
        The searched family; for one other than MSE + ReLU the four construction columns are renamed
        ``<column>_family`` (the DNC and SRG constructions re-optimised for it).

    Returns
    -------
    DataFrame
        Every column of ``rows`` plus the two ratios and ``open_reason`` (why a cell is not certified:
        empty for *critical at a kink* and *local minimum*; else the continued descent's note when the
        cell's point is this search's, or the verdict itself), the construction columns renamed as above.

    Examples
    --------
    >>> rows = [{"classes": 6, "layers": 3, "best_loss": 0.9, "loss_dnc": 1.0, "loss_srg": 0.95},
    ...         {"classes": 4, "layers": 2, "best_loss": 1.0, "loss_dnc": 1.0, "loss_srg": None}]
    >>> best_known_table(rows)[["classes", "layers", "best_over_dnc", "best_from"]].values.tolist()
    [[4, 2, 1.0, 'this search'], [6, 3, 0.9, 'this search']]
    """
    df = pd.DataFrame(rows)
    if df.empty:
        return df
    df["best_over_dnc"] = df["best_loss"] / df["loss_dnc"]
    if "best_from" not in df.columns:  # rows of points written before the registry: the search's own
        df["best_from"] = "this search"
    df["best_from"] = df["best_from"].fillna("this search")
    srg = pd.to_numeric(df["loss_srg"], errors="coerce")
    df["best_over_srg"] = df["best_loss"] / srg
    if "clarke_residual" not in df.columns:
        df["clarke_residual"] = None
    df["open_reason"] = [_open_reason(row) for row in df.to_dict("records")]
    df = df.sort_values(["layers", "classes"], kind="stable").reset_index(drop=True)
    if family_tag(family):
        df = df.rename(columns={c: f"{c}_family" for c in _CONSTRUCTION_COLUMNS})
    return df


def _open_reason(row: dict[str, Any]) -> str:
    """Why the cell of ``row`` is not certified ("" when it is): the descent's note for this search's point,
    else the verdict."""
    verdict = row.get("verdict")
    if not isinstance(verdict, str) or is_certified(verdict):
        return "" if isinstance(verdict, str) else "not judged"
    descent = row.get("descent")
    if (
        row.get("best_from", "this search") == "this search"
        and isinstance(descent, dict)
        and descent.get("note")
    ):
        return f"{verdict}; continued descent: {descent['note']}"
    return verdict


def table_columns(family: dict[str, Any] | None) -> list[str]:
    """:data:`TABLE_COLUMNS` as named in :func:`best_known_table` for ``family``.

    Parameters
    ----------
    family : dict or None
        The searched family (``None``: MSE + ReLU, the names unchanged).

    Returns
    -------
    list of str

    Examples
    --------
    >>> table_columns({"loss": "ce"})[2:5]
    ['best_loss', 'loss_dnc_family', 'loss_srg_family']
    """
    if not family_tag(family):
        return list(TABLE_COLUMNS)
    return [f"{c}_family" if c in _CONSTRUCTION_COLUMNS else c for c in TABLE_COLUMNS]


#: the stages of a point (``point.json``): the search's best point, after the kink refinement, after the
#: continued descent (:func:`~deepcollapse.landscape.descent.descend_until_certified`)
_STAGES = (
    ("verdict_before_refinement", "search's best point"),
    ("verdict_before_descent", "after kink refinement"),
    ("verdict", "after continued descent"),
)


def verdict_counts(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """How many points end in each verdict at each stage: the search's best point, after the kink refinement
    and after the continued descent (issue 31).

    Parameters
    ----------
    rows : list of dict
        The points' rows (``point.json``; a row written before a stage existed counts its final verdict
        there).

    Returns
    -------
    DataFrame
        One row per stage: ``stage``, one count column per verdict class (:data:`VERDICT_CLASSES`, then
        ``not judged`` where any), ``certified`` (critical at a kink or local minimum) and ``points``.

    Examples
    --------
    >>> rows = [{"verdict_before_refinement": "not critical", "verdict_before_descent": "not critical",
    ...          "verdict": "critical at a kink"}, {"verdict": "local minimum"}]
    >>> verdict_counts(rows)[["stage", "certified", "points"]].values.tolist()
    [["search's best point", 1, 2], ['after kink refinement', 1, 2], ['after continued descent', 2, 2]]
    """
    classes = list(VERDICT_CLASSES)
    out = []
    for key, stage in _STAGES:
        found = [verdict_class(r.get(key, r.get("verdict"))) for r in rows]
        counts = {c: found.count(c) for c in classes}
        if "not judged" in found:
            counts["not judged"] = found.count("not judged")
        out.append(
            {
                "stage": stage,
                **counts,
                "certified": counts["local minimum"] + counts["critical at a kink"],
                "points": len(rows),
            }
        )
    return pd.DataFrame(out).fillna(0)


def improved_cells(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The points whose loss the kink refinement or the continued descent lowered, and by how much.

    Parameters
    ----------
    rows : list of dict
        The points' rows (``point.json``, with ``kink_refinement`` and ``descent`` where they ran).

    Returns
    -------
    DataFrame
        ``classes, layers, search_best`` (the search's best loss), ``after_refinement``, ``after_descent``,
        ``gain`` (``search_best`` minus the point's final loss) and ``verdict``; only points with
        ``gain > 0``, sorted by (L, K).

    Examples
    --------
    >>> rows = [{"classes": 4, "layers": 3, "best_loss": 0.5, "verdict": "local minimum",
    ...          "kink_refinement": None, "descent": {"loss_before": 0.75, "loss_after": 0.5}}]
    >>> improved_cells(rows)[["classes", "search_best", "gain"]].values.tolist()
    [[4.0, 0.75, 0.25]]
    """
    out = []
    for r in rows:
        final = float(r.get("search_loss", r["best_loss"]))
        ref, desc = r.get("kink_refinement") or {}, r.get("descent") or {}
        start = float(ref.get("loss_before") or desc.get("loss_before") or final)
        if not start > final:
            continue
        refined = ref.get("loss_after")
        after_ref = start if refined is None else min(float(refined), start)  # one above its start: not kept
        out.append(
            {
                "classes": r["classes"],
                "layers": r["layers"],
                "search_best": float(start),
                "after_refinement": after_ref,
                "after_descent": final,
                "gain": float(start) - final,
                "verdict": verdict_class(r.get("verdict")),
            }
        )
    columns = ["classes", "layers", "search_best", "after_refinement", "after_descent", "gain", "verdict"]
    df = pd.DataFrame(out, columns=columns)
    return df.sort_values(["layers", "classes"], kind="stable").reset_index(drop=True)


def _best_known(ctx: Context) -> None:
    from deepcollapse.analysis.landscape_plots import plot_best_known

    if ctx.settings is not None:  # reproduce best-known --config FILE: e.g. a part of the table
        settings = ctx.settings.to_dict()
    else:
        settings = BEST_KNOWN_SMOKE if ctx.smoke else BEST_KNOWN_FULL
    family, tag = ctx.family, family_tag(ctx.family)
    ctx.configs["best-known"] = {
        **settings,
        **({k: v for k, v in family.items() if v is not None} if tag else {}),
    }
    rows = best_known_rows(
        ctx.out_dir,
        settings,
        ctx.tasks,
        family=family,
        registry=ctx.registry,
        command=ctx.report.command or "deepcollapse reproduce best-known",
    )
    df = best_known_table(rows, family)
    # one row per (point, seed), as every DUFM experiment writes (the search seed is 0)
    df.assign(point=[f"K{k}_L{L}" for k, L in zip(df["classes"], df["layers"])], seed=0).to_csv(
        ctx.out_dir / (f"results_{tag}.csv" if tag else "results.csv"), index=False
    )
    who = (
        "the closed forms"
        if not tag
        else f"the DNC and SRG constructions re-optimised for this family ({tag}; no closed form)"
    )
    ctx.table(
        df,
        f"best_known_{tag}" if tag else "best_known",
        f"Best-known loss per (K, L) beside {who}, structure (rank profile of M_1..M_L) and the Hessian "
        "verdict of the best solution (float64, full n-sample problem).",
        columns=table_columns(family),
    )
    suffix = f"_{tag}" if tag else ""
    counts = verdict_counts(rows)
    final = counts.iloc[-1]
    ctx.table(
        counts,
        f"verdicts{suffix}",
        f"Verdicts of the {len(rows)} points at each stage: the search's best point, after the kink "
        "refinement, after the continued descent (line search along the certified descent direction, polish, "
        "refinement, until certified or the count budget is spent). Certified (critical at a kink or local "
        f"minimum) at the end: {int(final['certified'])} of {len(rows)}.",
    )
    gained = improved_cells(rows)
    ctx.table(
        gained,
        f"improved{suffix}",
        f"The {len(gained)} point(s) whose loss the refinement or the continued descent lowered: the "
        "search's best loss, after the refinement, after the descent (the point's loss before any registry "
        "row), and the gain.",
    )
    fig, _ = plot_best_known(rows, family=tag)
    dnc = "L_DNC" + (f"^{tag}" if tag else "")
    ctx.figure(
        fig,
        f"best_known_{tag}" if tag else "best_known",
        f"Best-known loss / {dnc} against K (solid), SRG construction (dashed)"
        + (f", both constructions re-optimised for {tag}." if tag else "."),
    )


register(
    Experiment(
        "best-known",
        "2024",
        "beyond the paper: best-known table",
        "Global search (GD restarts + float64 polish) for the lowest L-DUFM loss, K = 3..16, L = 3..5, with "
        "the Hessian verdict of each best solution.",
        "n = 50, λ = 0.004 for H_1 and every W_l, width 30; per point: `dufm search` for 12 rounds "
        "(32 GD starts x 10 000 steps per round at lr 0.5 on the reduced n = 1 problem; a count, no wall "
        "clock), "
        "then `dufm landscape`; points run in parallel on --workers processes (or Ray).",
        "several hours on 2 cores: the verdicts and the continued descent dominate (at 4 rounds, 32 of the "
        "42 MSE points took 2.0 h with --workers 2 on a shared 2-core machine)",
        "dufm",
        _best_known,
        families=True,
        config_class=BestKnownSettings,
    )
)

"""The resumable folder of a search (:mod:`deepcollapse.landscape.search`, step 4).

The pool of the best points (``_add``: losses closer than ``_SAME_LOSS`` relative count as one, the lowest
kept), its state files ``search.json`` + ``pool.npz`` (``_save_state`` / ``_load_state``: a resume must be of
the same problem), the ranked solution files ``solutions/rank01.npz …`` (``_write_solution``, with
``describe_solution``: float64 loss, ranks, Gram matrices, structure label) and ``summary.json``
(``_finish``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from deepcollapse._core.checks import ConfigError
from deepcollapse._core.io import atomic_write_json, finite_or_none, read_json, read_npz
from deepcollapse.dufm.results import DUFMRun
from deepcollapse.landscape.piecewise import Problem, collapse, expand
from deepcollapse.landscape.search_config import SearchConfig, SearchSummary, resume_command
from deepcollapse.theory.objective import evaluate, forward

__all__ = ["STATE_FORMAT", "SolutionDescription", "describe_solution", "search_command"]

STATE_FORMAT = "deepcollapse.dufm.search/1"
_SAME_LOSS = 1e-7  # two points whose losses differ by less (relative) are treated as the same solution


# ------------------------------------------------------------------------------------------------------------
# state
# ------------------------------------------------------------------------------------------------------------
def _save_state(out: Path, config: SearchConfig, state: dict[str, Any], pool: list[dict[str, Any]]) -> None:
    arrays = {f"p{e['id']}_{j}": A for e in pool for j, A in enumerate(e["params"])}
    tmp = out / ".pool.tmp.npz"
    np.savez(tmp, **arrays)
    tmp.replace(out / "pool.npz")
    meta = [{k: e[k] for k in ("id", "loss", "source", "round")} for e in pool]
    atomic_write_json(
        out / "search.json",
        finite_or_none({"format": STATE_FORMAT, "config": config.to_dict(), **state, "pool": meta}),
    )


def search_command(out: str | Path) -> str | None:
    """The ``deepcollapse dufm search`` command that gives the search folder ``out`` (its ``search.json``'s
    settings, :func:`~deepcollapse.landscape.search_config.resume_command`): the provenance of a point taken
    from the folder.

    Parameters
    ----------
    out : str or Path
        A folder; a search folder holds ``search.json``.

    Returns
    -------
    str or None
        One line, or ``None`` where ``out`` holds no readable search state.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> out = Path(tempfile.mkdtemp())
    >>> search_command(out) is None  # not a search folder
    True
    >>> config = SearchConfig(classes=3, layers=2, n=1, lam_h=0.01, lam_w=[0.01, 0.01], width=3, rounds=2)
    >>> _save_state(out, config, {"round": 2}, [])
    >>> print(search_command(out).replace(str(out), "OUT"))  # doctest: +NORMALIZE_WHITESPACE
    deepcollapse dufm search --classes 3 --layers 2 --n 1 --lam-h 0.01 --lam-w 0.01,0.01 --width 3 --seed 0
    --runs 32 --steps 10000 --lr 0.5 --keep 5 --polish-top 3 --rounds 2 --out OUT
    """
    path = Path(out) / "search.json"
    if not path.is_file():
        return None
    try:
        config = SearchConfig(**read_json(path, hint="")["config"])
    except (ConfigError, KeyError, TypeError, ValueError):
        return None
    return resume_command(Path(out), config)


def _load_state(out: Path, config: SearchConfig, force: bool) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    fresh: dict[str, Any] = {
        "round": 0,
        "elapsed_s": 0.0,
        "cpu_s": 0.0,
        "next_id": 0,
        "history": [],
        "evaluated": 0,
        "seeded": False,  # the polished constructions are all in the pool (an interrupt may cut that short)
    }
    path = out / "search.json"
    if not path.is_file() or force:
        return fresh, []
    hint = "pass --force to start the search over (or use a new --out folder)"
    saved = read_json(path, hint=hint)
    try:
        old = SearchConfig(**saved["config"]).problem_key()
        pool_meta = [(int(m["id"]), m) for m in saved["pool"]]
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"{path}: not a search state ({type(exc).__name__}: {exc}); {hint}.") from None
    if old != config.problem_key():
        diff = ", ".join(f"{k} {old[k]} -> {v}" for k, v in config.problem_key().items() if old[k] != v)
        raise ConfigError(
            f"out == {str(out)!r} holds a search of another problem ({diff}), must be a new folder "
            "(or pass --force to start over)."
        )
    pool = []
    arrays = read_npz(out / "pool.npz", hint=hint)
    for i, meta in pool_meta:
        names = [f"p{i}_{j}" for j in range(config.layers + 1)]
        if any(name not in arrays for name in names):
            raise ConfigError(f"{out / 'pool.npz'}: has no arrays {', '.join(names)} of {path}; {hint}.")
        pool.append({**meta, "params": [arrays[name] for name in names]})
    state = {k: saved.get(k, v) for k, v in fresh.items()}
    return state, pool


def _add(pool: list[dict[str, Any]], entry: dict[str, Any], size: int) -> bool:
    """Insert ``entry`` unless a point with the same loss is there; keep the ``size`` lowest; True if kept."""
    if not math.isfinite(entry["loss"]):
        return False
    for e in pool:
        if abs(e["loss"] - entry["loss"]) < _SAME_LOSS * abs(entry["loss"]):
            return False
    pool.append(entry)
    pool.sort(key=lambda e: e["loss"])
    del pool[size:]
    return entry in pool


# ------------------------------------------------------------------------------------------------------------
# solution files
# ------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class SolutionDescription(DUFMRun):
    """A point of eq. (1) described by :func:`describe_solution`: the per-run entry of the DUFM classifier
    (:class:`~deepcollapse.dufm.results.DUFMRun`, without ``run`` and ``seed``) plus the Gram matrices and
    the closed-form losses.

    Read-only key access (``desc["ranks"]``) works as for the dict of earlier releases.

    Attributes
    ----------
    final_loss : float
        Eq. (1) in float64 at the point.
    classification : str
        The structure label (:data:`~deepcollapse.dufm.classify.CLASSIFICATIONS`).
    ranks, ranks_pre : list of int
        Ranks of the post- (``M_1 .. M_L``) and pre-activation (``M~_2 .. M~_L``) class means.
    fit, reg, grad_norm, dnc1, dnc2_cond, srg_gram_distance, polished_loss, ...
        The other fields of :class:`~deepcollapse.dufm.results.DUFMRun`, as there.
    grams : list of ndarray
        ``M_l^T M_l`` (``(K, K)``) of the post-activation class means ``M_1 .. M_L``.
    loss_dnc, loss_srg : float or None
        The DNC and SRG losses of the problem (:func:`~deepcollapse.dufm.classify.theory_of`; ``None`` where
        undefined).
    """

    grams: list[np.ndarray] | None = None
    loss_dnc: float | None = None
    loss_srg: float | None = None

    @classmethod
    def _read(cls, name: str, value: Any) -> Any:
        if name == "grams" and isinstance(value, list):
            return [np.asarray(G, dtype=np.float64) for G in value]
        return super()._read(name, value)


def describe_solution(H1: np.ndarray, weights: Sequence[np.ndarray], problem: Problem) -> SolutionDescription:
    """Float64 loss (eq. (1)), ranks of the post-ReLU class means ``M_1..M_L`` (``ranks``) and pre-ReLU ones
    (``ranks_pre``), Gram matrices ``M_l^T M_l`` and the structure label of :mod:`deepcollapse.dufm.classify`
    (``classification``), with its criteria.

    Parameters
    ----------
    H1 : ndarray, (d_1, K n)
        The features, columns ordered by class.
    weights : sequence of ndarray
        ``W_1 .. W_L``.
    problem : Problem
        The problem of eq. (1) the point belongs to.

    Returns
    -------
    SolutionDescription
        The classifier's entry (the keys of the dict of earlier releases, in its order), then ``grams``,
        ``loss_dnc`` and ``loss_srg``.

    Examples
    --------
    >>> import numpy as np
    >>> from deepcollapse.landscape.piecewise import Problem
    >>> from deepcollapse.landscape.search_state import describe_solution
    >>> problem = Problem.make(2, 1, 0.1, 0.1, 1)
    >>> desc = describe_solution(np.eye(2), [np.eye(2)], problem)
    >>> desc.ranks, round(desc.final_loss, 6), desc["grams"][0]
    ([2], 0.2, array([[1., 0.],
           [0., 1.]]))
    """
    from deepcollapse.dufm.classify import classify_run, theory_of
    from deepcollapse.dufm.config import DUFMConfig
    from deepcollapse.theory.constructions import srg_gram

    K, L = problem.classes, problem.layers
    config = DUFMConfig(
        classes=K,
        n=problem.n,
        layers=L,
        width=[int(H1.shape[0])] + [int(W.shape[0]) for W in weights[:-1]],
        lam_h=problem.lam_h,
        lam_w=list(problem.lam_w),
        runs=1,
        steps=1,
        loss=problem.loss,
        activation=problem.activation,
        eps=problem.eps,
    )
    theory = theory_of(config)  # compare(...) plus the classifier's own keys (closed_form, loss_zero)
    if problem.family.is_default:
        G_srg = srg_gram(K) if K >= 6 and theory.get("loss_srg") is not None else None
    else:  # no closed form: the SRG Gram matrix wherever the structure exists for the family
        from deepcollapse.theory.constructions import srg_defined

        G_srg = srg_gram(K) if srg_defined(K, L) and problem.activation != "linear" else None
    # the point is the end of a converged polish: tell the classifier its loss has stopped decreasing (a
    # flat history), so that a minimum at a ReLU kink, where the one-sided gradient need not vanish, is
    # labelled by its structure rather than "not_converged"
    loss = evaluate(np.asarray(H1), list(weights), problem).total
    history: list[tuple[int, float | None]] = [(0, loss), (1, loss)]
    rec = dict(
        classify_run(np.asarray(H1), [np.asarray(W) for W in weights], config, None, theory, G_srg, history)
    )
    _, posts, _ = forward(collapse(np.asarray(H1), K), weights, problem.family)  # post-σ class means M_1..M_L
    rec["grams"] = [M.T @ M for M in posts]  # (K, K) Gram matrices
    rec["loss_dnc"] = theory["loss_dnc"]
    rec["loss_srg"] = theory["loss_srg"]
    return SolutionDescription.from_dict(rec)


def _write_solution(path: Path, entry: dict[str, Any], config: SearchConfig) -> dict[str, Any]:
    from deepcollapse.landscape.solution_file import save_solution

    problem = config.problem
    H1 = expand(entry["params"][0], config.n)  # (d1, K n)
    weights = [np.asarray(W) for W in entry["params"][1:]]
    parts = evaluate(H1, weights, problem)
    desc = entry.get("description") or describe_solution(H1, weights, problem)
    entry["description"] = desc
    extra: dict[str, Any] = {
        "loss": parts.total,
        "fit": parts.fit,
        "reg": parts.reg,
        "ranks": np.asarray(desc.ranks),
        "ranks_pre": np.asarray(desc.ranks_pre),
        "structure": np.asarray(desc.classification),
        "rank_profile": np.asarray("-".join(map(str, desc.ranks or []))),
        "source": np.asarray(entry["source"]),
    }
    for l, G in enumerate(desc.grams or [], 1):
        extra[f"gram_{l}"] = G
    save_solution(
        path,
        H1,
        weights,
        n=config.n,
        lam_h=config.lam_h,
        lam_w=config.lam_w,
        extra=extra,
        family=problem.family,
    )
    return {
        "file": str(path.name),
        "loss": parts.total,
        "structure": desc.classification,
        "ranks": desc.ranks,
        "ranks_pre": desc.ranks_pre,
        "source": entry["source"],
        "round": entry["round"],
    }


def _finish(
    out: Path,
    config: SearchConfig,
    pool: list[dict[str, Any]],
    state: dict[str, Any],
    theory: Mapping[str, Any],
) -> SearchSummary:
    sol_dir = out / "solutions"
    sol_dir.mkdir(exist_ok=True)
    rows = []
    for i, entry in enumerate(pool[: config.keep], 1):
        rows.append(_write_solution(sol_dir / f"rank{i:02d}.npz", entry, config))
    for stale in sorted(sol_dir.glob("rank*.npz"))[len(rows) :]:
        stale.unlink()
    best = rows[0]["loss"] if rows else None
    summary = {
        "problem": config.problem_key(),
        "loss_dnc": theory["loss_dnc"],
        "loss_srg": theory["loss_srg"],
        "best_loss": best,
        "best_over_dnc": None if best is None else best / theory["loss_dnc"],
        "best_over_srg": None if best is None or theory["loss_srg"] is None else best / theory["loss_srg"],
        "rounds": state["round"],
        "starts_evaluated": state["evaluated"],
        "elapsed_s": state["elapsed_s"],
        "cpu_s": state["cpu_s"],
        "history": state["history"],
        "solutions": rows,
        "theory": dict(theory),
    }
    atomic_write_json(out / "summary.json", finite_or_none(summary))
    return SearchSummary.from_dict(summary)

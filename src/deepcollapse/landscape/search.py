"""Global search for the lowest loss of the L-DUFM (2024 paper, eq. (1)): ``search_dufm(config, out_dir)``.

Why the search runs on the reduced problem: given the weights, eq. (1) separates over the columns of ``H_1``
and every column of a class solves the same problem, so the minimum of eq. (1) equals the minimum of the
``n = 1`` problem with ``λ_{H_1}`` replaced by ``nλ_{H_1}`` (:class:`~deepcollapse.landscape.piecewise.
Problem.reduced`), and every reduced point ``M_1`` gives the ``n``-sample point ``H_1 = M_1 ⊗ 1_n^T`` with the
same loss.  GD on the reduced problem costs ``1/n`` of a full step.

One *round* (deterministic given ``(seed, round)``, so an interrupted search resumes exactly):

1. ``runs`` diverse starts (reduced problem, float32): random Gaussian points at three scales; the DNC and SRG
   constructions (:func:`~deepcollapse.theory.constructions.dnc_solution`, ``srg_solution`` for every SRG
   variant defined at this ``K``) with multiplicative and additive noise; perturbations of the best points
   found so far (from round 1 on); and *redrawn* starts: an SRG construction (from round 1 on also one of the
   best points) whose last one or two weight matrices are replaced by random ones at three scales.  The
   2024 paper reports that the solutions gradient descent found below L_SRG at K = 6 and K = 15 differ from
   SRG only in ``M~_L`` (its App. B.1); keeping the lower layers and re-drawing the top ones reaches them
   (round 0 plan: 1/4 random, 1/4 perturbed constructions, 1/2 redrawn; later rounds 1/4 random, 1/8
   constructions, 1/4 perturbed best, 3/8 redrawn).
2. ``steps`` full-batch GD steps at rate ``lr`` for all starts at once through the trainer's batched numpy
   kernel (:func:`~deepcollapse.dufm.kernel.advance_limited`), in chunks so the budget and Ctrl-C are
   honoured within about a second.
3. The ``polish_top`` lowest (float64) distinct results are polished in float64: a σ_ε continuation
   (L-BFGS on eq. (1) with ReLU replaced by the C¹ function σ_ε of the paper's Definition 7, ε = 1e-3, 1e-5,
   1e-7, so that L-BFGS sees no kinks) followed by :func:`~deepcollapse.landscape.piecewise.polish`
   (L-BFGS on the true objective, then trust-region Newton on the smooth piece of the activation pattern,
   re-checked after each solve); every candidate is scored by the true eq. (1) in float64 and the best
   visited point is kept.  Round 0 also polishes the unperturbed constructions, so the result is never worse
   than ``min(L_DNC, L_SRG)``.
4. The pool of the best ``2 · keep`` distinct points (losses closer than ``1e-7`` relative count as one) is
   written to disk; the best ``keep`` as ``n``-sample solution files (``solutions/rank01.npz`` …) with their
   float64 loss, per-layer ranks, class-mean Gram matrices and the structure label of
   :mod:`deepcollapse.dufm.classify` (``dnc`` / ``srg_like`` / ``low_rank`` / …, with the rank
   profile).

Folder: ``search.json`` (config, round, elapsed time, history of the best loss, the pool's metadata),
``pool.npz`` (the pool's reduced points), ``solutions/*.npz`` (:mod:`deepcollapse.landscape.solution_file`
format plus extras), ``summary.json``.  Running the same search into the same folder resumes it; a different
problem in an existing folder is refused unless ``force``.
"""

from __future__ import annotations

import json
import logging
import math
import signal
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from deepcollapse._core.checks import ConfigError, Interrupted, check_float, check_int, check_per_layer
from deepcollapse._core.config import ConfigMixin
from deepcollapse._core.interrupt import StopFlag, stop_on_signals
from deepcollapse._core.io import atomic_write_json, finite_or_none
from deepcollapse._core.results import Result, to_jsonable
from deepcollapse.landscape.piecewise import (
    Problem,
    collapse,
    expand,
    sigma_eps_polish,
    value,
)
from deepcollapse.theory.objective import dufm_objective, forward

__all__ = [
    "SearchConfig",
    "SearchInterrupted",
    "SearchSolution",
    "SearchSummary",
    "describe_solution",
    "search_dufm",
]


@dataclass(frozen=True, eq=False)
class SearchSolution(Result):
    """One kept solution of a search (an entry of :attr:`SearchSummary.solutions`).

    Attributes
    ----------
    file : str
        Its file in ``solutions/`` (``rank01.npz`` is the best), readable by
        :func:`~deepcollapse.landscape.solution_file.load_solution`.
    loss : float
        Eq. (1) of the solution at the full problem (float64).
    structure : str
        Its classification (:data:`~deepcollapse.dufm.classify.CLASSIFICATIONS`).
    ranks, ranks_pre : list of int
        Ranks of the post- (``M_1 .. M_L``) and pre-activation (``M~_2 .. M~_L``) class means.
    source : str
        Where it came from, e.g. ``"dnc (polished)"`` or ``"GD from random"``.
    round : int
        The round that found it.
    """

    file: str | None = None
    loss: float | None = None
    structure: str | None = None
    ranks: list[int] | None = None
    ranks_pre: list[int] | None = None
    source: str | None = None
    round: int | None = None


@dataclass(frozen=True, eq=False)
class SearchSummary(Result):
    """The state of a global search folder (``summary.json``): the result of :func:`search_dufm`.

    Read-only key access (``summary["solutions"][0]["loss"]``) works as for the dict of earlier releases.

    Attributes
    ----------
    problem : dict
        ``classes, layers, n, lam_h, lam_w, width`` (:meth:`SearchConfig.problem_key`).
    loss_dnc, loss_srg : float or None
        The closed-form DNC and SRG losses (``loss_srg`` ``None`` where SRG is undefined).
    best_loss : float or None
        The lowest loss found.
    best_over_dnc, best_over_srg : float or None
        ``best_loss / loss_dnc`` and ``best_loss / loss_srg``.
    rounds : int
        Rounds completed (over every call).
    starts_evaluated : int
        GD starts run.
    elapsed_s, cpu_s : float
        Wall-clock and this process's CPU seconds spent (over every call).
    history : list of dict
        Per round: ``{round, best, elapsed_s, cpu_s}``.
    solutions : list of SearchSolution
        The kept solutions, best first.
    theory : dict
        The :class:`~deepcollapse.theory.compare.Comparison` as a dict plus ``closed_form: True``.
    """

    _nested = {"solutions": SearchSolution}

    problem: dict[str, Any] | None = None
    loss_dnc: float | None = None
    loss_srg: float | None = None
    best_loss: float | None = None
    best_over_dnc: float | None = None
    best_over_srg: float | None = None
    rounds: int | None = None
    starts_evaluated: int | None = None
    elapsed_s: float | None = None
    cpu_s: float | None = None
    history: list[dict[str, Any]] | None = None
    solutions: list[SearchSolution] | None = None
    theory: dict[str, Any] | None = None


log = logging.getLogger(__name__)

STATE_FORMAT = "deepcollapse.dufm.search/1"
_CHUNK = 2000  # GD steps between budget / interrupt checks
_SAME_LOSS = 1e-7  # two points whose losses differ by less (relative) are treated as the same solution


class SearchInterrupted(Interrupted):
    """Raised after an interrupted search wrote its state; ``command`` (also ``resume``) resumes it.

    An :class:`~deepcollapse._core.checks.Interrupted` (a ``KeyboardInterrupt``), so a sweep of search points
    stops on it rather than going on with the next point."""

    def __init__(self, out_dir: Path, command: str, signum: int = signal.SIGINT) -> None:
        super().__init__(
            signum, f"search interrupted; state saved in {out_dir}; resume with: {command}", resume=command
        )
        self.out_dir = out_dir
        self.command = command

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.out_dir, self.command, self.signum))


@dataclass
class SearchConfig(ConfigMixin):
    """What to search: eq. (1) with ``classes, layers, n, lam_h, lam_w, width`` (``d_1 = .. = d_L``); how:
    ``runs`` GD starts per round, ``steps`` GD steps at rate ``lr``, ``polish_top`` polished per round,
    ``keep`` solutions written, ``seed``; ``budget`` minutes per call (``rounds`` caps the rounds).

    Each field's metadata is its command-line option (``deepcollapse dufm search``)."""

    classes: int = field(default=10, metadata={"help": "K, number of classes"})
    layers: int = field(default=4, metadata={"help": "L, number of weight matrices"})
    n: int = field(default=50, metadata={"help": "samples per class"})
    lam_h: float = field(default=0.004, metadata={"help": "λ_H1 (overrides --lam)"})
    lam_w: list[float] = field(
        default_factory=lambda: [0.004] * 4,
        metadata={"help": "λ_W: one float or comma-separated L floats (overrides --lam)"},
    )
    width: int = field(default=30, metadata={"help": "d_1 = .. = d_L"})
    runs: int = field(default=32, metadata={"help": "GD starts per round"})
    steps: int = field(default=10_000, metadata={"help": "GD steps per round"})
    lr: float = field(default=0.5, metadata={"help": "GD learning rate"})
    polish_top: int = field(
        default=3, metadata={"help": "lowest distinct results polished in float64 per round"}
    )
    keep: int = field(default=5, metadata={"help": "solutions written"})
    seed: int = field(default=0, metadata={"help": "seed of the starts"})
    budget: float = field(
        default=30.0, metadata={"help": "minutes for this call; a call always finishes one round"}
    )
    rounds: int | None = field(
        default=None, metadata={"help": "stop after this many rounds", "shown_default": "only the budget"}
    )

    def __post_init__(self) -> None:
        self.classes = check_int("classes", self.classes, min=2)
        self.layers = check_int("layers", self.layers, min=2)
        self.n = check_int("n", self.n, min=1)
        self.lam_h = check_float("lam_h", self.lam_h, gt=0.0)
        self.lam_w = check_per_layer("lam_w", self.lam_w, self.layers, gt=0.0)
        self.width = check_int("width", self.width, min=self.classes)
        self.runs = check_int("runs", self.runs, min=1)
        self.steps = check_int("steps", self.steps, min=0)
        self.lr = check_float("lr", self.lr, gt=0.0)
        self.polish_top = check_int("polish_top", self.polish_top, min=1)
        self.keep = check_int("keep", self.keep, min=1)
        self.seed = check_int("seed", self.seed, min=0)
        self.budget = check_float("budget", self.budget, gt=0.0)
        if self.rounds is not None:
            self.rounds = check_int("rounds", self.rounds, min=1)

    @property
    def problem(self) -> Problem:
        """The searched instance of eq. (1) (MSE + ReLU, every width ``width``)."""
        return Problem(
            self.classes, self.layers, self.n, self.lam_h, tuple(self.lam_w), (self.width,) * self.layers
        )

    def problem_key(self) -> dict[str, Any]:
        """The fields that define the optimisation problem (a resumed search must match them)."""
        return {k: getattr(self, k) for k in ("classes", "layers", "n", "lam_h", "lam_w", "width")}


# ------------------------------------------------------------------------------------------------------------
# GD through the trainer's kernel
# ------------------------------------------------------------------------------------------------------------
def _gd(
    params: list[np.ndarray], lrs: np.ndarray, problem: Problem
) -> tuple[list[np.ndarray], dict[int, int]]:
    """Batched GD on ``params`` (leading run dimension) via the trainer's kernel (the only caller)."""
    from deepcollapse.dufm.kernel import advance_limited

    R = params[0].shape[0]
    return advance_limited(
        params, lrs, 0, problem.classes, problem.n, problem.lam_h, list(problem.lam_w), min(R, 64)
    )


# ------------------------------------------------------------------------------------------------------------
# starts
# ------------------------------------------------------------------------------------------------------------
def _constructions(config: SearchConfig) -> list[tuple[str, list[np.ndarray]]]:
    """The DNC and every defined SRG construction as reduced points ``[M_1, W_1..W_L]``."""
    from deepcollapse.theory.constructions import SRG_CONSTRUCTIONS, dnc_solution, srg_defined, srg_solution

    K, L, n = config.classes, config.layers, config.n
    args = (K, L, n, config.lam_h, config.lam_w)
    out = []
    sols: list[tuple[str, Callable[[], Any]]] = [("dnc", partial(dnc_solution, *args, width=config.width))]
    for c in SRG_CONSTRUCTIONS:
        if srg_defined(K, L, c):
            sols.append((f"srg-{c}", partial(srg_solution, *args, construction=c, width=config.width)))
    for name, make in sols:
        try:
            sol = make()
        except ConfigError as exc:  # e.g. the width is too small for this construction
            log.info("construction %s skipped: %s", name, exc)
            continue
        if sol.H1.shape[0] != config.width or any(W.shape[0] not in (config.width, K) for W in sol.weights):
            continue
        out.append((name, [collapse(sol.H1, K), *[np.asarray(W, dtype=np.float64) for W in sol.weights]]))
    return out


def _random_point(config: SearchConfig, rng: np.random.Generator, scale: float) -> list[np.ndarray]:
    d, K = config.width, config.classes
    shapes = [(d, K)] + [(d, d)] * (config.layers - 1) + [(K, d)]
    stds = [1.0] + [1.0 / math.sqrt(d)] * config.layers
    return [scale * s * rng.standard_normal(sh) for sh, s in zip(shapes, stds)]


def _perturb(point: Sequence[np.ndarray], rng: np.random.Generator, sigma: float) -> list[np.ndarray]:
    out = []
    for A in point:
        rms = math.sqrt(float(np.mean(A**2))) or 1.0
        out.append(
            A * (1 + sigma * rng.standard_normal(A.shape)) + 0.3 * sigma * rms * rng.standard_normal(A.shape)
        )
    return out


def _redraw(
    point: Sequence[np.ndarray], rng: np.random.Generator, layers: int, scale: float
) -> list[np.ndarray]:
    """``point`` with its last ``layers`` weight matrices replaced by Gaussian ones of std ``scale/√d_in``."""
    out = [np.asarray(A, dtype=np.float64).copy() for A in point]
    for j in range(len(out) - layers, len(out)):
        out[j] = scale * rng.standard_normal(out[j].shape) / math.sqrt(out[j].shape[1])
    return out


def _plan(R: int, first: bool) -> dict[str, int]:
    """How many starts of each kind one round draws (module docstring, step 1)."""
    if first:
        n_random = R // 4
        n_cons = R // 4
        return {"random": n_random, "construction": n_cons, "best": 0, "redraw": R - n_random - n_cons}
    n_best = R // 4
    n_cons = R // 8
    n_redraw = (R * 3) // 8
    return {
        "random": R - n_best - n_cons - n_redraw,
        "construction": n_cons,
        "best": n_best,
        "redraw": n_redraw,
    }


def _starts(
    config: SearchConfig,
    rng: np.random.Generator,
    first: bool,
    constructions: list[tuple[str, list[np.ndarray]]],
    pool: list[dict[str, Any]],
) -> tuple[list[list[np.ndarray]], list[str]]:
    R = config.runs
    starts: list[list[np.ndarray]] = []
    labels: list[str] = []
    plan = _plan(R, first or not pool)
    for i in range(plan["random"]):
        scale = (0.3, 1.0, 2.0)[i % 3]
        starts.append(_random_point(config, rng, scale))
        labels.append(f"random(scale {scale})")
    for i in range(plan["construction"]):
        name, point = constructions[i % len(constructions)]
        sigma = (0.02, 0.1, 0.3)[(i // len(constructions)) % 3]
        starts.append(_perturb(point, rng, sigma))
        labels.append(f"{name}+noise {sigma}")
    for i in range(plan["best"]):
        entry = pool[i % min(len(pool), config.keep)]
        sigma = (0.01, 0.05, 0.2)[(i // max(1, min(len(pool), config.keep))) % 3]
        starts.append(_perturb(entry["params"], rng, sigma))
        labels.append(f"best#{entry['id']}+noise {sigma}")
    # the lower layers of a construction (or of a good point) kept, the last one or two layers drawn afresh:
    # the 2024 paper's K = 6 and K = 15 solutions below L_SRG differ from SRG only in M~_L (its App. B.1)
    bases = [c for c in constructions if c[0] != "dnc"] or list(constructions)
    if pool and not first:
        bases = [(f"best#{e['id']}", e["params"]) for e in pool[: config.keep]] + bases
    for i in range(plan["redraw"]):
        name, point = bases[i % len(bases)]
        k = min(config.layers, 1 + (i // len(bases)) % 2)
        scale = (0.5, 1.0, 2.0)[(i // (2 * len(bases))) % 3]
        starts.append(_redraw(point, rng, k, scale))
        labels.append(f"{name}, last {k} layer(s) redrawn (scale {scale})")
    return starts, labels


# ------------------------------------------------------------------------------------------------------------
# describing a solution
# ------------------------------------------------------------------------------------------------------------
def describe_solution(H1: np.ndarray, weights: Sequence[np.ndarray], problem: Problem) -> dict[str, Any]:
    """Float64 loss (eq. (1)), ranks of the post-ReLU class means ``M_1..M_L`` (``ranks``) and pre-ReLU ones
    (``ranks_pre``), cosine Gram matrices of ``M_l`` and the structure label of
    :mod:`deepcollapse.dufm.classify` (``classification``), with its criteria."""
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
    )
    theory = theory_of(config)  # compare(...) plus the classifier's own keys (closed_form, loss_zero)
    G_srg = srg_gram(K) if K >= 6 and theory.get("loss_srg") is not None else None
    # the point is the end of a converged polish: tell the classifier its loss has stopped decreasing (a
    # flat history), so that a minimum at a ReLU kink, where the one-sided gradient need not vanish, is
    # labelled by its structure rather than "not_converged"
    loss = dufm_objective(np.asarray(H1), list(weights), problem.lam_h, list(problem.lam_w)).total
    history: list[tuple[int, float | None]] = [(0, loss), (1, loss)]
    rec = classify_run(np.asarray(H1), [np.asarray(W) for W in weights], config, None, theory, G_srg, history)
    _, posts, _ = forward(collapse(np.asarray(H1), K), weights)  # post-ReLU class means M_1 .. M_L
    rec["grams"] = [M.T @ M for M in posts]  # (K, K) Gram matrices
    rec["loss_dnc"] = theory["loss_dnc"]
    rec["loss_srg"] = theory["loss_srg"]
    return rec


def _write_solution(path: Path, entry: dict[str, Any], config: SearchConfig) -> dict[str, Any]:
    from deepcollapse.landscape.solution_file import save_solution

    problem = config.problem
    H1 = expand(entry["params"][0], config.n)  # (d1, K n)
    weights = [np.asarray(W) for W in entry["params"][1:]]
    parts = dufm_objective(H1, weights, config.lam_h, config.lam_w)
    desc = entry.get("description") or describe_solution(H1, weights, problem)
    entry["description"] = desc
    extra: dict[str, Any] = {
        "loss": parts.total,
        "fit": parts.fit,
        "reg": parts.reg,
        "ranks": np.asarray(desc["ranks"]),
        "ranks_pre": np.asarray(desc["ranks_pre"]),
        "structure": np.asarray(desc["classification"]),
        "rank_profile": np.asarray("-".join(map(str, desc["ranks"]))),
        "source": np.asarray(entry["source"]),
    }
    for l, G in enumerate(desc["grams"], 1):
        extra[f"gram_{l}"] = G
    save_solution(path, H1, weights, n=config.n, lam_h=config.lam_h, lam_w=config.lam_w, extra=extra)
    return {
        "file": str(path.name),
        "loss": parts.total,
        "structure": desc["classification"],
        "ranks": desc["ranks"],
        "ranks_pre": desc["ranks_pre"],
        "source": entry["source"],
        "round": entry["round"],
    }


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


def _load_state(out: Path, config: SearchConfig, force: bool) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    fresh: dict[str, Any] = {
        "round": 0,
        "elapsed_s": 0.0,
        "cpu_s": 0.0,
        "next_id": 0,
        "history": [],
        "evaluated": 0,
    }
    path = out / "search.json"
    if not path.is_file() or force:
        return fresh, []
    saved = json.loads(path.read_text())
    old = SearchConfig(**saved["config"]).problem_key()
    if old != config.problem_key():
        diff = ", ".join(f"{k} {old[k]} -> {v}" for k, v in config.problem_key().items() if old[k] != v)
        raise ConfigError(
            f"out == {str(out)!r} holds a search of another problem ({diff}), must be a new folder "
            "(or pass --force to start over)."
        )
    pool = []
    with np.load(out / "pool.npz") as z:
        for meta in saved["pool"]:
            n_arrays = config.layers + 1
            params = [z[f"p{meta['id']}_{j}"] for j in range(n_arrays)]
            pool.append({**meta, "params": params})
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


def resume_command(out: Path, config: SearchConfig) -> str:
    lam_w = ",".join(f"{x:g}" for x in config.lam_w)
    return (
        f"deepcollapse dufm search --classes {config.classes} --layers {config.layers} --n {config.n} "
        f"--lam-h {config.lam_h:g} --lam-w {lam_w} --width {config.width} --seed {config.seed} "
        f"--runs {config.runs} --steps {config.steps} --lr {config.lr:g} --keep {config.keep} "
        f"--budget {config.budget:g} --out {out}"
    )


# ------------------------------------------------------------------------------------------------------------
# the search
# ------------------------------------------------------------------------------------------------------------
def search_dufm(
    config: SearchConfig, out_dir: str | Path, *, force: bool = False, progress: bool = True
) -> SearchSummary:
    """Run (or resume) the search of the module docstring for ``config.budget`` minutes (or
    ``config.rounds`` rounds; a call always completes at least one round, whatever the budget); returns the
    :class:`SearchSummary` (also written to ``summary.json``)."""
    from tqdm.auto import tqdm

    from deepcollapse.theory.compare import compare

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    state, pool = _load_state(out, config, force)
    problem = config.problem
    reduced = problem.reduced()
    theory = compare(config.classes, config.layers, config.n, config.lam_h, config.lam_w)
    constructions = _constructions(config)
    budget_s = 60.0 * config.budget
    t0, c0 = time.monotonic(), time.process_time()
    elapsed0, cpu0 = float(state["elapsed_s"]), float(state.get("cpu_s", 0.0))
    first_round = int(state["round"])
    bar = tqdm(total=round(budget_s), unit="s", disable=not progress, desc="search", leave=False)

    def tick() -> None:
        bar.n = min(round(time.monotonic() - t0), bar.total)
        best = pool[0]["loss"] if pool else math.inf
        bar.set_postfix_str(f"round {state['round']} best {best:.10f}")

    def out_of_time() -> bool:
        # every call completes at least one round: a budget shorter than one round still searches
        return state["round"] > first_round and time.monotonic() - t0 >= budget_s

    def save() -> None:
        state["elapsed_s"] = elapsed0 + time.monotonic() - t0
        state["cpu_s"] = (
            cpu0 + time.process_time() - c0
        )  # this process's CPU time (the machine may be shared)
        _save_state(out, config, state, pool)

    def new_entry(params: list[np.ndarray], loss: float, source: str) -> dict[str, Any]:
        entry = {"id": state["next_id"], "loss": float(loss), "source": source, "round": state["round"]}
        entry["params"] = [np.asarray(p, dtype=np.float64) for p in params]
        state["next_id"] += 1
        return entry

    from threadpoolctl import threadpool_limits

    # SIGINT / SIGTERM raise KeyboardInterrupt at once: the state is saved in the except clause below (the
    # pool and the rounds finished so far; an unfinished round is redone deterministically on resume)
    flag = StopFlag(raise_now=True)
    try:
        # one BLAS thread: L-BFGS-B's Fortran core and the small GEMMs lose badly to threads (measured 4.5 ms
        # per L-BFGS-B iteration with the default threads on a loaded 2-core machine)
        with stop_on_signals(flag), threadpool_limits(limits=1, user_api="blas"):
            if state["round"] == 0 and not pool:
                for name, point in constructions:  # the constructions themselves, polished
                    params, loss = sigma_eps_polish(point, reduced)
                    _add(pool, new_entry(params, loss, f"{name} (polished)"), 2 * config.keep)
                    tick()
            while not out_of_time() and (
                config.rounds is None or state["round"] - first_round < config.rounds
            ):
                r = int(state["round"])
                rng = np.random.default_rng([config.seed, r])
                starts, labels = _starts(config, rng, r == 0, constructions, pool)
                params = [
                    np.stack([s[j] for s in starts]).astype(np.float32) for j in range(config.layers + 1)
                ]
                done = 0
                while done < config.steps:
                    k = min(_CHUNK, config.steps - done)
                    params, _ = _gd(params, np.full(k, config.lr), reduced)
                    done += k
                    tick()
                    if out_of_time():
                        break
                if out_of_time() and done < config.steps:
                    break  # an unfinished round is redone (deterministically) by the next call
                losses = []
                for i in range(len(starts)):
                    point = [np.asarray(p[i], dtype=np.float64) for p in params]
                    ok = all(np.isfinite(p).all() for p in point)
                    losses.append(value(point, reduced) if ok else math.inf)
                order = np.argsort(losses)
                picked: list[int] = []
                for i in order:
                    if not math.isfinite(losses[i]) or len(picked) >= config.polish_top:
                        break
                    if all(abs(losses[i] - losses[j]) > _SAME_LOSS * abs(losses[i]) for j in picked):
                        picked.append(int(i))
                for i in picked:
                    point = [np.asarray(p[i], dtype=np.float64) for p in params]
                    pol, loss = sigma_eps_polish(point, reduced)
                    _add(pool, new_entry(pol, loss, f"GD from {labels[i]}"), 2 * config.keep)
                    tick()
                state["evaluated"] += len(starts)
                state["round"] = r + 1
                state["history"].append(
                    {
                        "round": r,
                        "best": pool[0]["loss"],
                        "elapsed_s": elapsed0 + time.monotonic() - t0,
                        "cpu_s": cpu0 + time.process_time() - c0,
                    }
                )
                save()
                log.info("round %d: best %.10f", r, pool[0]["loss"])
    except KeyboardInterrupt:
        save()
        bar.close()
        raise SearchInterrupted(out, resume_command(out, config), flag.signum or signal.SIGINT) from None
    bar.close()
    save()
    return _finish(out, config, pool, state, theory)


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
        "theory": {**to_jsonable(theory), "closed_form": True},  # MSE + ReLU: the closed forms apply
    }
    atomic_write_json(out / "summary.json", finite_or_none(summary))
    return SearchSummary.from_dict(summary)

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

Every model family (``loss``, ``activation``, ``eps``, as in ``dufm train``): GD runs the trainer's kernel for
the family, the polish and every score use the family's float64 eq. (1) (:mod:`~deepcollapse.landscape.
piecewise`), the constructions are those re-optimised for the family (:func:`family_construction`: the
cross-entropy DNC and SRG of ``theory compare --loss ce``), and the summary compares with them
(:func:`~deepcollapse.theory.family_compare.compare_family`; ``theory.closed_form`` is True only for MSE +
ReLU).  Solution files record the family.  ``λ = 0`` is refused (:data:`NO_MINIMUM`).

Folder: ``search.json`` (config, round, elapsed time, history of the best loss, the pool's metadata),
``pool.npz`` (the pool's reduced points), ``solutions/*.npz`` (:mod:`deepcollapse.landscape.solution_file`
format plus extras), ``summary.json``.  Running the same search into the same folder resumes it; a different
problem in an existing folder is refused unless ``force``.

The pieces: :mod:`~deepcollapse.landscape.search_config` (``SearchConfig``, the results,
``SearchInterrupted``), :mod:`~deepcollapse.landscape.search_starts` (the round plan and its starts,
``family_construction``), :mod:`~deepcollapse.landscape.search_state` (the pool, the state and solution
files); this module runs the rounds (GD through the kernel, the polish) and re-exports their public names.
"""

from __future__ import annotations

import logging
import math
import signal
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from deepcollapse._core.interrupt import StopFlag, stop_on_signals
from deepcollapse._core.results import to_jsonable
from deepcollapse.landscape.piecewise import Problem, sigma_eps_polish, value
from deepcollapse.landscape.search_config import NO_MINIMUM as NO_MINIMUM
from deepcollapse.landscape.search_config import (
    SearchConfig,
    SearchInterrupted,
    SearchSolution,
    SearchSummary,
    resume_command,
)
from deepcollapse.landscape.search_starts import _constructions, _starts, family_construction
from deepcollapse.landscape.search_starts import _plan as _plan  # re-exported (tests draw a round's plan)
from deepcollapse.landscape.search_starts import _redraw as _redraw
from deepcollapse.landscape.search_state import (
    _SAME_LOSS,
    _add,
    _finish,
    _load_state,
    _save_state,
    describe_solution,
)
from deepcollapse.landscape.search_state import STATE_FORMAT as STATE_FORMAT

__all__ = [
    "SearchConfig",
    "SearchInterrupted",
    "SearchSolution",
    "SearchSummary",
    "describe_solution",
    "family_construction",
    "search_dufm",
]

log = logging.getLogger(__name__)

_CHUNK = 2000  # GD steps between budget / interrupt checks


# ------------------------------------------------------------------------------------------------------------
# GD through the trainer's kernel
# ------------------------------------------------------------------------------------------------------------
def _gd(
    params: list[np.ndarray], lrs: np.ndarray, problem: Problem
) -> tuple[list[np.ndarray], dict[int, int]]:
    """Batched GD on ``params`` (leading run dimension) via the trainer's kernel (the only caller)."""
    from deepcollapse.dufm.kernel import advance_limited

    R = params[0].shape[0]
    return advance_limited(params, lrs, 0, problem, sub_batch=min(R, 64))


# ------------------------------------------------------------------------------------------------------------
# the search
# ------------------------------------------------------------------------------------------------------------
def search_dufm(
    config: SearchConfig, out_dir: str | Path, *, force: bool = False, progress: bool = True
) -> SearchSummary:
    """Run (or resume) the search of the module docstring until the folder holds ``config.rounds`` rounds
    (a count over every call) or ``config.budget`` minutes of this call have passed, whichever comes first
    (without ``rounds`` a call always completes at least one round, whatever the budget); returns the
    :class:`SearchSummary` (also written to ``summary.json``).

    Parameters
    ----------
    config : SearchConfig
        The problem and the search's settings.
    out_dir : str or Path
        The search folder (created; an earlier search of the same problem there is resumed).
    force : bool, default False
        Start afresh in a folder holding the search of another problem.
    progress : bool, default True
        Progress bars on stderr.

    Returns
    -------
    SearchSummary
        The best points found, their losses against the theory's, and the rounds done.

    Examples
    --------
    >>> import os
    >>> import tempfile
    >>> config = SearchConfig(classes=3, layers=2, n=1, lam_h=0.01, lam_w=[0.01, 0.01], width=3, runs=2,
    ...     steps=5, keep=1, polish_top=1, rounds=1)
    >>> from unittest import mock
    >>> with mock.patch.dict(os.environ, {"DEEPCOLLAPSE_KERNEL": "numpy"}):  # no JIT compile for 10 steps
    ...     summary = search_dufm(config, tempfile.mkdtemp(), progress=False)
    >>> summary.rounds, bool(summary.best_loss <= summary.loss_dnc + 1e-12)
    (1, True)
    """
    from tqdm.auto import tqdm

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    state, pool = _load_state(out, config, force)
    problem = config.problem
    reduced = problem.reduced()
    theory = _theory(config)
    constructions = _constructions(config)
    budget_s = None if config.budget is None else 60.0 * config.budget  # None: rounds only, no wall clock
    t0, c0 = time.monotonic(), time.process_time()
    elapsed0, cpu0 = float(state["elapsed_s"]), float(state.get("cpu_s", 0.0))
    first_round = int(state["round"])
    # counted (no budget): the bar shows the folder's rounds; else the seconds of this call
    total, unit = (config.rounds, "round") if budget_s is None else (round(budget_s), "s")
    bar = tqdm(total=total, unit=unit, disable=not progress, desc="search", leave=False)

    def tick() -> None:
        if budget_s is None:
            bar.n = min(int(state["round"]), bar.total)
        else:
            bar.n = min(round(time.monotonic() - t0), bar.total)
        best = pool[0]["loss"] if pool else math.inf
        bar.set_postfix_str(f"round {state['round']} best {best:.10f}")

    def out_of_time() -> bool:
        # every call completes at least one round: a budget shorter than one round still searches
        if budget_s is None:
            return False
        return state["round"] > first_round and time.monotonic() - t0 >= budget_s

    def rounds_left() -> bool:
        # ``rounds`` counts the folder's rounds over every call (a resumed search ends where an
        # uninterrupted one does)
        return not config.rounds_reached(int(state["round"]))

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
            if state["round"] == 0 and not state["seeded"]:
                for name, point in constructions:  # the constructions themselves, polished
                    params, loss = sigma_eps_polish(point, reduced)
                    _add(pool, new_entry(params, loss, f"{name} (polished)"), 2 * config.keep)
                    tick()
                state["seeded"] = True
            while not out_of_time() and rounds_left():
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
        if not state["seeded"]:
            saved = f"the {len(pool)} construction(s) polished so far saved (resuming polishes the rest)"
        else:
            saved = (
                f"{state['round']} finished round(s) and the best {len(pool)} point(s) saved (resuming "
                f"redoes round {state['round']} from its start)"
            )
        if pool:  # the best points so far, as solution files and summary.json, like a finished call
            partial = _finish(out, config, pool, state, theory)
            saved += (
                f"; best loss so far {partial.best_loss:.10f}"
                + _versus(theory)
                + f"; its {len(partial.solutions or [])} best point(s) written to {out / 'solutions'}"
            )
        raise SearchInterrupted(
            out, resume_command(out, config), flag.signum or signal.SIGINT, saved
        ) from None
    bar.close()
    save()
    return _finish(out, config, pool, state, theory)


def _versus(theory: Mapping[str, Any]) -> str:
    """`` (L_DNC …, L_SRG …)``: the references beside a loss in an interrupt message."""
    srg = theory.get("loss_srg")
    return f" (L_DNC {theory['loss_dnc']:.10f}" + ("" if srg is None else f", L_SRG {srg:.10f}") + ")"


def _theory(config: SearchConfig) -> dict[str, Any]:
    """What the search compares against: the MSE + ReLU closed forms (``compare``), or for another family
    the constructions re-optimised for it (:func:`~deepcollapse.theory.family_compare.compare_family`, e.g.
    the cross-entropy re-optimised DNC and SRG: there is no closed form); ``closed_form`` says which."""
    if config.problem.family.is_default:
        from deepcollapse.theory.compare import compare

        theory = compare(config.classes, config.layers, config.n, config.lam_h, config.lam_w)
        return {**to_jsonable(theory), "closed_form": True}  # MSE + ReLU: the closed forms apply
    from deepcollapse.theory.family_compare import compare_family

    fc = compare_family(problem=config.problem)
    return {**to_jsonable(fc), "closed_form": False}

"""Full-batch gradient descent on the batched L-DUFM (2024 paper eq. (1)): train, checkpoint, resume, observe.

``train_dufm(config, out_dir)`` advances ``config.runs`` independent runs (seeds ``seed + r``) for
``config.steps`` steps of plain GD ``θ ← θ − lr_t ∇ eq.(1)`` -- no momentum, no clipping, nothing else --
and writes the run folder::

    config.yaml      the DUFMConfig (DUFMConfig.from_yaml reads it back)
    metrics.jsonl    one JSON object per (logged step, run): step, run, seed, loss, fit, reg, diverged, layers
                     [{layer, kind: pre|post, dnc1, dnc2_cond, rank, singular_values}], every log_every steps
                     (step 0 and the last step always); non-finite numbers are written as null
    checkpoint.pt    {step, params [H1, W_1..W_L] (R, ...), diverged {run: step}, config, checksum}; atomic
                     (temp file + os.replace) every checkpoint_every steps, at the end, and on SIGINT /
                     SIGTERM; the one it replaces stays as checkpoint.prev.pt, where resume starts (with a
                     one-line warning) when checkpoint.pt does not match its checksum
    params.pt        {"H1": (R, d1, N), "weights": [(R, d_{l+1}, d_l) ...], "config", "step", "diverged"}
    summary.json     analyze_dufm(out_dir): theory losses, per-run classification, polish (atomic)

GD is deterministic and the initialisation is a function of the seeds, so a checkpoint needs no RNG state:
``resume_dufm`` continues from the last checkpoint and ends bit-identical (CPU) to an uninterrupted run.

Model family: ``config.loss``/``activation``/``eps`` (:mod:`deepcollapse.family`) choose the fit term and σ
of eq. (1) in every engine and in the float64 observation below; defaults are MSE + ReLU.

The loop itself is :func:`deepcollapse.dufm.fit.fit_dufm`'s (engines, chunks, divergence: see there); this
module adds the run folder as callbacks of that loop (:class:`MetricsLog`, :class:`Checkpoints`, and the
:class:`~deepcollapse.dufm.fit.ProgressBar`), so a run folder and an in-memory fit of one config hold the same
numbers bit for bit.  A SIGINT / SIGTERM ends the loop after its current chunk with a checkpoint; the
message names the resume command.
"""

from __future__ import annotations

import logging
import math
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from deepcollapse._core.checks import ConfigError
from deepcollapse._core.docs import fill_doc
from deepcollapse._core.interrupt import StopFlag, stop_on_signals
from deepcollapse._core.io import (
    append_jsonl,
    atomic_torch_save,
    finite_or_none,
    load_checkpoint_or_previous,
    prepare_run_folder,
    truncate_jsonl,
)
from deepcollapse.dufm.config import DUFMConfig
from deepcollapse.dufm.fit import FitCallback, FitState, ProgressBar, fit_loop, initial_params
from deepcollapse.dufm.kernel import one_blas_thread
from deepcollapse.dufm.numpy_engine import NumpyEngine, loss_parts
from deepcollapse.dufm.results import RunObservation
from deepcollapse.dufm.summary import DUFMSummary, analyze_dufm
from deepcollapse.dufm.torch_engine import TorchEngine
from deepcollapse.metrics.functional import (
    class_means,
    nc1_trace_ratio,
    nc2_cond,
    numerical_rank,
    singular_values,
)
from deepcollapse.theory.objective import forward, objective_from_output

__all__ = [
    "Checkpoints",
    "DUFMConfig",
    "MetricsLog",
    "NumpyEngine",
    "RUN_FILES",
    "TorchEngine",
    "loss_parts",
    "observe_run",
    "resume_dufm",
    "train_dufm",
]

log = logging.getLogger(__name__)

RUN_FILES = ("config.yaml", "metrics.jsonl", "checkpoint.pt", "params.pt", "summary.json")
CHECKPOINT_FORMAT = "deepcollapse.dufm.checkpoint/1"


# ------------------------------------------------------------------------------------------------------------
# observation
# ------------------------------------------------------------------------------------------------------------
def _layer_metrics(X: np.ndarray, layer: int, kind: str, y: np.ndarray, config: DUFMConfig) -> dict[str, Any]:
    feats = X.T  # (N, d): rows = samples (metrics convention)
    means = class_means(feats, y, config.classes)  # (K, d); M = means.T (d, K)
    return {
        "layer": layer,
        "kind": kind,
        "dnc1": finite_or_none(nc1_trace_ratio(feats, y, config.classes)),
        "dnc2_cond": finite_or_none(nc2_cond(means)),
        "rank": int(numerical_rank(means.T, rtol=config.rank_rtol)),
        "singular_values": finite_or_none([float(s) for s in singular_values(means.T)]),
    }


def observe_run(H1: np.ndarray, weights: Sequence[np.ndarray], config: DUFMConfig) -> RunObservation:
    """Loss parts and per-layer collapse metrics of one run (float64, features ``H_l^T``, ``(N, d_l)``).

    Layers: ``1 post`` (``H_1`` itself), then ``l pre`` (``H~_l``) and ``l post`` (``H_l = σ(H~_l)``) for
    ``l = 2..L``.  ``dnc1 = tr Σ_W / tr Σ_B``; ``dnc2_cond = σ_1/σ_K`` of the class-mean matrix ``M_l (d_l,
    K)``; ``rank`` counts singular values of ``M_l`` above ``config.rank_rtol · σ_1``.

    Parameters
    ----------
    H1 : ndarray, (d_1, N)
        The run's features, columns = samples, ``n`` per class in class order.
    weights : sequence of ndarray
        ``[W_1 (d_2, d_1), ..., W_L (K, d_L)]``.
    config : DUFMConfig
        The run's config (problem, model family, ``rank_rtol``).

    Returns
    -------
    RunObservation
        ``loss, fit, reg`` (``None`` where not finite) and ``layers`` (empty where the loss or the features
        are not finite); its ``to_dict()`` is the dict of earlier releases.

    Examples
    --------
    Collapsed features through identity layers: no fit error, zero within-class variability, orthogonal
    class means:

    >>> import numpy as np
    >>> from deepcollapse.dufm import DUFMConfig
    >>> config = DUFMConfig(classes=2, n=2, layers=2, width=2, lam_h=0.01, lam_w=0.01)
    >>> H1 = np.array([[1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0]])
    >>> obs = observe_run(H1, [np.eye(2), np.eye(2)], config)
    >>> obs.loss, obs.fit, obs.reg
    (0.04, 0.0, 0.04)
    >>> [(m["layer"], m["kind"], m["dnc1"], m["dnc2_cond"], m["rank"]) for m in obs.layers]
    [(1, 'post', 0.0, 1.0, 2), (2, 'pre', 0.0, 1.0, 2), (2, 'post', 0.0, 1.0, 2)]
    """
    problem = config.problem
    pre, post, out = forward(H1, weights, problem.family)  # one forward pass for the loss and the layers
    parts = objective_from_output(
        out, problem.targets(), H1, weights, problem.lam_h, problem.lam_w, problem.family.loss
    )
    loss = parts.total
    values = (finite_or_none(loss), finite_or_none(parts.fit), finite_or_none(parts.reg))
    if not (math.isfinite(loss) and all(np.isfinite(p).all() for p in post)):
        return RunObservation(*values, layers=[])
    y = np.repeat(np.arange(config.classes), config.n)
    layers = [_layer_metrics(post[0], 1, "post", y, config)]
    for l in range(2, config.layers + 1):
        layers.append(_layer_metrics(pre[l - 2], l, "pre", y, config))
        layers.append(_layer_metrics(post[l - 1], l, "post", y, config))
    return RunObservation(*values, layers=layers)


def _params_to_torch(params: Sequence[np.ndarray]) -> list[torch.Tensor]:
    return [torch.from_numpy(np.array(p, copy=True)) for p in params]


def _write_checkpoint(
    out: Path, step: int, params: Sequence[np.ndarray], diverged: dict[int, int], config: DUFMConfig
) -> None:
    atomic_torch_save(
        {
            "format": CHECKPOINT_FORMAT,
            "step": int(step),
            "params": _params_to_torch(params),
            "diverged": {int(k): int(v) for k, v in diverged.items()},
            "config": config.to_dict(),
        },
        out / "checkpoint.pt",
        keep_previous=True,  # checkpoint.prev.pt: where resume starts when this one is damaged
    )


class MetricsLog(FitCallback):
    """Appends one record per run to ``out/metrics.jsonl`` at every logged step (module docstring): the loss
    parts of the fit's history and the per-layer collapse metrics of :func:`observe_run`."""

    def __init__(self, out: str | Path) -> None:
        self.out = Path(out)

    @fill_doc
    def on_start(self, state: FitState) -> None:
        """The records of the first step of a fresh run (a resumed run's are already in the file).

        Parameters
        ----------
        %(dufm_state)s

        Returns
        -------
        None
            The records (one per run) are appended to ``metrics.jsonl``.

        Examples
        --------
        >>> import os, tempfile
        >>> import deepcollapse as dc
        >>> out = tempfile.mkdtemp()
        >>> config = dc.DUFMConfig(classes=2, layers=2, n=2, width=4, runs=2, steps=20, log_every=10)
        >>> _ = dc.fit_dufm(config, [MetricsLog(out)])
        >>> from deepcollapse._core.io import read_jsonl
        >>> [r["step"] for r in read_jsonl(os.path.join(out, "metrics.jsonl"))][:2]
        [0, 0]
        """
        if state.logged:
            self._append(state)

    @fill_doc
    def on_chunk(self, state: FitState) -> None:
        """The records of a logged step.

        Parameters
        ----------
        %(dufm_state)s

        Returns
        -------
        None
            At a logged step, the records (one per run) are appended to ``metrics.jsonl``.

        Examples
        --------
        >>> import os, tempfile
        >>> import deepcollapse as dc
        >>> out = tempfile.mkdtemp()
        >>> config = dc.DUFMConfig(classes=2, layers=2, n=2, width=4, runs=2, steps=20, log_every=10)
        >>> _ = dc.fit_dufm(config, [MetricsLog(out)])
        >>> from deepcollapse._core.io import read_jsonl
        >>> sorted({r["step"] for r in read_jsonl(os.path.join(out, "metrics.jsonl"))})
        [0, 10, 20]
        """
        if state.logged:
            self._append(state)

    def _append(self, state: FitState) -> None:
        with one_blas_thread():
            append_jsonl(self.out / "metrics.jsonl", _records(state))


def _records(state: FitState) -> list[dict[str, Any]]:
    config, P, diverged = state.config, state.params(), state.diverged
    seeds = config.run_seeds
    records = []
    for r in range(config.runs):
        rec: dict[str, Any] = {"step": int(state.step), "run": r, "seed": seeds[r]}
        if r in diverged:
            rec.update(
                {
                    "loss": None,
                    "fit": None,
                    "reg": None,
                    "diverged": True,
                    "diverged_step": diverged[r],
                    "layers": [],
                }
            )
        else:
            obs = observe_run(P[0][r], [W[r] for W in P[1:]], config)
            rec.update(
                {
                    "loss": obs.loss,
                    "fit": obs.fit,
                    "reg": obs.reg,
                    "diverged": False,
                    "layers": obs.layers,
                }
            )
        records.append(rec)
    return records


class Checkpoints(FitCallback):
    """Writes ``out/checkpoint.pt`` (module docstring) every ``checkpoint_every`` steps, at the step the loop
    stops at, when asked to stop (a signal), and at the end if none was written (``steps == 0``)."""

    def __init__(self, out: str | Path) -> None:
        self.out = Path(out)

    @fill_doc
    def on_chunk(self, state: FitState) -> None:
        """A checkpoint at a multiple of ``checkpoint_every``, at ``stop_at`` and when stopping.

        Parameters
        ----------
        %(dufm_state)s

        Returns
        -------
        None
            ``checkpoint.pt`` may be (re)written.

        Examples
        --------
        >>> import os, tempfile
        >>> import deepcollapse as dc
        >>> out = tempfile.mkdtemp()
        >>> config = dc.DUFMConfig(classes=2, layers=2, n=2, width=4, runs=2, steps=20, log_every=10)
        >>> _ = dc.fit_dufm(config, [Checkpoints(out)])
        >>> os.listdir(out)
        ['checkpoint.pt']
        """
        c = state.config
        if state.step % c.checkpoint_every == 0 or state.step == state.stop_at or state.stopping:
            _write_checkpoint(self.out, state.step, state.params(), state.diverged, c)

    @fill_doc
    def on_end(self, state: FitState) -> None:
        """A checkpoint if none was written (``steps == 0`` or ``max_steps == 0``).

        Parameters
        ----------
        %(dufm_state)s

        Returns
        -------
        None
            ``checkpoint.pt`` is written if missing.

        Examples
        --------
        >>> import os, tempfile
        >>> import deepcollapse as dc
        >>> out = tempfile.mkdtemp()
        >>> _ = dc.fit_dufm(dc.DUFMConfig(classes=2, layers=2, n=2, width=4, steps=0), [Checkpoints(out)])
        >>> os.listdir(out)
        ['checkpoint.pt']
        """
        if not (self.out / "checkpoint.pt").is_file():  # e.g. steps == 0 or max_steps == 0
            _write_checkpoint(self.out, state.step, state.params(), state.diverged, state.config)


def _run_loop(
    out: Path,
    config: DUFMConfig,
    params: list[np.ndarray],
    step: int,
    diverged: dict[int, int],
    *,
    progress: bool,
    fresh: bool,
    max_steps: int | None,
) -> DUFMSummary:
    """:func:`~deepcollapse.dufm.fit.fit_dufm`'s loop with the run folder's callbacks; then ``params.pt`` and
    ``summary.json`` (a finished run) or the resume command (stopped by a signal)."""
    flag = StopFlag()  # SIGINT / SIGTERM: checkpoint after the current chunk (a second Ctrl-C gives up)
    stop_at = config.steps if max_steps is None else min(config.steps, step + int(max_steps))
    # (a tqdm bar, or reports to the sweep's driver when run in a pool worker)
    callbacks: list[FitCallback] = [MetricsLog(out), Checkpoints(out)] + ([ProgressBar()] if progress else [])
    with stop_on_signals(flag):
        fit = fit_loop(config, params, step, diverged, callbacks, stop_at=stop_at, log_start=fresh, stop=flag)
    if flag.signum is not None:
        log.warning("signal %d: checkpoint written at step %d", flag.signum, fit.step)
        raise flag.interrupted(
            f"stopped by {flag.name} at step {fit.step}; checkpoint written to {out}",
            resume=f"deepcollapse dufm resume {shlex.quote(str(out))}",
        )
    if not fit.finished:  # stopped early on purpose (max_steps): a resumable checkpoint is on disk
        return DUFMSummary.from_dict({"step": fit.step, "finished": False})
    atomic_torch_save(
        {
            "H1": torch.from_numpy(np.array(fit.H1)),
            "weights": [torch.from_numpy(np.array(W)) for W in fit.weights],
            "config": config.to_dict(),
            "step": fit.step,
            "diverged": {int(k): int(v) for k, v in fit.diverged.items()},
        },
        out / "params.pt",
    )
    with one_blas_thread():
        return analyze_dufm(out, write=True)


@fill_doc
def train_dufm(
    config: DUFMConfig,
    out_dir: str | Path,
    *,
    force: bool = False,
    progress: bool = True,
    max_steps: int | None = None,
) -> DUFMSummary:
    """Train ``config.runs`` runs from scratch into ``out_dir``; return the :class:`DUFMSummary` (of
    :func:`analyze_dufm`, also in ``summary.json``).

    SIGINT/SIGTERM: a checkpoint is written after the current chunk (≤ 1000 steps) and ``KeyboardInterrupt``
    is raised.

    Parameters
    ----------
    %(dufm_config)s
    out_dir : str or Path
        The run folder (created; ``config.yaml``, ``metrics.jsonl``, ``checkpoint.pt``, ``params.pt``,
        ``summary.json``).
    force : bool, default False
        Overwrite the run files of an existing non-empty folder (otherwise ``ConfigError``).
    %(dufm_progress)s
    %(dufm_max_steps)s

    Returns
    -------
    DUFMSummary
        The classified runs (:func:`analyze_dufm`), or only ``step`` and ``finished = False`` when stopped
        by ``max_steps``.

    Examples
    --------
    >>> import os, tempfile
    >>> import deepcollapse as dc
    >>> out = os.path.join(tempfile.mkdtemp(), "run")
    >>> config = dc.DUFMConfig(classes=2, layers=2, n=2, width=4, runs=2, steps=20, log_every=10)
    >>> summary = train_dufm(config, out, progress=False)
    >>> summary.step, summary.finished, len(summary.runs)
    (20, True, 2)
    >>> sorted(os.listdir(out))
    ['checkpoint.pt', 'config.yaml', 'metrics.jsonl', 'params.pt', 'summary.json']
    """
    if not isinstance(config, DUFMConfig):
        raise ConfigError(f"config == {type(config).__name__}, must be a DUFMConfig.")
    config.problem  # noqa: B018 - validates the problem of eq. (1) (e.g. K >= 2) before anything is written
    if max_steps is not None and int(max_steps) < 0:
        raise ConfigError(f"max_steps == {max_steps}, must be >= 0.")
    _check_finished_here(Path(out_dir), config, force)
    hint = f"resume_dufm({str(out_dir)!r}) / `deepcollapse dufm resume {shlex.quote(str(out_dir))}`"
    out = prepare_run_folder(out_dir, RUN_FILES, force, hint)
    config.to_yaml(out / "config.yaml")
    return _start(out, config, progress=progress, max_steps=max_steps)


def _check_finished_here(out: Path, config: DUFMConfig, force: bool) -> None:
    """A folder that already holds a finished run of this very config (a notebook cell run twice): say how
    to read it, or to train it again."""
    if force or not (out / "summary.json").is_file() or not (out / "config.yaml").is_file():
        return
    try:
        same = DUFMConfig.from_yaml(out / "config.yaml").to_dict() == config.to_dict()
    except ConfigError:
        return
    if same:
        raise ConfigError(
            f"out == {str(out)!r}, must be a new or empty folder: it holds a finished run of this same "
            "config "
            f"(summary.json); read it with analyze_dufm({str(out)!r}) (`deepcollapse dufm analyze {out}`), "
            "or pass force=True to train it again."
        )


def _start(out: Path, config: DUFMConfig, *, progress: bool, max_steps: int | None) -> DUFMSummary:
    """Run ``config`` from its initialisation (step 0) in ``out``, which holds its ``config.yaml``."""
    (out / "metrics.jsonl").write_text("")
    params = initial_params(config)
    return _run_loop(out, config, params, 0, {}, progress=progress, fresh=True, max_steps=max_steps)


# fields that define the trained model and its trajectory; resume refuses a config.yaml that changed them
_MODEL_FIELDS = ("loss", "activation", "eps", "classes", "n", "layers", "width", "lam_h", "lam_w", "dtype")


def _check_same_model(config: DUFMConfig, saved: dict[str, Any], out: Path) -> None:
    """``ConfigError`` if ``config.yaml`` describes another model than the checkpoint was trained on."""
    if not saved:
        return
    defaults = DUFMConfig().to_dict()  # checkpoints written before a field existed used its default
    now = config.to_dict()
    for f in _MODEL_FIELDS:
        was = saved.get(f, defaults[f] if f in ("loss", "activation", "eps") else now[f])
        if isinstance(was, (list, tuple)):
            was = list(was)
        if was != now[f]:
            raise ConfigError(
                f"{f} == {now[f]!r} in {out / 'config.yaml'}, must be {was!r} as in its checkpoint.pt "
                f"(the folder holds a {saved.get('loss', 'mse')}+{saved.get('activation', 'relu')} model); "
                "train the other model into a new folder with `deepcollapse dufm train --out NEW ...`."
            )


@fill_doc
def resume_dufm(
    out_dir: str | Path,
    *,
    steps: int | None = None,
    workers: int | None = None,
    progress: bool = True,
    max_steps: int | None = None,
) -> DUFMSummary:
    """Continue a run folder from its ``checkpoint.pt`` (bit-identical to an uninterrupted run on CPU); a
    folder stopped before its first checkpoint (``config.yaml`` only) starts from step 0 with that config
    (logged).

    A finished folder is re-analysed and its :class:`DUFMSummary` returned.

    Parameters
    ----------
    out_dir : str or Path
        A DUFM run folder (``config.yaml``, and ``checkpoint.pt`` once one was written).
    steps : int, optional
        A new total number of steps (to extend a finished run); written to ``config.yaml``.
    workers : int, optional
        Change the process count (the trajectory does not depend on it).
    %(dufm_progress)s
    %(dufm_max_steps)s

    Returns
    -------
    DUFMSummary
        As :func:`train_dufm`'s.

    Examples
    --------
    >>> import os, tempfile
    >>> import deepcollapse as dc
    >>> out = os.path.join(tempfile.mkdtemp(), "run")
    >>> config = dc.DUFMConfig(classes=2, layers=2, n=2, width=4, runs=2, steps=20, log_every=10)
    >>> train_dufm(config, out, progress=False, max_steps=10).finished
    False
    >>> summary = resume_dufm(out, progress=False)
    >>> summary.step, summary.finished
    (20, True)
    """
    out = Path(out_dir)
    if not (out / "config.yaml").is_file():
        raise ConfigError(f"out_dir == {str(out)!r}, must be a DUFM run folder (no config.yaml).")
    config = DUFMConfig.from_yaml(out / "config.yaml")
    changed = False
    if steps is not None and int(steps) != config.steps:
        d = config.to_dict()
        d["steps"] = steps
        config, changed = DUFMConfig.from_dict(d), True
    if workers is not None and int(workers) != config.workers:
        d = config.to_dict()
        d["workers"] = workers
        config, changed = DUFMConfig.from_dict(d), True
    if not (out / "checkpoint.pt").is_file():  # stopped before its first checkpoint: config.yaml is enough
        if changed:
            config.to_yaml(out / "config.yaml")
        log.warning(
            "%s holds no checkpoint.pt (stopped before its first one): starting from step 0 with its "
            "config.yaml",
            out,
        )
        return _start(out, config, progress=progress, max_steps=max_steps)
    hint = f"delete it to start again from config.yaml (deepcollapse dufm resume {out}), or use another run"
    ck = load_checkpoint_or_previous(
        out / "checkpoint.pt",
        keys=("format", "step", "params", "diverged"),
        hint=hint,
        describe=lambda c: f"step {int(c['step'])}",
    )
    if ck.get("format") != CHECKPOINT_FORMAT:
        raise ConfigError(
            f"{out / 'checkpoint.pt'}: format {ck.get('format')!r}, must be {CHECKPOINT_FORMAT!r}; {hint}."
        )
    _check_same_model(config, ck.get("config") or {}, out)
    step = int(ck["step"])
    if step > config.steps:
        raise ConfigError(f"steps == {config.steps}, must be >= the checkpoint step {step}.")
    truncate_jsonl(out / "metrics.jsonl", "step", step)  # refuses a damaged file before anything is written
    if changed:
        config.to_yaml(out / "config.yaml")
    params = [t.numpy().copy() for t in ck["params"]]
    diverged = {int(k): int(v) for k, v in ck["diverged"].items()}
    if step == config.steps and step > 0 and (out / "params.pt").is_file():
        with one_blas_thread():
            return analyze_dufm(out, write=True)
    log.info("resuming %s from step %d of %d", out, step, config.steps)
    return _run_loop(out, config, params, step, diverged, progress=progress, fresh=False, max_steps=max_steps)

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

Engines.  ``backend='numpy'`` (default on CPU): :mod:`deepcollapse.dufm.kernel`, hand-written
gradients on OpenBLAS (the compiled step loop of :mod:`dufm_compiled` when numba is installed, else numpy
with ``out=`` buffers), one BLAS thread, ``sub_batch`` runs at a time; ``workers > 1``
splits the runs over that many single-threaded processes (one per core is the fastest layout on CPU).
``backend='torch'``: :mod:`deepcollapse.dufm.torch_engine`, batched ``bmm``/``baddbmm`` analytic gradients
or autograd (``grad='autograd'``), on ``cpu`` or ``cuda``, stepped by ``step_loop`` (graph-safe chunks with
one host synchronisation each, on cuda replayed as CUDA graphs); its chunks last about 1.5 s.

Divergence: a run whose output sum (numpy) or gradient (torch) is not finite at step ``t`` is marked
diverged at ``t`` and frozen there; the other runs go on.
"""

from __future__ import annotations

import logging
import math
import shlex
import signal
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import torch

from deepcollapse._core.checks import ConfigError
from deepcollapse._core.interrupt import StopFlag, stop_on_signals
from deepcollapse._core.io import (
    append_jsonl,
    atomic_torch_save,
    finite_or_none,
    load_checkpoint_or_previous,
    prepare_run_folder,
    truncate_jsonl,
)
from deepcollapse._core.progress import progress_bar
from deepcollapse.dufm.config import DUFMConfig
from deepcollapse.dufm.kernel import advance_limited, one_blas_thread, resolve_kernel
from deepcollapse.dufm.model import init_params
from deepcollapse.dufm.summary import DUFMSummary, analyze_dufm
from deepcollapse.dufm.torch_engine import TorchEngine
from deepcollapse.metrics.functional import (
    class_means,
    nc1_trace_ratio,
    nc2_cond,
    numerical_rank,
    singular_values,
)
from deepcollapse.theory.objective import evaluate, forward, objective_from_output

__all__ = [
    "DUFMConfig",
    "NumpyEngine",
    "RUN_FILES",
    "TorchEngine",
    "observe_run",
    "resume_dufm",
    "train_dufm",
]

log = logging.getLogger(__name__)

RUN_FILES = ("config.yaml", "metrics.jsonl", "checkpoint.pt", "params.pt", "summary.json")
CHECKPOINT_FORMAT = "deepcollapse.dufm.checkpoint/1"
_CHUNK = 1000  # at most this many steps between progress-bar updates / interrupt checks ...
_CHUNK_RUN_STEPS = 16_000  # ... and about this many run-steps per process (~1.5 s): Ctrl-C is honoured fast
_CHUNK_SECONDS = 1.5  # the torch engine's chunks: about this long (measured as it goes), 10 .. _CHUNK steps


# ------------------------------------------------------------------------------------------------------------
# small helpers
# ------------------------------------------------------------------------------------------------------------
# ------------------------------------------------------------------------------------------------------------
# observation
# ------------------------------------------------------------------------------------------------------------
def loss_parts(
    H1: np.ndarray, weights: Sequence[np.ndarray], config: DUFMConfig
) -> tuple[float, float, float]:
    """``(loss, fit, reg)`` of the config's objective (eq. (1), or its family) for one run, in float64:
    :func:`deepcollapse.theory.objective.evaluate` of ``config.problem``."""
    parts = evaluate(H1, weights, config.problem)
    return parts.total, parts.fit, parts.reg


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


def observe_run(H1: np.ndarray, weights: Sequence[np.ndarray], config: DUFMConfig) -> dict[str, Any]:
    """Loss parts and per-layer collapse metrics of one run (float64, features ``H_l^T``, ``(N, d_l)``).

    Layers: ``1 post`` (``H_1`` itself), then ``l pre`` (``H~_l``) and ``l post`` (``H_l = σ(H~_l)``) for
    ``l = 2..L``.  ``dnc1 = tr Σ_W / tr Σ_B``; ``dnc2_cond = σ_1/σ_K`` of the class-mean matrix ``M_l (d_l,
    K)``; ``rank`` counts singular values of ``M_l`` above ``config.rank_rtol · σ_1``.
    """
    problem = config.problem
    pre, post, out = forward(H1, weights, problem.family)  # one forward pass for the loss and the layers
    parts = objective_from_output(
        out, problem.targets(), H1, weights, problem.lam_h, problem.lam_w, problem.family.loss
    )
    loss = parts.total
    rec: dict[str, Any] = {
        "loss": finite_or_none(loss),
        "fit": finite_or_none(parts.fit),
        "reg": finite_or_none(parts.reg),
    }
    if not (math.isfinite(loss) and all(np.isfinite(p).all() for p in post)):
        rec["layers"] = []
        return rec
    y = np.repeat(np.arange(config.classes), config.n)
    layers = [_layer_metrics(post[0], 1, "post", y, config)]
    for l in range(2, config.layers + 1):
        layers.append(_layer_metrics(pre[l - 2], l, "pre", y, config))
        layers.append(_layer_metrics(post[l - 1], l, "post", y, config))
    rec["layers"] = layers
    return rec


# ------------------------------------------------------------------------------------------------------------
# engines
# ------------------------------------------------------------------------------------------------------------
def _ignore_sigint() -> None:  # worker initialiser: Ctrl-C is handled by the parent only
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class NumpyEngine:
    """The CPU engine: parameters as numpy arrays, stepped by :func:`deepcollapse.dufm.kernel.advance`
    in-process or in worker processes (the trainer picks it for ``resolved_backend == "numpy"``)."""

    def __init__(self, params: list[np.ndarray], config: DUFMConfig):
        self.params = params
        self.config = config
        self._logged = False
        self.alive = np.ones(params[0].shape[0], dtype=bool)
        self._pool: ProcessPoolExecutor | None = None
        if config.workers > 1 and config.runs > 1:
            import multiprocessing as mp

            # fork (Linux): workers only run the numpy kernel; scripts need no ``if __name__ == "__main__"``
            method = "fork" if "fork" in mp.get_all_start_methods() else "spawn"
            self._pool = ProcessPoolExecutor(
                max_workers=min(config.workers, config.runs),
                mp_context=mp.get_context(method),
                initializer=_ignore_sigint,
            )

    def advance(self, start: int, lrs: np.ndarray) -> dict[int, int]:
        c = self.config
        if not self._logged:  # (here, not in __init__: importing numba must not delay the signal handlers)
            # compiled (numba) or numpy: the same GD to float rounding; float32 trajectories of cross-entropy
            # and σ_ε may drift apart between the two over many steps, so the log names the one that ran
            log.info("DUFM kernel: %s, model %s", resolve_kernel(), c.family.name)
            self._logged = True
        idx = np.flatnonzero(self.alive)
        if idx.size == 0:
            return {}
        args = (c.classes, c.n, c.lam_h, c.lam_w, c.sub_batch)
        fam = c.family
        if self._pool is None:
            groups = [idx]
            results = [advance_limited([p[idx] for p in self.params], lrs, start, *args, family=fam)]
        else:
            groups = [g for g in np.array_split(idx, min(c.workers, idx.size)) if g.size]
            futs = [
                self._pool.submit(advance_limited, [p[g] for p in self.params], lrs, start, *args, family=fam)
                for g in groups
            ]
            results = [f.result() for f in futs]
        diverged: dict[int, int] = {}
        for g, (new, div) in zip(groups, results):
            for p, q in zip(self.params, new):
                p[g] = q
            for j, s in div.items():
                diverged[int(g[j])] = s
                self.alive[g[j]] = False
        return diverged

    def freeze(self, runs: Sequence[int]) -> None:
        """Stop stepping ``runs`` (diverged before this engine was made, e.g. read from a checkpoint)."""
        self.alive[list(runs)] = False

    def best_loss(self) -> float:
        with one_blas_thread():
            return _best_loss(self.params, self.alive, self.config)

    def numpy_params(self) -> list[np.ndarray]:
        return self.params

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None


# ------------------------------------------------------------------------------------------------------------
# the loop
# ------------------------------------------------------------------------------------------------------------
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


def _append_records(
    out: Path, step: int, params: Sequence[np.ndarray], diverged: dict[int, int], config: DUFMConfig
) -> float:
    """Observe every run at ``step``; append to metrics.jsonl; return the best (lowest) finite loss."""
    with one_blas_thread():
        return _observe_all(out, step, params, diverged, config)


def _observe_all(
    out: Path, step: int, params: Sequence[np.ndarray], diverged: dict[int, int], config: DUFMConfig
) -> float:
    seeds = config.run_seeds
    best = math.inf
    records = []
    for r in range(config.runs):
        rec: dict[str, Any] = {"step": int(step), "run": r, "seed": seeds[r]}
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
            obs = observe_run(params[0][r], [W[r] for W in params[1:]], config)
            rec.update(
                {
                    "loss": obs["loss"],
                    "fit": obs["fit"],
                    "reg": obs["reg"],
                    "diverged": False,
                    "layers": obs["layers"],
                }
            )
            if obs["loss"] is not None:
                best = min(best, obs["loss"])
        records.append(rec)
    append_jsonl(out / "metrics.jsonl", records)
    return best


def _best_loss(params: Sequence[np.ndarray], alive: np.ndarray, config: DUFMConfig) -> float:
    """The lowest finite float64 loss among the ``alive`` runs (NaN if none): the progress bar's best=."""
    vals = [loss_parts(params[0][r], [W[r] for W in params[1:]], config)[0] for r in np.flatnonzero(alive)]
    vals = [v for v in vals if math.isfinite(v)]
    return min(vals) if vals else math.nan


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
    engine: NumpyEngine | TorchEngine
    engine = (
        NumpyEngine(params, config) if config.resolved_backend == "numpy" else TorchEngine(params, config)
    )
    engine.freeze(list(diverged))
    flag = StopFlag()  # SIGINT / SIGTERM: checkpoint after the current chunk (a second Ctrl-C gives up)
    stop_at = config.steps if max_steps is None else min(config.steps, step + int(max_steps))
    bar = progress_bar(  # a tqdm bar, or reports to the sweep's driver when run in a pool worker
        total=config.steps, initial=step, disable=not progress, desc="dufm", unit="step", dynamic_ncols=True
    )
    t0, step0 = time.perf_counter(), step
    if isinstance(engine, NumpyEngine):
        chunk = max(10, min(_CHUNK, _CHUNK_RUN_STEPS // math.ceil(config.runs / config.workers)))
    else:
        chunk = 10  # then about _CHUNK_SECONDS long, from the rate measured on the previous chunk
    best_seen = math.inf  # the progress bar's best=: the lowest loss seen so far (a running minimum)
    try:
        with stop_on_signals(flag):
            if fresh:
                best_seen = _append_records(out, step, engine.numpy_params(), diverged, config)
                bar.set_postfix(best=f"{best_seen:.6g}")
            while step < stop_at:
                nxt = min(
                    stop_at,
                    step + chunk,
                    (step // config.log_every + 1) * config.log_every,
                    (step // config.checkpoint_every + 1) * config.checkpoint_every,
                )
                lrs = np.array([config.learning_rate(t) for t in range(step, nxt)])
                t_chunk = time.perf_counter()
                for r, s in engine.advance(step, lrs).items():
                    diverged[r] = s
                    log.warning("run %d (seed %d) diverged at step %d", r, config.run_seeds[r], s)
                if isinstance(engine, TorchEngine):  # (advance synchronised with the device)
                    rate = (nxt - step) / max(time.perf_counter() - t_chunk, 1e-9)
                    chunk = int(min(_CHUNK, max(10, rate * _CHUNK_SECONDS)))
                bar.update(nxt - step)
                step = nxt
                record = step % config.log_every == 0 or step == config.steps
                save = step % config.checkpoint_every == 0 or step == stop_at or flag.signum is not None
                P = engine.numpy_params() if record or save else []  # (a device-to-host copy)
                best = _append_records(out, step, P, diverged, config) if record else engine.best_loss()
                best_seen = best if not math.isfinite(best_seen) else min(best_seen, best)
                bar.set_postfix(best=f"{best_seen:.6g}", diverged=len(diverged))
                if save:
                    _write_checkpoint(out, step, P, diverged, config)
                if flag.signum is not None:
                    log.warning("signal %d: checkpoint written at step %d", flag.signum, step)
                    raise flag.interrupted(
                        f"stopped by {flag.name} at step {step}; checkpoint written to {out}",
                        resume=f"deepcollapse dufm resume {shlex.quote(str(out))}",
                    )
    finally:
        bar.close()
        engine.close()
    elapsed = time.perf_counter() - t0
    log.info(
        "%d steps x %d runs in %.1f s (%.0f runs*steps/s)",
        step - step0,
        config.runs,
        elapsed,
        (step - step0) * config.runs / max(elapsed, 1e-9),
    )
    P = engine.numpy_params()
    if not (out / "checkpoint.pt").is_file():  # e.g. steps == 0 or max_steps == 0
        _write_checkpoint(out, step, P, diverged, config)
    if step < config.steps:  # stopped early on purpose (max_steps): a resumable checkpoint is on disk
        return DUFMSummary.from_dict({"step": step, "finished": False})
    atomic_torch_save(
        {
            "H1": torch.from_numpy(np.array(P[0])),
            "weights": [torch.from_numpy(np.array(W)) for W in P[1:]],
            "config": config.to_dict(),
            "step": step,
            "diverged": {int(k): int(v) for k, v in diverged.items()},
        },
        out / "params.pt",
    )
    with one_blas_thread():
        return analyze_dufm(out, write=True)


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

    ``force``: overwrite the run files of an existing non-empty folder (otherwise ``ConfigError``).
    ``max_steps``: stop after this many steps with a checkpoint, as if interrupted (``resume_dufm``
    continues); the return value then holds only ``step`` and ``finished = False``.  SIGINT/SIGTERM: a
    checkpoint is written after the current chunk (≤ 1000 steps) and ``KeyboardInterrupt`` is raised.
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
    p = init_params(config)
    params = [t.numpy().copy() for t in p.tensors()]
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

    ``steps``: a new total number of steps (to extend a finished run); ``workers``: change the process count
    (the trajectory does not depend on it).  A finished folder is re-analysed and its :class:`DUFMSummary`
    returned.
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

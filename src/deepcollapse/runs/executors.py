"""Executors: where the independent tasks of a sweep run.

A *task* is one call of a trainer (``train_dufm`` for the L-DUFM, with all the seeds of one grid point batched
into one call; ``train_net`` for a real network, one seed; ``search``: one point of the global search plus its
Hessian verdict) writing one folder.  A task is *done* when its folder holds ``summary.json`` (``point.json``
for a search point); done tasks are skipped, interrupted ones (a ``checkpoint.pt`` but no summary)
are resumed, so a sweep can be killed and re-launched at any time without redoing or duplicating work.

Two executors run the same :func:`run_task` on the same task list:

- ``local`` (default): in-process when there is one task or ``workers == 1``, otherwise a pool of ``workers``
  spawned processes (one task per process at a time).
- ``ray``: one Ray task per trainer call (``num_cpus=1``), on a cluster given by address (``ray_address``) or
  on a local Ray instance started for the sweep and shut down afterwards.  Run folders must be on a file
  system every Ray node sees.  Ray is an optional extra: ``pip install 'deepcollapse[ray]'``.

Every DUFM task runs with one torch thread (set for the duration of the task and restored afterwards; the
numpy kernel uses one BLAS thread), so a task's floating-point result does not depend on where it ran: both
executors produce bit-identical run folders and therefore identical result tables for the same sweep (the
trainer is deterministic per seed).  Network tasks use the ``threads`` / ``device`` of their ``NetConfig``.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import logging
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deepcollapse._core.checks import ConfigError, DeepCollapseError, Interrupted, check_choice, check_int

__all__ = [
    "EXECUTORS",
    "RAY_AUTH_HINT",
    "RAY_INSTALL_HINT",
    "Task",
    "TaskError",
    "connect_ray",
    "run_task",
    "run_tasks",
]

log = logging.getLogger(__name__)

EXECUTORS = ("local", "ray")
RAY_INSTALL_HINT = "pip install 'deepcollapse[ray]'"
TASK_KINDS = ("dufm", "net", "search")
# the file whose presence marks a task's folder as finished
DONE_FILE = {"dufm": "summary.json", "net": "summary.json", "search": "point.json"}
# the file whose presence means an unfinished task is resumed rather than started
RESUME_FILE = {"dufm": "checkpoint.pt", "net": "checkpoint.pt", "search": "search.json"}


class TaskError(DeepCollapseError):
    """One or more tasks of a sweep failed (the others finished and are kept on disk)."""


@dataclass(frozen=True)
class Task:
    """One trainer call: ``kind`` (``'dufm'``, ``'net'``, or ``'search'``: one point of a global search, see
    :func:`deepcollapse.runs.search_point.run_search_point`), the full config as a dict, the
    folder."""

    kind: str
    config: dict[str, Any]
    out_dir: str
    label: str = ""
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def done(self) -> bool:
        return (Path(self.out_dir) / DONE_FILE.get(self.kind, "summary.json")).is_file()


@contextlib.contextmanager
def _torch_threads(n: int) -> Iterator[None]:
    import torch

    old = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(old)


def run_task(task: Task, progress: bool = False) -> dict[str, Any]:
    """Run (or resume, or skip) one task; return ``{"label", "status": "skipped"|"resumed"|"trained",
    "seconds"}``.

    DUFM tasks run with one torch thread (see the module docstring).  The trainers are imported here so that
    a worker process imports torch only when it has work.
    """
    out = Path(task.out_dir)
    if task.done:
        return {"label": task.label, "status": "skipped", "seconds": 0.0}
    t0 = time.perf_counter()
    resume = (out / RESUME_FILE.get(task.kind, "checkpoint.pt")).is_file()
    if task.kind == "dufm":
        from deepcollapse.dufm.trainer import DUFMConfig, resume_dufm, train_dufm

        with _torch_threads(1):
            if resume:
                resume_dufm(out, progress=progress)
            else:
                train_dufm(DUFMConfig.from_dict(dict(task.config)), out, force=True, progress=progress)
    elif task.kind == "search":
        from deepcollapse.runs.search_point import run_search_point

        with _torch_threads(1):
            run_search_point(dict(task.config), out, progress=progress)
    elif task.kind == "net":
        # real networks: threads and device come from the NetConfig (``threads``, ``device``)
        from deepcollapse.nets.train import NetConfig, resume_net, train_net

        if resume:
            resume_net(out, progress=progress)
        else:
            train_net(NetConfig.from_dict(dict(task.config)), out, force=True, progress=progress)
    else:
        raise ConfigError(f"task.kind == {task.kind!r}, must be one of {', '.join(TASK_KINDS)}.")
    status = "resumed" if resume else "trained"
    return {"label": task.label, "status": status, "seconds": time.perf_counter() - t0}


_WORKER = {"in_task": False, "stop": False}  # state of a pool worker process


def _worker_signal(signum: int, frame: Any) -> None:  # pragma: no cover - runs in child processes
    """A pool worker's SIGINT/SIGTERM handler outside the trainers' own (which checkpoint and return): during
    a task's set-up (or a trainer without one) stop the task; between tasks remember to start no more."""
    if _WORKER["in_task"]:
        raise KeyboardInterrupt(f"stopped by signal {signum}")
    _WORKER["stop"] = True


def _worker_init() -> None:  # pragma: no cover - runs in child processes
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    logging.basicConfig(level=logging.WARNING)
    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, _worker_signal)


def _pool_task(task: Task) -> dict[str, Any]:  # pragma: no cover - runs in child processes
    if _WORKER["stop"]:
        raise KeyboardInterrupt("not started: the sweep was stopped")
    _WORKER["in_task"] = True
    try:
        return run_task(task, False)
    finally:
        _WORKER["in_task"] = False


def run_tasks(
    tasks: Sequence[Task],
    *,
    executor: str = "local",
    workers: int | None = None,
    ray_address: str | None = None,
    progress: bool = False,
) -> list[dict[str, Any]]:
    """Run every task that is not done yet with the chosen executor; return one status dict per task (in
    order).

    ``workers``: processes (``local``) or the CPU count of a locally started Ray instance; default
    ``min(#pending tasks, os.cpu_count())``.  Raises :class:`TaskError` after all tasks ended if any failed.
    """
    check_choice("executor", executor, EXECUTORS)
    if workers is not None:
        workers = check_int("workers", workers, min=1)
    pending = [t for t in tasks if not t.done]
    results: dict[int, dict[str, Any]] = {
        i: {"label": t.label, "status": "skipped", "seconds": 0.0} for i, t in enumerate(tasks) if t.done
    }
    if pending:
        log.info("%d of %d tasks to run (%s executor)", len(pending), len(tasks), executor)
    index = {id(t): i for i, t in enumerate(tasks)}
    n_workers = workers or max(1, min(len(pending), os.cpu_count() or 1))
    if executor == "ray":
        done = _run_ray(pending, n_workers, ray_address, progress)
    else:
        done = _run_local(pending, n_workers, progress)
    errors = []
    for task, res in zip(pending, done):
        if isinstance(res, BaseException):
            errors.append(f"{task.label or task.out_dir}: {type(res).__name__}: {res}")
            res = {"label": task.label, "status": "failed", "error": str(res), "seconds": 0.0}
        results[index[id(task)]] = res
    if errors:
        raise TaskError(f"{len(errors)} of {len(pending)} tasks failed: " + "; ".join(errors))
    return [results[i] for i in range(len(tasks))]


class _Stop:
    """Signal handler of the sweep's main process: remember the signal and send SIGTERM to the worker
    processes, whose trainers then write a checkpoint and return (the main loop shuts the pool down).  SIGTERM
    rather than the signal received: after a Ctrl-C in a terminal the workers got SIGINT already, and a
    trainer takes a second SIGINT as "give up without a checkpoint"."""

    def __init__(self, pids: Any) -> None:
        self.signum: int | None = None
        self._pids = pids  # callable -> current worker pids

    def forward(self) -> None:
        for pid in self._pids():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGTERM)

    def __call__(self, signum: int, frame: Any) -> None:
        first = self.signum is None
        self.signum = signum
        if first:
            self.forward()


@contextlib.contextmanager
def _stop_on_signals(stop: _Stop) -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    for s in old:
        signal.signal(s, stop)
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def _run_local(pending: Sequence[Task], workers: int, progress: bool) -> list[Any]:
    if not pending:
        return []
    if workers == 1 or len(pending) == 1:
        out: list[Any] = []
        for t in pending:
            try:
                out.append(run_task(t, progress=progress))
            except KeyboardInterrupt:
                raise
            except Exception as exc:  # keep going: the other points are independent
                log.error("task %s failed: %s", t.label, exc)
                out.append(exc)
        return out
    ctx = multiprocessing.get_context("spawn")
    results: list[Any] = [None] * len(pending)
    pool = cf.ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_worker_init)
    # The pool's worker processes (a private attribute, stable since Python 3.8): a signal sent to the main
    # process only (kill PID, a scheduler's SIGTERM) is passed on to them, so no worker outlives the sweep.
    stop = _Stop(lambda: list(getattr(pool, "_processes", None) or {}))
    bar = _bar(len(pending), progress)
    try:
        with _stop_on_signals(stop):
            futures = {pool.submit(_pool_task, t): i for i, t in enumerate(pending)}
            waiting = set(futures)
            while waiting:
                done, waiting = cf.wait(waiting, timeout=0.5, return_when=cf.FIRST_COMPLETED)
                for fut in done:
                    i = futures[fut]
                    if fut.cancelled():
                        results[i] = KeyboardInterrupt("not started: the sweep was stopped")
                        continue
                    try:
                        results[i] = fut.result()
                    except BaseException as exc:  # noqa: B036 - an interrupted trainer returns KeyboardInterrupt
                        if not isinstance(exc, KeyboardInterrupt):
                            log.error("task %s failed: %s", pending[i].label, exc)
                        results[i] = exc
                    bar.update(1)
                if stop.signum is not None:
                    for fut in waiting:
                        fut.cancel()  # queued tasks never start; running ones checkpoint and return
                    # again every 0.5 s: a worker may be setting up a task (before its trainer's handler)
                    stop.forward()
            if stop.signum is not None:
                pool.shutdown(wait=True, cancel_futures=True)
                name = signal.Signals(stop.signum).name
                raise Interrupted(
                    stop.signum,
                    f"sweep stopped by {name}: running tasks wrote checkpoints, queued ones were not started",
                )
    except KeyboardInterrupt:
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    finally:
        bar.close()
    pool.shutdown(wait=True)
    return results


def _bar(total: int, progress: bool) -> Any:
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="sweep tasks", unit="task", disable=not progress)


def import_ray() -> Any:
    """Import ray or raise a one-line error saying how to install it."""
    try:
        import ray
    except ImportError:
        raise ConfigError(
            f"executor == 'ray', must be 'local' unless the optional dependency ray is installed: "
            f"{RAY_INSTALL_HINT}."
        ) from None
    return ray


RAY_AUTH_HINT = (
    "if the cluster uses token authentication (on by default for clusters started by Ray >= 2.59), pass its "
    "token: export RAY_AUTH_MODE=token RAY_AUTH_TOKEN=<token> (or RAY_AUTH_TOKEN_PATH=<file>; "
    "`ray get-auth-token` on the head node prints it); to reach a cluster without auth, start it with "
    "RAY_AUTH_MODE=disabled ray start --head"
)


def _probe_address(address: str, timeout: float = 5.0) -> None:
    """Fail fast (one line) when nothing listens at ``host:port``: ``ray.init`` would retry for minutes."""
    import socket

    if address == "auto" or "://" in address or ":" not in address:
        return
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            pass
    except (OSError, ValueError) as exc:
        raise ConfigError(
            f"--ray-address == {address!r}, must be the address of a running Ray cluster (nothing answers "
            f"there: {exc}); start one with `ray start --head`, or leave --ray-address out to start a local "
            "instance."
        ) from None


def connect_ray(ray: Any, address: str) -> None:
    """``ray.init(address=...)`` with connection and authentication failures turned into one-line
    :class:`ConfigError` messages that say how to pass the token (or reach a cluster without auth)."""
    _probe_address(address)
    auth_error: Any = getattr(getattr(ray, "exceptions", None), "AuthenticationError", None)
    errors: tuple[type[BaseException], ...] = (ConnectionError, TimeoutError)
    if isinstance(auth_error, type) and issubclass(auth_error, BaseException):
        errors += (auth_error,)
    try:
        ray.init(address=address, log_to_driver=False)
    except errors as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConfigError(
            f"--ray-address == {address!r}, must be a Ray cluster this process may join "
            f"({type(exc).__name__}: {first[:160]}); {RAY_AUTH_HINT}."
        ) from None


def _run_ray(pending: Sequence[Task], workers: int, address: str | None, progress: bool) -> list[Any]:
    if not pending:
        return []
    ray = import_ray()
    started = False
    if not ray.is_initialized():
        if address:
            connect_ray(ray, address)
        else:
            ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
        started = True
    try:
        remote = ray.remote(num_cpus=1)(run_task)
        refs = [remote.remote(t, False) for t in pending]
        pos = {ref: i for i, ref in enumerate(refs)}
        results: list[Any] = [None] * len(pending)
        bar = _bar(len(pending), progress)
        remaining = list(refs)
        while remaining:
            ready, remaining = ray.wait(remaining, num_returns=1)
            for ref in ready:
                i = pos[ref]
                try:
                    results[i] = ray.get(ref)
                except Exception as exc:
                    cause = getattr(exc, "cause", None)
                    log.error("task %s failed: %s", pending[i].label, cause or exc)
                    results[i] = cause if isinstance(cause, BaseException) else exc
                bar.update(1)
        bar.close()
        return results
    finally:
        if started:
            ray.shutdown()

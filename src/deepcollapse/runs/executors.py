"""Executors: where the independent tasks of a sweep run.

A *task* is one call of a trainer (``train_dufm`` for the L-DUFM, with all the seeds of one grid point batched
into one call; ``train_net`` for a real network, one seed; ``search``: one point of the global search plus its
Hessian verdict) writing one folder; its kind is an entry of the task-kind table
(:mod:`deepcollapse.runs.kinds`), which names the runner and the done and resume markers.  A task is *done*
when its folder holds its done marker (``summary.json``; ``point.json`` for a search point); done tasks are
skipped, interrupted ones (a resume marker, e.g. ``checkpoint.pt``, but no done marker) are resumed, so a
sweep can be killed and re-launched at any time without redoing or duplicating work.

Tasks that their kind trains together (the ``net`` kind's seeds of one architecture, where ``batch_seeds``
says: :func:`~deepcollapse.nets.seed_groups.group_runs`) form one *unit*, run by :func:`run_unit` in one call
of the kind's ``run_batch``; every other task is a unit of its own.  Each task of a unit keeps its folder,
its markers and its status.

Two executors run the same :func:`run_unit` on the same unit list:

- ``local`` (default): in-process when there is one task or ``workers == 1``, otherwise a pool of ``workers``
  spawned processes (one task per process at a time).
- ``ray``: one Ray task per trainer call (``num_cpus=1``), on a cluster given by address (``ray_address``) or
  on a local Ray instance started for the sweep and shut down afterwards.  Run folders must be on a file
  system every Ray node sees.  Ray is an optional extra: ``pip install 'deepcollapse[ray]'``.

Every DUFM task runs with one torch thread (set for the duration of the task and restored afterwards; the
numpy kernel uses one BLAS thread), so a task's floating-point result does not depend on where it ran: both
executors produce bit-identical run folders and therefore identical result tables for the same sweep (the
trainer is deterministic per seed).  Network tasks use the ``threads`` / ``device`` of their ``NetConfig``.

SIGINT / SIGTERM to the process that runs the tasks (:mod:`deepcollapse._core.interrupt`): the running
tasks write their checkpoints and stop, queued ones are not started, and
:class:`~deepcollapse._core.checks.Interrupted` says how many tasks finished, how many can resume from a
checkpoint and how many have none.  The pool passes the signal on to its workers as SIGTERM; the Ray executor
cancels its tasks (``ray.cancel``: Ray raises ``KeyboardInterrupt`` in a running task by simulating SIGINT,
which the trainer's handler takes as its stop signal) and waits for them.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import logging
import multiprocessing
import os
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deepcollapse._core.checks import ConfigError, DeepCollapseError, Interrupted, check_choice, check_int
from deepcollapse._core.devices import torch_threads
from deepcollapse._core.docs import fill_doc
from deepcollapse._core.interrupt import StopFlag, stop_on_signals
from deepcollapse._core.progress import report_progress_to
from deepcollapse._core.results import Result
from deepcollapse.runs.kinds import get_kind

__all__ = [
    "EXECUTORS",
    "RAY_AUTH_HINT",
    "RAY_INSTALL_HINT",
    "Task",
    "TaskError",
    "TaskOutcome",
    "check_executor_options",
    "connect_ray",
    "run_task",
    "run_tasks",
    "run_unit",
    "task_units",
]

log = logging.getLogger(__name__)

EXECUTORS = ("local", "ray")
RAY_INSTALL_HINT = "pip install 'deepcollapse[ray]'"


class TaskError(DeepCollapseError):
    """One or more tasks of a sweep failed (the others finished and are kept on disk)."""


@dataclass(frozen=True)
class Task:
    """One trainer call: ``kind`` (a key of :data:`deepcollapse.runs.kinds.TASK_KINDS`: ``'dufm'``,
    ``'net'``, or ``'search'``: one point of a global search, see
    :func:`deepcollapse.runs.search_point.run_search_point`), the full config as a dict, the folder."""

    kind: str
    config: dict[str, Any]
    out_dir: str
    label: str = ""
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        get_kind(self.kind, "task.kind")  # an unknown kind fails here, in one line, not in a worker later

    @property
    def done(self) -> bool:
        """Whether the task's folder holds its kind's done marker (:meth:`TaskKind.is_done
        <deepcollapse.runs.kinds.TaskKind.is_done>`).

        Returns
        -------
        bool
            True for a finished task (a sweep skips it).

        Examples
        --------
        >>> import tempfile
        >>> Task("dufm", {}, tempfile.mkdtemp()).done
        False
        """
        return get_kind(self.kind).is_done(self.out_dir)


@dataclass(frozen=True, eq=False)
class TaskOutcome(Result):
    """What running one task did: skipped (already done), resumed, trained, or failed, and how long it took.

    Returned by :func:`run_task`, :func:`run_unit` and :func:`run_tasks` (one per task, in order) and held
    by :attr:`deepcollapse.runs.sweep.SweepResult.statuses`.  Read-only key access
    (``outcome["status"]``) works as for the status dicts of earlier releases; ``to_dict()`` is that dict,
    key for key: ``batched`` only where the task ran in a batched unit, ``error`` only where it failed.

    Attributes
    ----------
    label : str
        The task's :attr:`Task.label`.
    status : {'skipped', 'resumed', 'trained', 'failed'}
        ``skipped``: its done marker was there; ``resumed``: it went on from its resume marker (a
        checkpoint); ``trained``: it ran from the start; ``failed``: it raised (recorded by :func:`run_tasks`,
        which then raises :class:`TaskError` after every task ended, so a returned list holds none).
    seconds : float
        Wall-clock seconds of the trainer call (0 for a skipped or failed task; the whole call's time for
        each task of a batched unit).
    error : str or None
        The exception's message of a failed task.
    batched : int or None
        How many tasks shared the trainer call (a unit of several tasks, :func:`run_unit`).
    """

    label: str | None = None
    status: str | None = None
    seconds: float | None = None
    error: str | None = None
    batched: int | None = None


def _skipped(task: Task) -> TaskOutcome:
    return TaskOutcome.from_dict({"label": task.label, "status": "skipped", "seconds": 0.0})


@fill_doc
def run_task(task: Task, progress: bool = False) -> TaskOutcome:
    """Run (or resume, or skip) one task in this process.

    The kind's runner comes from the task-kind table (it imports its trainer, so a worker process imports
    torch only when it has work); DUFM and search tasks run with one torch thread (see the module docstring),
    network tasks with the ``threads`` of their config.

    Parameters
    ----------
    task : Task
        The task; skipped when its folder holds its kind's done marker, resumed when it holds the resume
        marker.
    %(runs_progress)s

    Returns
    -------
    TaskOutcome
        ``label``, ``status`` (``"skipped"``, ``"resumed"`` or ``"trained"``) and ``seconds``;
        ``to_dict()`` is ``{"label", "status", "seconds"}``.

    Examples
    --------
    A task whose folder holds its done marker (``summary.json`` for ``dufm``) is skipped:

    >>> import tempfile
    >>> from pathlib import Path
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     _ = (Path(tmp) / "summary.json").write_text("{}")
    ...     outcome = run_task(Task("dufm", {}, tmp, "point-0"))
    >>> outcome.status, outcome.seconds
    ('skipped', 0.0)
    >>> outcome.to_dict()
    {'label': 'point-0', 'status': 'skipped', 'seconds': 0.0}
    """
    kind = get_kind(task.kind, "task.kind")
    out = Path(task.out_dir)
    if kind.is_done(out):
        return _skipped(task)
    t0 = time.perf_counter()
    resume = kind.can_resume(out)
    with torch_threads(kind.threads):
        if resume and kind.resume is not None:
            kind.resume(out, progress)
        else:  # a fresh task, or a kind whose runner resumes by itself (search)
            kind.run(dict(task.config), out, progress)
    status = "resumed" if resume else "trained"
    return TaskOutcome.from_dict({"label": task.label, "status": status, "seconds": time.perf_counter() - t0})


def task_units(tasks: Sequence[Task]) -> list[list[Task]]:
    """The calls that run ``tasks``: the groups a kind runs together (its ``group``), else one task each, in
    the order of each unit's first task.

    Parameters
    ----------
    tasks : sequence of Task
        The tasks to run.

    Returns
    -------
    list of list of Task
        The units; each task is in exactly one.

    Examples
    --------
    >>> tasks = [Task("dufm", {}, "a"), Task("dufm", {}, "b")]
    >>> [[t.out_dir for t in unit] for unit in task_units(tasks)]
    [['a'], ['b']]
    """
    by_kind: dict[str, list[Task]] = {}
    for t in tasks:
        by_kind.setdefault(t.kind, []).append(t)
    units: list[list[Task]] = []
    for name, members in by_kind.items():
        kind = get_kind(name)
        if kind.group is None or kind.run_batch is None or len(members) == 1:
            units += [[t] for t in members]
        else:
            units += [[members[i] for i in g] for g in kind.group([t.config for t in members])]
    order = {id(t): i for i, t in enumerate(tasks)}
    return sorted(units, key=lambda u: order[id(u[0])])


@fill_doc
def run_unit(unit: Sequence[Task], progress: bool = False) -> list[TaskOutcome]:
    """Run one unit of :func:`task_units`: one task through :func:`run_task`, several through their kind's
    ``run_batch`` in one call; one :class:`TaskOutcome` per task (``batched``: how many tasks shared the
    call).

    Parameters
    ----------
    unit : sequence of Task
        Tasks of one kind (one, or a group of its ``group``); done ones are skipped.
    %(runs_progress)s

    Returns
    -------
    list of TaskOutcome
        One per task of ``unit``, in order.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     _ = (Path(tmp) / "summary.json").write_text("{}")
    ...     outcomes = run_unit([Task("dufm", {}, tmp, "point-0")])
    >>> [o.status for o in outcomes]
    ['skipped']
    """
    if len(unit) == 1:
        return [run_task(unit[0], progress)]
    kind = get_kind(unit[0].kind, "task.kind")
    pending = [t for t in unit if not kind.is_done(t.out_dir)]
    out = {id(t): _skipped(t) for t in unit if t not in pending}
    if pending:
        resumed = [kind.can_resume(t.out_dir) for t in pending]
        t0 = time.perf_counter()
        assert kind.run_batch is not None  # task_units groups only kinds that have one
        with torch_threads(kind.threads):
            kind.run_batch([dict(t.config) for t in pending], [Path(t.out_dir) for t in pending], progress)
        seconds = time.perf_counter() - t0
        for t, r in zip(pending, resumed):
            status = "resumed" if r else "trained"
            out[id(t)] = TaskOutcome.from_dict(
                {"label": t.label, "status": status, "seconds": seconds, "batched": len(pending)}
            )
    return [out[id(t)] for t in unit]


_WORKER: dict[str, Any] = {"in_task": False, "stop": False, "queue": None}  # state of a pool worker process


def _worker_signal(signum: int, frame: Any) -> None:  # pragma: no cover - runs in child processes
    """A pool worker's SIGINT/SIGTERM handler outside the trainers' own (which checkpoint and return): during
    a task's set-up (or a trainer without one) stop the task; between tasks remember to start no more."""
    _WORKER["stop"] = True  # in both cases: this worker starts no further task
    if _WORKER["in_task"]:
        raise KeyboardInterrupt(f"stopped by signal {signum}")


def _worker_init(queue: Any = None) -> None:  # pragma: no cover - runs in child processes
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    logging.basicConfig(level=logging.WARNING)
    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, _worker_signal)
    if queue is not None:  # the driver draws the tasks' progress; no bar of a worker draws on the terminal
        os.environ["TQDM_DISABLE"] = "1"  # read when tqdm is first imported: later, in this fresh process
        _WORKER["queue"] = queue


def _pool_task(unit: list[Task], index: int = 0) -> list[TaskOutcome]:  # pragma: no cover - in children
    if _WORKER["stop"]:
        raise KeyboardInterrupt("not started: the sweep was stopped")
    _WORKER["in_task"] = True
    queue = _WORKER["queue"]
    try:
        if queue is None:
            return run_unit(unit, False)
        with report_progress_to(lambda rec: queue.put((index, rec))):  # bars report to the driver
            return run_unit(unit, True)
    finally:
        _WORKER["in_task"] = False


class _TaskBars:
    """The driver's view of the tasks running in pool workers: one bar per task that reports progress
    (:mod:`deepcollapse._core.progress`), under the ``sweep tasks`` bar, removed when the task ends."""

    def __init__(self, labels: Sequence[str], enabled: bool) -> None:
        self.labels, self.enabled = list(labels), enabled
        self.bars: dict[int, Any] = {}

    def show(self, index: int, rec: dict[str, Any]) -> None:
        if not self.enabled:
            return
        from tqdm.auto import tqdm

        bar = self.bars.get(index)
        if bar is None or bar.total != rec["total"]:
            if bar is not None:
                bar.close()
            label = self.labels[index]
            desc = f"  {label}: {rec['desc']}"  # disable=False: tqdm reads TQDM_DISABLE once, at import
            bar = tqdm(total=rec["total"], desc=desc, unit=rec["unit"], leave=False, disable=False)
            self.bars[index] = bar
        bar.n = rec["n"]
        if rec.get("postfix"):
            bar.set_postfix_str(rec["postfix"], refresh=False)
        bar.refresh()

    def drain(self, queue: Any) -> None:
        """Show every report waiting in ``queue``."""
        import queue as queue_module

        while True:
            try:
                index, rec = queue.get_nowait()
            except (queue_module.Empty, EOFError, OSError):
                return
            self.show(index, rec)

    def done(self, index: int) -> None:
        bar = self.bars.pop(index, None)
        if bar is not None:
            bar.close()

    def close(self) -> None:
        for index in list(self.bars):
            self.done(index)


def check_executor_options(executor: str, workers: int | None) -> int | None:
    """``executor`` one of :data:`EXECUTORS` and ``workers`` ``None`` or ``>= 1`` (one-line ``ConfigError``):
    checked by :func:`run_tasks`, and by sweeps and experiments before they write anything.

    Parameters
    ----------
    executor : str
        ``"local"`` or ``"ray"``.
    workers : int or None
        Worker processes (``None``: one per pending task, up to the CPU count).

    Returns
    -------
    int or None
        ``workers``.

    Examples
    --------
    >>> check_executor_options("local", 2), check_executor_options("ray", None)
    (2, None)
    """
    check_choice("executor", executor, EXECUTORS)
    return None if workers is None else check_int("workers", workers, min=1)


def run_tasks(
    tasks: Sequence[Task],
    *,
    executor: str = "local",
    workers: int | None = None,
    ray_address: str | None = None,
    progress: bool = False,
    on_done: Callable[[Task, TaskOutcome], None] | None = None,
) -> list[TaskOutcome]:
    """Run every task that is not done yet with the chosen executor; return one outcome per task (in order).

    Raises :class:`TaskError` after all tasks ended if any failed (the others are kept on disk).
    ``on_done(task, outcome)`` is called in this process as soon as each task of this call finishes (trained
    or resumed; not the skipped or failed ones), while the others still run: e.g. to offer a finished
    search point to the best-known registry, so that a sweep stopped hours later has lost none.  An exception
    it raises is logged and the sweep goes on.

    Parameters
    ----------
    tasks : sequence of Task
        The tasks; those whose folder holds their done marker are skipped, interrupted ones resumed.
    executor : {'local', 'ray'}, default 'local'
        Where they run (module docstring).
    workers : int, optional
        Processes (``local``) or the CPU count of a locally started Ray instance; default
        ``min(#pending units, os.cpu_count())``.
    ray_address : str, optional
        The Ray cluster to join (``ray`` executor; ``None``: start a local instance for these tasks).
    progress : bool, default False
        Show a bar over the tasks and the trainers' own bars.
    on_done : callable, optional
        ``on_done(task, outcome)``, as above.

    Returns
    -------
    list of TaskOutcome
        One per task, in the order of ``tasks``.

    Examples
    --------
    Tasks that are done already are skipped (nothing is imported or run):

    >>> import tempfile
    >>> from pathlib import Path
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     _ = (Path(tmp) / "summary.json").write_text("{}")
    ...     outcomes = run_tasks([Task("dufm", {}, tmp, "a"), Task("dufm", {}, tmp, "b")])
    >>> [(o.label, o.status) for o in outcomes]
    [('a', 'skipped'), ('b', 'skipped')]
    """
    workers = check_executor_options(executor, workers)
    finished = _announcer(on_done)
    pending = [t for t in tasks if not t.done]
    results: dict[int, TaskOutcome] = {i: _skipped(t) for i, t in enumerate(tasks) if t.done}
    units = task_units(pending)
    if pending:
        log.info(
            "%d of %d tasks to run in %d calls (%s executor)", len(pending), len(tasks), len(units), executor
        )
    index = {id(t): i for i, t in enumerate(tasks)}
    n_workers = workers or max(1, min(len(units), os.cpu_count() or 1))
    if executor == "ray":
        done = _run_ray(units, n_workers, ray_address, progress, finished)
    else:
        done = _run_local(units, n_workers, progress, finished)
    errors = []
    for unit, res in zip(units, done):
        for j, task in enumerate(unit):
            r = res[j] if isinstance(res, list) else res
            if isinstance(r, BaseException):
                errors.append(f"{task.label or task.out_dir}: {type(r).__name__}: {r}")
                r = TaskOutcome.from_dict(
                    {"label": task.label, "status": "failed", "error": str(r), "seconds": 0.0}
                )
            results[index[id(task)]] = r
    if errors:
        raise TaskError(f"{len(errors)} of {len(pending)} tasks failed: " + "; ".join(errors))
    return [results[i] for i in range(len(tasks))]


def _announcer(
    on_done: Callable[[Task, TaskOutcome], None] | None,
) -> Callable[[Sequence[Task], Any], None]:
    """``announce(unit, result)``: ``on_done`` for each task of a finished unit that trained or resumed
    (a unit's result is its list of outcomes, or the exception it raised: nothing to announce then)."""

    def announce(unit: Sequence[Task], result: Any) -> None:
        if on_done is None or not isinstance(result, list):
            return
        for task, outcome in zip(unit, result):
            if isinstance(outcome, TaskOutcome) and outcome.status in ("trained", "resumed"):
                try:
                    on_done(task, outcome)
                except Exception as exc:  # the other tasks are independent: report and go on
                    log.error("after task %s: %s", task.label or task.out_dir, exc)

    return announce


def _stopped(flag: StopFlag, tasks: Sequence[Task]) -> Interrupted:
    """The exception of stopped tasks, saying only what is on disk: how many finished, how many can resume
    from a checkpoint, how many have none (not started, or stopped before their first checkpoint)."""
    done = [get_kind(t.kind).is_done(t.out_dir) for t in tasks]
    kept = [not d and get_kind(t.kind).can_resume(t.out_dir) for t, d in zip(tasks, done)]
    counts = (
        (sum(done), "finished"),
        (sum(kept), "can resume from their checkpoint"),
        (len(tasks) - sum(done) - sum(kept), "have no checkpoint (not started, or stopped before one)"),
    )
    what = ", ".join(f"{n} {text}" for n, text in counts if n)
    return flag.interrupted(f"sweep stopped by {flag.name}: of {len(tasks)} tasks run now, {what}")


def _send_sigterm(pids: Sequence[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGTERM)


def _unit_label(unit: Sequence[Task]) -> str:
    return unit[0].label if len(unit) == 1 else f"{unit[0].label} (+{len(unit) - 1} batched with it)"


def _run_local(
    pending: Sequence[list[Task]],
    workers: int,
    progress: bool,
    finished: Callable[[Sequence[Task], Any], None] = lambda unit, result: None,
) -> list[Any]:
    """Run the units ``pending``; per unit its list of statuses or the exception it raised (each passed to
    ``finished(unit, result)`` as soon as it is there)."""
    if not pending:
        return []
    if workers == 1 or len(pending) == 1:
        out: list[Any] = []
        for unit in pending:
            try:
                out.append(run_unit(unit, progress=progress))
            except KeyboardInterrupt:
                raise
            except Exception as exc:  # keep going: the other points are independent
                log.error("task %s failed: %s", _unit_label(unit), exc)
                out.append(exc)
            finished(unit, out[-1])
        return out
    ctx = multiprocessing.get_context("spawn")
    results: list[Any] = [None] * len(pending)
    reports = ctx.Queue() if progress else None  # progress from inside the tasks (steps, epochs)
    pool = cf.ProcessPoolExecutor(
        max_workers=workers, mp_context=ctx, initializer=_worker_init, initargs=(reports,)
    )
    task_bars = _TaskBars([_unit_label(u) or Path(u[0].out_dir).name for u in pending], progress)

    # The pool's worker processes (a private attribute, stable since Python 3.8): a signal sent to the main
    # process only (kill PID, a scheduler's SIGTERM) is passed on to them, so no worker outlives the sweep.
    # SIGTERM rather than the signal received: after a Ctrl-C in a terminal the workers got SIGINT already,
    # and a trainer takes a second SIGINT as "give up without a checkpoint".  The main process keeps waiting
    # for its workers whatever it receives next.
    def forward() -> None:
        _send_sigterm(list(getattr(pool, "_processes", None) or {}))

    stop = StopFlag(on_first=lambda signum: forward(), give_up_on_second_sigint=False)
    bar = _bar(len(pending), progress)
    try:
        with stop_on_signals(stop):
            # At most `workers` tasks are handed to the pool at a time: a task the pool has queued for a
            # worker can no longer be cancelled, so after a signal none may wait there (one did, under load).
            unsubmitted = list(range(len(pending)))
            futures: dict[cf.Future[Any], int] = {}
            waiting: set[cf.Future[Any]] = set()

            def top_up() -> None:
                while unsubmitted and len(waiting) < workers and stop.signum is None:
                    i = unsubmitted.pop(0)
                    fut = pool.submit(_pool_task, pending[i], i)
                    futures[fut] = i
                    waiting.add(fut)

            top_up()
            while waiting:
                done, waiting = cf.wait(waiting, timeout=0.5, return_when=cf.FIRST_COMPLETED)
                if reports is not None:
                    task_bars.drain(reports)
                for fut in done:
                    i = futures[fut]
                    task_bars.done(i)
                    if fut.cancelled():
                        results[i] = KeyboardInterrupt("not started: the sweep was stopped")
                        continue
                    try:
                        results[i] = fut.result()
                    except BaseException as exc:  # noqa: B036 - an interrupted trainer returns KeyboardInterrupt
                        if not isinstance(exc, KeyboardInterrupt):
                            log.error("task %s failed: %s", _unit_label(pending[i]), exc)
                        results[i] = exc
                    finished(pending[i], results[i])
                    bar.update(1)
                top_up()
                if stop.signum is not None:
                    for i in unsubmitted:
                        results[i] = KeyboardInterrupt("not started: the sweep was stopped")
                    unsubmitted.clear()
                    for fut in waiting:
                        fut.cancel()  # queued tasks never start; running ones checkpoint and return
                    # again every 0.5 s: a worker may be setting up a task (before its trainer's handler)
                    forward()
            if stop.signum is not None:
                pool.shutdown(wait=True, cancel_futures=True)
                raise _stopped(stop, [t for unit in pending for t in unit])
    except KeyboardInterrupt:
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    finally:
        task_bars.close()
        bar.close()
    pool.shutdown(wait=True)
    return results


def _bar(total: int, progress: bool) -> Any:
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="sweep tasks", unit="task", disable=not progress)


def import_ray() -> Any:
    """Import ray or raise a one-line error saying how to install it.

    Returns
    -------
    module
        The ``ray`` module (``ConfigError`` naming :data:`RAY_INSTALL_HINT` when it is not installed).

    Examples
    --------
    >>> try:
    ...     ray = import_ray()
    ... except ConfigError as exc:
    ...     ray = None
    ...     assert RAY_INSTALL_HINT in str(exc)
    >>> ray is None or hasattr(ray, "init")
    True
    """
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
    :class:`ConfigError` messages that say how to pass the token (or reach a cluster without auth).

    Parameters
    ----------
    ray : module
        The ``ray`` module (:func:`import_ray`).
    address : str
        The cluster's address (``host:port``, ``ray://...`` or ``"auto"``); a ``host:port`` where nothing
        listens fails at once.

    Returns
    -------
    None
        This process is connected to the cluster (``ray.init``).

    Examples
    --------
    A stand-in for the ``ray`` module:

    >>> class Ray:
    ...     def init(self, address, log_to_driver):
    ...         print("joined", address)
    >>> connect_ray(Ray(), "auto")
    joined auto
    """
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


def _run_ray(
    pending: Sequence[list[Task]],
    workers: int,
    address: str | None,
    progress: bool,
    finished: Callable[[Sequence[Task], Any], None] = lambda unit, result: None,
) -> list[Any]:
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
        remote = ray.remote(num_cpus=1)(run_unit)
        refs = [remote.remote(t, False) for t in pending]
        pos = {ref: i for i, ref in enumerate(refs)}
        results: list[Any] = [None] * len(pending)
        bar = _bar(len(pending), progress)
        remaining = list(refs)
        cancelled_error: Any = getattr(getattr(ray, "exceptions", None), "TaskCancelledError", ())

        def collect() -> None:
            # a result is stored before its ref leaves ``remaining``: an interrupt in between re-reads it
            while remaining:
                ready, _ = ray.wait(remaining, num_returns=1)
                for ref in ready:
                    i = pos[ref]
                    try:
                        results[i] = ray.get(ref)
                    except Exception as exc:
                        if isinstance(exc, cancelled_error):  # stopped by the signal below
                            results[i] = KeyboardInterrupt(f"cancelled: {_unit_label(pending[i])}")
                        else:
                            cause = getattr(exc, "cause", None)
                            log.error("task %s failed: %s", _unit_label(pending[i]), cause or exc)
                            results[i] = cause if isinstance(cause, BaseException) else exc
                    remaining.remove(ref)
                    finished(pending[i], results[i])
                    bar.update(1)

        # SIGINT / SIGTERM to the driver interrupt ray.wait; then every task not finished is cancelled (a
        # running one gets KeyboardInterrupt through its SIGINT handler: the trainer writes its checkpoint
        # and returns; a queued one never starts) and the driver waits for them before it shuts Ray down.
        # A second signal while waiting gives up (KeyboardInterrupt).
        stop = StopFlag(raise_now=True)
        try:
            with stop_on_signals(stop):
                try:
                    collect()
                except KeyboardInterrupt:
                    if stop.signum is None:  # not one of ours (e.g. off the main thread)
                        raise
                    for ref in remaining:
                        ray.cancel(ref)
                    collect()
        finally:
            bar.close()
        if stop.signum is not None:
            raise _stopped(stop, [t for unit in pending for t in unit])
        return results
    finally:
        if started:
            ray.shutdown()

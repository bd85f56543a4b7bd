"""The task-kind table: what the sweeps, the executors and the experiments may run as independent tasks.

A *task* is one call of a kind's runner that writes one folder.  Each kind is one :class:`TaskKind`:

- ``dufm``: :class:`~deepcollapse.dufm.config.DUFMConfig`; ``train_dufm`` (``resume_dufm``), the seeds of a
  point batched in one call; done marker ``summary.json``, resume marker ``checkpoint.pt``.
- ``net``: :class:`~deepcollapse.nets.config.NetConfig`; ``train_net`` (``resume_net``), one seed per task,
  one folder per seed; ``summary.json``, ``checkpoint.pt``.  Tasks whose configs may share a batch
  (:func:`~deepcollapse.nets.seed_groups.group_runs`, the ``batch_seeds`` field) run in one call of
  :func:`~deepcollapse.nets.batched.run_nets`, which trains them as one batched network, each seed still in
  its own folder.
- ``search``: :class:`~deepcollapse.landscape.search.SearchConfig`; ``run_search_point``, the search for its
  budget (resuming what the folder holds), then the Hessian verdict of the best solution; ``point.json``,
  ``search.json``.

A task whose done marker exists is skipped; one whose resume marker exists is resumed.  A kind with
``group`` and ``run_batch`` lets the executors run several of its tasks in one call (a *unit*,
:func:`~deepcollapse.runs.executors.run_unit`); each task keeps its folder, markers and table rows.

The table is cheap to import: config classes are named by dotted path and the runners import their trainer
when they run.  The trainers import torch (about a second), and the command line reads this table to check a
sweep file before any work; a Ray task pickles :func:`~deepcollapse.runs.executors.run_task` by reference and
looks the kind up by name, so a worker imports a trainer only when it runs one.

Extension point: a new kind of work is one :class:`TaskKind` added to :data:`TASK_KINDS`.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from deepcollapse._core.checks import ConfigError, check_keys, one_of_message
from deepcollapse._core.docs import fill_doc
from deepcollapse._core.io import read_json

__all__ = ["TASK_KINDS", "TaskKind", "get_kind"]

Runner = Callable[[dict[str, Any], Path, bool], Any]
Resumer = Callable[[Path, bool], Any]
Rows = Callable[[Path], list[dict[str, Any]]]
BatchRunner = Callable[[list[dict[str, Any]], list[Path], bool], Any]
Grouper = Callable[[list[dict[str, Any]]], list[list[int]]]


@dataclass(frozen=True)
class TaskKind:
    """One kind of task (see the module docstring's table).

    Parameters
    ----------
    name : str
        The ``kind`` of sweep files and :class:`~deepcollapse.runs.executors.Task`.
    config : str
        ``"module:Class"`` of the config dataclass (imported on first use: :attr:`config_cls`).
    run : callable
        ``run(config_dict, folder, progress)``: start the task (or continue it when ``resume`` is ``None``).
    resume : callable or None
        ``resume(folder, progress)``: continue from the resume marker; ``None``: ``run`` resumes by itself.
    done_file, resume_file : str
        The files whose presence marks the folder as finished / as resumable.
    rows : callable
        ``rows(folder)``: one table row per seed of a finished folder (a sweep's ``results.csv``).
    describe : str
        One line for messages and help.
    seeds : {"batch", "single"}
        How a sweep maps its seeds to tasks: ``batch``, the seeds of a point in one call (config keys
        ``seeds``, ``runs``, ``seed``); ``single``, one task per seed (key ``seed``).
    seed_keys : tuple of str
        Config keys a sweep sets itself, so a sweep file may not.
    threads : int or None
        Torch threads while the task runs (restored afterwards); ``None``: the config's own.
    group : callable or None
        ``group(configs)``: which of several pending tasks run in one call (lists of indices, each index
        once); ``None``: one task per call.
    run_batch : callable or None
        ``run_batch(configs, folders, progress)``: run (or resume) the tasks of one group in one call.
    preflight : callable or None
        ``preflight(config)``: what a config needs from this machine (``net``: a CUDA device when it asks for
        one), checked by a sweep before it writes anything; raises ``ConfigError``.
    """

    name: str
    config: str
    run: Runner
    resume: Resumer | None
    done_file: str
    resume_file: str
    rows: Rows
    describe: str = ""
    seeds: Literal["batch", "single"] = "single"
    seed_keys: tuple[str, ...] = ("seed",)
    threads: int | None = None
    group: Grouper | None = None
    run_batch: BatchRunner | None = None
    preflight: Callable[[dict[str, Any]], None] | None = None

    @property
    def config_cls(self) -> type:
        """The config dataclass (imported here, see the module docstring).

        Returns
        -------
        type
            The class named by ``config``.

        Examples
        --------
        >>> get_kind("dufm").config_cls.__name__
        'DUFMConfig'
        """
        module, _, cls = self.config.partition(":")
        return getattr(importlib.import_module(module), cls)  # type: ignore[no-any-return]

    def fields(self) -> list[str]:
        """The keys a config of this kind accepts: its fields, aliases (``lam``) and deprecated spellings.

        Returns
        -------
        list of str
            The keys, sorted.

        Examples
        --------
        >>> kind = get_kind("dufm")
        >>> "classes" in kind.fields(), "lam" in kind.fields()
        (True, True)
        """
        cls = self.config_cls
        names = [f.name for f in dataclasses.fields(cls)]
        names += list(getattr(cls, "_ALIASES", {})) + list(getattr(cls, "_RENAMED", {}))
        return sorted(set(names))

    @fill_doc
    def build(self, data: Mapping[str, Any]) -> Any:
        """The validated config object of ``data`` (unknown keys and bad values raise ``ConfigError``).

        Parameters
        ----------
        %(runs_config_data)s

        Returns
        -------
        object
            An instance of :attr:`config_cls`.

        Examples
        --------
        >>> kind = get_kind("dufm")
        >>> config = kind.build({"classes": 3, "layers": 2})
        >>> type(config).__name__, config.classes
        ('DUFMConfig', 3)
        """
        cls = self.config_cls
        if hasattr(cls, "from_dict"):
            return cls.from_dict(dict(data))
        check_keys("config", data.keys(), self.fields())
        return cls(**data)

    @fill_doc
    def normalise(self, data: Mapping[str, Any]) -> dict[str, Any]:
        """``data`` validated and completed with the defaults, as a plain dict (what a task carries).  A plain
        dict: a task's configuration must pickle to a worker process or a Ray node and be written as JSON
        whatever its kind; the kind's ``build`` turns it into the typed config.

        Parameters
        ----------
        %(runs_config_data)s

        Returns
        -------
        dict
            Every field of the config (its ``to_dict()``), defaults filled in.

        Examples
        --------
        >>> kind = get_kind("dufm")
        >>> data = kind.normalise({"classes": 3})
        >>> data["classes"], data["layers"]
        (3, 4)
        """
        obj = self.build(data)
        return obj.to_dict() if hasattr(obj, "to_dict") else dataclasses.asdict(obj)

    @fill_doc
    def is_done(self, folder: str | Path) -> bool:
        """Whether ``folder`` holds a finished task of this kind.

        Parameters
        ----------
        %(runs_folder)s

        Returns
        -------
        bool
            Its done marker (``done_file``) exists.

        Examples
        --------
        >>> import tempfile
        >>> kind = get_kind("dufm")
        >>> kind.is_done(tempfile.mkdtemp())
        False
        """
        return (Path(folder) / self.done_file).is_file()

    @fill_doc
    def can_resume(self, folder: str | Path) -> bool:
        """Whether ``folder`` holds an unfinished task of this kind to continue (its resume marker).

        Parameters
        ----------
        %(runs_folder)s

        Returns
        -------
        bool
            Its resume marker (``resume_file``) exists.

        Examples
        --------
        >>> import pathlib, tempfile
        >>> kind = get_kind("dufm")
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (folder / "checkpoint.pt").write_bytes(b"")
        >>> kind.can_resume(folder)
        True
        """
        return (Path(folder) / self.resume_file).is_file()


# --- runners: each imports its trainer here (see the module docstring: import time, Ray pickling) ---------
def _train_dufm(config: dict[str, Any], out: Path, progress: bool) -> Any:
    from deepcollapse.dufm.trainer import DUFMConfig, train_dufm

    return train_dufm(DUFMConfig.from_dict(dict(config)), out, force=True, progress=progress)


def _resume_dufm(out: Path, progress: bool) -> Any:
    from deepcollapse.dufm.trainer import resume_dufm

    return resume_dufm(out, progress=progress)


def _train_net(config: dict[str, Any], out: Path, progress: bool) -> Any:
    from deepcollapse.nets.train import NetConfig, train_net

    return train_net(NetConfig.from_dict(dict(config)), out, force=True, progress=progress)


def _resume_net(out: Path, progress: bool) -> Any:
    from deepcollapse.nets.train import resume_net

    return resume_net(out, progress=progress)


def _group_nets(configs: list[dict[str, Any]]) -> list[list[int]]:
    from deepcollapse.nets.seed_groups import group_runs

    return group_runs(configs)


def _run_nets(configs: list[dict[str, Any]], outs: list[Path], progress: bool) -> Any:
    from deepcollapse.nets.batched import run_nets
    from deepcollapse.nets.config import NetConfig

    return run_nets([NetConfig.from_dict(dict(c)) for c in configs], outs, progress=progress)


def _net_preflight(config: dict[str, Any]) -> None:
    if config.get("device") in ("cuda", "mps"):  # torch only when a device is asked for
        from deepcollapse.nets.build import select_device

        select_device(config["device"])


def _search_point(config: dict[str, Any], out: Path, progress: bool) -> Any:
    from deepcollapse.runs.search_point import run_search_point

    return run_search_point(dict(config), out, progress=progress)


def _dufm_rows(folder: Path) -> list[dict[str, Any]]:
    from deepcollapse.analysis.tables import dufm_run_rows

    return dufm_run_rows(folder)


def _net_rows(folder: Path) -> list[dict[str, Any]]:
    from deepcollapse.analysis.tables import net_run_rows

    return net_run_rows(folder)


def _search_rows(folder: Path) -> list[dict[str, Any]]:
    """The search point's table row (``point.json``) with the seed of its search."""
    row = read_json(folder / "point.json")
    state = folder / "search.json"
    seed = read_json(state).get("config", {}).get("seed") if state.is_file() else None
    return [{"seed": seed, **row}]


TASK_KINDS: dict[str, TaskKind] = {
    k.name: k
    for k in (
        TaskKind(
            "dufm",
            "deepcollapse.dufm.config:DUFMConfig",
            _train_dufm,
            _resume_dufm,
            done_file="summary.json",
            resume_file="checkpoint.pt",
            rows=_dufm_rows,
            describe="the batched L-DUFM trainer (full-batch GD), the seeds of a point in one call",
            seeds="batch",
            seed_keys=("seed", "seeds", "runs"),
            threads=1,  # a task's floats do not depend on where it ran (see runs.executors)
        ),
        TaskKind(
            "net",
            "deepcollapse.nets.config:NetConfig",
            _train_net,
            _resume_net,
            done_file="summary.json",
            resume_file="checkpoint.pt",
            rows=_net_rows,
            describe="a real network (ResNet20 or MLP backbone + MLP head), one seed per folder, the seeds "
            "of one architecture batched in one call where batch_seeds says",
            seed_keys=("seed", "seeds", "runs"),
            group=_group_nets,
            run_batch=_run_nets,
            preflight=_net_preflight,
        ),
        TaskKind(
            "search",
            "deepcollapse.landscape.search:SearchConfig",
            _search_point,
            None,
            done_file="point.json",
            resume_file="search.json",
            rows=_search_rows,
            describe="the global search for the lowest loss of eq. (1), then the Hessian verdict of the best",
            seed_keys=("seed", "seeds"),  # (``runs`` is a search field: GD starts per round)
            threads=1,
        ),
    )
}


def get_kind(name: Any, what: str = "kind") -> TaskKind:
    """The :class:`TaskKind` called ``name``.

    Parameters
    ----------
    name : str
        A key of :data:`TASK_KINDS`.
    what : str
        How the calling input names the field (``kind``, ``task.kind``), for the message.

    Returns
    -------
    TaskKind
        The table entry; an unknown name raises a one-line ``ConfigError`` listing the kinds.

    Examples
    --------
    >>> get_kind("dufm").done_file
    'summary.json'
    """
    try:
        return TASK_KINDS[name]
    except (KeyError, TypeError):
        raise ConfigError(one_of_message(what, name, list(TASK_KINDS))) from None

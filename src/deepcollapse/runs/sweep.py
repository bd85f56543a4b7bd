"""Sweeps: a grid (or list) of config overrides × seeds, run as independent trainer calls, joined in a table.

A sweep file (YAML) has the keys

```yaml
name: wd-rank                 # optional, used in the report title
description: ...              # optional
kind: dufm                    # a task kind: 'dufm' (default: the L-DUFM trainer), 'net', 'search'
base: {classes: 15, layers: 4, width: 30, lr: 0.5, steps: 100000}   # config fields shared by every point
grid: {lam: [0.001, 0.002, 0.004]}   # cartesian product of these overrides (optional)
points: [{width: 16}, {width: 64}]   # an explicit list of overrides (optional; product with grid)
seeds: [0, 1, 2, 3, 4]        # or runs: 5 (seeds 0..4; n_seeds, deprecated); default [0]
seeds_per_run: 5              # dufm only: at most this many seeds per trainer call (default: all)
```

Config fields are those of the kind's config class (the task-kind table, :mod:`deepcollapse.runs.kinds`):
:class:`~deepcollapse.dufm.config.DUFMConfig` (``kind: dufm``), :class:`~deepcollapse.nets.config.NetConfig`
(``kind: net``, real networks) or :class:`~deepcollapse.landscape.search.SearchConfig` (``kind: search``, one
global search plus the Hessian verdict per point and seed); for ``dufm`` the extra key ``lam`` sets every
regularisation parameter at once (``lam_h = lam_w = lam``, the papers' "weight decay λ for all
parameters").  Seeds are set by the sweep (``seed``, and for dufm and net ``seeds``/``runs``, may not appear
in ``base``/``grid``/``points``); a field of another kind is refused naming that kind.

Layout of the output folder::

    OUT/sweep.yaml                         the resolved spec
    OUT/points/<point-id>/seeds_<a>-<b>/   one run folder per trainer call (dufm: the seeds of a point)
    OUT/points/<point-id>/seed_<s>/        (net, search: one run folder per seed)
    OUT/results.csv                        one row per (point, seed)
    OUT/summary.csv                        one row per point: mean and std over seeds

A task is done when its done marker exists (``summary.json``; ``point.json`` for a search), so a
re-launched sweep skips finished runs, resumes interrupted ones from their checkpoint, and the tables (built
from the point list, one row per (point, seed)) never hold duplicates.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from deepcollapse._core.checks import ConfigError, check_int, check_keys
from deepcollapse._core.docs import fill_doc
from deepcollapse._core.io import check_output_folder, read_yaml
from deepcollapse.runs.executors import Task, TaskOutcome, check_executor_options, run_tasks
from deepcollapse.runs.kinds import TASK_KINDS, get_kind

__all__ = [
    "SWEEP_KEYS",
    "SweepResult",
    "SweepSpec",
    "collect_results",
    "config_fields",
    "load_sweep",
    "parse_assignments",
    "run_sweep",
    "write_sweep_report",
]

log = logging.getLogger(__name__)

# "n_seeds": the old spelling of "runs" (the CLI's --runs), accepted with a DeprecationWarning, one release.
SWEEP_KEYS = (
    "name",
    "description",
    "kind",
    "base",
    "grid",
    "points",
    "seeds",
    "runs",
    "n_seeds",
    "seeds_per_run",
)


def config_fields(kind: str) -> list[str]:
    """The config keys a sweep may set for ``kind``: the fields of its config class (the task-kind table),
    their aliases (``lam`` for dufm) and deprecated spellings.

    Parameters
    ----------
    kind : str
        A task kind (``"dufm"``, ``"net"``, ``"search"``).

    Returns
    -------
    list of str
        The keys, sorted.

    Examples
    --------
    >>> "lam" in config_fields("dufm"), "seed" in config_fields("search")
    (True, True)
    """
    return get_kind(kind).fields()


def _fmt_value(v: Any) -> str:
    if isinstance(v, float):
        s = f"{v:.6g}"
    elif isinstance(v, (list, tuple)):
        s = "-".join(_fmt_value(x) for x in v)
    else:
        s = str(v)
    return re.sub(r"[^A-Za-z0-9.+-]", "", s)


def point_id(overrides: Mapping[str, Any]) -> str:
    """A readable, file-system safe, deterministic name for one grid point (``'base'`` without overrides).

    Parameters
    ----------
    overrides : mapping
        The point's config overrides, in order.

    Returns
    -------
    str
        ``key=value`` pairs joined by ``_`` (at most 80 characters: longer names end in a hash).

    Examples
    --------
    >>> point_id({"lam": 0.01, "width": [4, 8]}), point_id({})
    ('lam=0.01_width=4-8', 'base')
    """
    if not overrides:
        return "base"
    name = "_".join(f"{k}={_fmt_value(v)}" for k, v in overrides.items())
    if len(name) > 80:
        digest = hashlib.sha1(json.dumps(overrides, sort_keys=True, default=str).encode()).hexdigest()[:10]
        name = name[:69] + "-" + digest
    return name


def _seed_label(seeds: Sequence[int]) -> str:
    s = list(seeds)
    if len(s) == 1:
        return f"seed_{s[0]}"
    if s == list(range(s[0], s[0] + len(s))):
        return f"seeds_{s[0]}-{s[-1]}"
    return "seeds_" + hashlib.sha1(",".join(map(str, s)).encode()).hexdigest()[:10]


@dataclass
class SweepSpec:
    """A validated sweep: ``base`` config, overrides (``points`` × ``grid``), seeds.  See the module
    docstring."""

    base: dict[str, Any] = field(default_factory=dict)
    grid: dict[str, list[Any]] = field(default_factory=dict)
    points: list[dict[str, Any]] = field(default_factory=list)
    seeds: list[int] = field(default_factory=lambda: [0])
    kind: str = "dufm"
    name: str = "sweep"
    description: str = ""
    seeds_per_run: int | None = None

    def __post_init__(self) -> None:
        get_kind(self.kind)
        if not isinstance(self.base, Mapping):
            raise ConfigError(f"base == {self.base!r}, must be a mapping of config fields to values.")
        allowed = config_fields(self.kind)
        self._check_fields("base", self.base, allowed)
        if not isinstance(self.grid, Mapping):
            raise ConfigError(
                f"grid == {self.grid!r}, must be a mapping of config fields to lists of values."
            )
        self._check_fields("grid", self.grid, allowed)
        for key, values in self.grid.items():
            if not isinstance(values, list) or not values:
                raise ConfigError(f"grid.{key} == {values!r}, must be a non-empty list of values.")
        if not isinstance(self.points, list) or any(not isinstance(p, Mapping) for p in self.points):
            raise ConfigError(
                f"points == {self.points!r}, must be a list of mappings of config fields to values."
            )
        for i, p in enumerate(self.points):
            self._check_fields(f"points[{i}]", p, allowed)
        if not isinstance(self.seeds, list) or not self.seeds:
            raise ConfigError(f"seeds == {self.seeds!r}, must be a non-empty list of integers.")
        self.seeds = [check_int(f"seeds[{i}]", s, min=0) for i, s in enumerate(self.seeds)]
        if len(set(self.seeds)) != len(self.seeds):
            raise ConfigError(f"seeds == {self.seeds}, must not repeat a seed.")
        if self.seeds_per_run is not None:
            self.seeds_per_run = check_int("seeds_per_run", self.seeds_per_run, min=1)
        ids = [point_id(o) for o in self.overrides()]
        if len(set(ids)) != len(ids):
            dup = next(i for i in ids if ids.count(i) > 1)
            raise ConfigError(f"points/grid give the point {dup!r} twice, must list each point once.")
        # Validate every full config now (one-line error naming the field) rather than in a worker later.
        for o in self.overrides():
            self._validated_config(o, self.seeds[:1])

    def _check_fields(self, where: str, cfg: Mapping[str, Any], allowed: list[str]) -> None:
        for key in cfg:
            if key in get_kind(self.kind).seed_keys:
                raise ConfigError(
                    f"{where}.{key} == {cfg[key]!r}, must not be set: seeds come from the sweep's "
                    f"'seeds' / 'runs' keys."
                )
        for key in [k for k in cfg if k not in allowed]:  # a field of another kind: say which
            owners = [k for k in TASK_KINDS if k != self.kind and key in config_fields(k)]
            if owners:
                raise ConfigError(
                    f"{where}.{key} == {cfg[key]!r}, must be a field of kind {self.kind!r}: {key!r} belongs "
                    f"to kind {' / '.join(map(repr, owners))} (set kind: {owners[0]}, or remove {key})."
                )
        check_keys(where, cfg.keys(), allowed)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SweepSpec:
        """Build from a parsed YAML mapping, rejecting unknown keys (named) and empty grids.

        Parameters
        ----------
        d : mapping
            The sweep file's keys (:data:`SWEEP_KEYS`).

        Returns
        -------
        SweepSpec
            The validated sweep (``runs: k`` becomes the seeds ``0 .. k-1``).

        Examples
        --------
        >>> spec = SweepSpec.from_dict({"base": {"classes": 2}, "grid": {"lam": [0.01, 0.02]}, "runs": 3})
        >>> spec.seeds, spec.overrides()
        ([0, 1, 2], [{'lam': 0.01}, {'lam': 0.02}])
        """
        if not isinstance(d, Mapping):
            raise ConfigError(f"sweep file == {d!r}, must be a mapping with keys {', '.join(SWEEP_KEYS)}.")
        check_keys("sweep", d.keys(), SWEEP_KEYS)
        if "n_seeds" in d:
            warnings.warn(
                "sweep key 'n_seeds' is deprecated, use 'runs' (accepted until the next release).",
                DeprecationWarning,
                stacklevel=2,
            )
        counts = [k for k in ("runs", "n_seeds") if k in d]
        if len(counts) == 2:
            raise ConfigError("sweep has both runs and n_seeds, must have only runs.")
        if "seeds" in d and counts:
            raise ConfigError(f"sweep has both seeds and {counts[0]}, must have at most one of them.")
        seeds: list[int] = [0]
        if counts:
            seeds = list(range(check_int(counts[0], d[counts[0]], min=1)))
        elif "seeds" in d:
            raw = d["seeds"]
            seeds = raw if isinstance(raw, list) else [raw]
        if "grid" in d and not d["grid"]:
            raise ConfigError(
                f"grid == {d['grid']!r}, must map at least one config field to a non-empty list "
                "(or be omitted)."
            )
        if "points" in d and not d["points"]:
            raise ConfigError(
                f"points == {d['points']!r}, must be a non-empty list of overrides (or be omitted)."
            )
        return cls(
            base=d["base"] if d.get("base") is not None else {},
            grid=d.get("grid") or {},
            points=d.get("points") or [],
            seeds=seeds,
            kind=d.get("kind", "dufm"),
            name=str(d.get("name", "sweep")),
            description=str(d.get("description", "")),
            seeds_per_run=d.get("seeds_per_run"),
        )

    def to_dict(self) -> dict[str, Any]:
        """The sweep in plain YAML types, read back by :meth:`from_dict`.  A plain dict: the form written to
        ``sweep.yaml`` and to the report's config.

        Returns
        -------
        dict
            ``name``, ``kind``, ``base``, and where set ``description``, ``grid``, ``points``, ``seeds``,
            ``seeds_per_run``.

        Examples
        --------
        >>> SweepSpec(base={"classes": 2}, grid={"lam": [0.01]}).to_dict()
        {'name': 'sweep', 'kind': 'dufm', 'base': {'classes': 2}, 'grid': {'lam': [0.01]}, 'seeds': [0]}
        """
        d: dict[str, Any] = {"name": self.name, "kind": self.kind, "base": dict(self.base)}
        if self.description:
            d["description"] = self.description
        if self.grid:
            d["grid"] = {k: list(v) for k, v in self.grid.items()}
        if self.points:
            d["points"] = [dict(p) for p in self.points]
        d["seeds"] = list(self.seeds)
        if self.seeds_per_run is not None:
            d["seeds_per_run"] = self.seeds_per_run
        return d

    def overrides(self) -> list[dict[str, Any]]:
        """Every grid point's overrides, in order: ``points`` (or ``[{}]``) × the product of ``grid``.

        Returns
        -------
        list of dict
            One mapping of config fields to values per point.

        Examples
        --------
        >>> points = [{"width": 4}, {"width": 8}]
        >>> spec = SweepSpec(base={"classes": 2}, grid={"lam": [0.01, 0.02]}, points=points)
        >>> [point_id(o) for o in spec.overrides()]
        ['width=4_lam=0.01', 'width=4_lam=0.02', 'width=8_lam=0.01', 'width=8_lam=0.02']
        """
        keys = list(self.grid)
        combos = [dict(zip(keys, vals)) for vals in itertools.product(*(self.grid[k] for k in keys))]
        return [{**dict(p), **c} for p in (self.points or [{}]) for c in combos]

    def varying_keys(self) -> list[str]:
        """The config fields that some point overrides, in order of first appearance (the tables' columns).

        Returns
        -------
        list of str
            The keys of :meth:`overrides`.

        Examples
        --------
        >>> points = [{"width": 4}, {"width": 8}]
        >>> spec = SweepSpec(base={"classes": 2}, grid={"lam": [0.01, 0.02]}, points=points)
        >>> spec.varying_keys()
        ['width', 'lam']
        """
        keys: list[str] = []
        for o in self.overrides():
            keys += [k for k in o if k not in keys]
        return keys

    def _seed_chunks(self) -> list[list[int]]:
        if get_kind(self.kind).seeds == "single":
            return [[s] for s in self.seeds]
        size = self.seeds_per_run or len(self.seeds)
        return [self.seeds[i : i + size] for i in range(0, len(self.seeds), size)]

    def _validated_config(self, overrides: Mapping[str, Any], seeds: Sequence[int]) -> dict[str, Any]:
        kind = get_kind(self.kind)
        cfg = {**self.base, **overrides}  # aliases (``lam``) are expanded by the config class
        if kind.seeds == "batch":
            cfg.update(seeds=list(seeds), runs=len(seeds), seed=int(seeds[0]))
        else:
            cfg["seed"] = int(seeds[0])
        return kind.normalise(cfg)

    @fill_doc
    def tasks(self, out_dir: str | Path) -> list[Task]:
        """One :class:`Task` per (point, seed chunk), run folders under ``out_dir/points``.

        Parameters
        ----------
        %(runs_sweep_out)s

        Returns
        -------
        list of Task
            In point order; each with its validated config and ``meta`` (``point``, ``overrides``, ``seeds``).

        Examples
        --------
        >>> import tempfile
        >>> base = {"classes": 2, "layers": 2, "n": 2, "width": 4, "steps": 20, "log_every": 10}
        >>> spec = SweepSpec(base=base, grid={"lam": [0.01, 0.02]})
        >>> [t.label for t in spec.tasks(tempfile.mkdtemp())]
        ['lam=0.01/seed_0', 'lam=0.02/seed_0']
        """
        root = Path(out_dir).resolve() / "points"
        tasks = []
        for o in self.overrides():
            pid = point_id(o)
            for chunk in self._seed_chunks():
                cfg = self._validated_config(o, chunk)
                folder = root / pid / _seed_label(chunk)
                meta = {"point": pid, "overrides": dict(o), "seeds": list(chunk)}
                tasks.append(Task(self.kind, cfg, str(folder), label=f"{pid}/{folder.name}", meta=meta))
        return tasks


def load_sweep(path: str | Path) -> SweepSpec:
    """Read and validate a sweep YAML file (errors name the file and the offending key).

    Parameters
    ----------
    path : str or Path
        The sweep file (module docstring).

    Returns
    -------
    SweepSpec
        The validated sweep.

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "sweep.yaml")
    >>> _ = open(path, "w").write(yaml.safe_dump({"base": {"classes": 2}, "grid": {"lam": [0.01, 0.02]}}))
    >>> load_sweep(path).overrides()
    [{'lam': 0.01}, {'lam': 0.02}]
    """
    return SweepSpec.from_dict(read_yaml(path, expected="sweep keys (kind, base, grid, seeds, ...)"))


def parse_assignments(items: Sequence[str], what: str) -> dict[str, Any]:
    """Parse command-line ``key=value`` items (values read as YAML: numbers, lists ``[1, 2]``, strings).  A
    plain dict: overrides (``key -> value``) merged into a sweep's YAML before it is validated, not a
    result.

    Parameters
    ----------
    items : sequence of str
        ``key=value`` strings.
    what : str
        The option's name, for the message of an item without ``=`` (``ConfigError``).

    Returns
    -------
    dict
        ``{key: value}``; a value that is not valid YAML is kept as the string.

    Examples
    --------
    >>> parse_assignments(["lam=0.01", "width=[4, 8]", "name=x"], "--set")
    {'lam': 0.01, 'width': [4, 8], 'name': 'x'}
    """
    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise ConfigError(f"{what} == {item!r}, must be of the form key=value.")
        key, raw = item.split("=", 1)
        try:
            out[key.strip()] = yaml.safe_load(raw)
        except yaml.YAMLError:
            out[key.strip()] = raw
    return out


def _check_existing(task: Task, force: bool = False) -> None:
    """A run folder that exists (finished or interrupted) must have been made with the same config, otherwise
    the tables would mix experiments: refuse, or with ``force`` drop its summary and checkpoint so that the
    task is trained again from scratch (the trainer overwrites its run files)."""
    path = Path(task.out_dir) / "config.yaml"
    if not path.is_file():
        return
    old: Any = read_yaml(path, expected="the run's config", hint="delete the run folder to train it again")
    if isinstance(old, Mapping) and "config" in old and isinstance(old["config"], Mapping):
        old = old["config"]
    if isinstance(old, Mapping):  # a folder written before a field was renamed compares under the new names
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            old = get_kind(task.kind).config_cls.upgrade_keys(old)  # type: ignore[attr-defined]
    # fields that say how a run is executed, not what it computes (NetConfig.batch_seeds: how many seeds share
    # a batch) may change between launches, e.g. fewer seeds per batch after running out of GPU memory
    free = getattr(get_kind(task.kind).config_cls, "EXECUTION_FIELDS", ())
    diff = [k for k, v in task.config.items() if k in old and k not in free and _norm(old[k]) != _norm(v)]
    if not diff:
        return
    if force:
        log.warning("%s: config changed (%s), training it again", task.out_dir, ", ".join(diff))
        kind = get_kind(task.kind)
        for name in (kind.done_file, kind.resume_file):
            (Path(task.out_dir) / name).unlink(missing_ok=True)
        return
    k = diff[0]
    raise ConfigError(
        f"{task.out_dir} was run with {k} == {old[k]!r}, but this sweep asks for {task.config[k]!r}: "
        f"must use a new --out folder (or --force to train it again)."
    )


def _norm(v: Any) -> Any:
    return json.loads(json.dumps(v, default=str))


@dataclass
class SweepResult:
    """What :func:`run_sweep` returns: the folder, the per-run table and the per-point aggregate, and what
    running each task did (``statuses``: one :class:`~deepcollapse.runs.executors.TaskOutcome` per task)."""

    out_dir: Path
    spec: SweepSpec
    runs: pd.DataFrame
    summary: pd.DataFrame
    statuses: list[TaskOutcome]


@fill_doc
def run_sweep(
    spec: SweepSpec,
    out_dir: str | Path,
    *,
    executor: str = "local",
    workers: int | None = None,
    ray_address: str | None = None,
    progress: bool = False,
    force: bool = False,
) -> SweepResult:
    """Run every unfinished point of ``spec`` into ``out_dir`` and write ``results.csv`` / ``summary.csv``.

    Run folders left by an earlier launch are reused only if made with the same config (else ``ConfigError``;
    ``force`` trains them again).

    Parameters
    ----------
    %(runs_sweep_spec)s
    %(runs_sweep_out)s
    executor : {"local", "ray"}, default "local"
        Where the tasks run (:func:`~deepcollapse.runs.executors.run_tasks`).
    workers : int, optional
        Worker processes (``1``: in this process; ``None``: one per pending task, up to the CPU count).
    ray_address : str, optional
        The Ray cluster to join (``ray`` only; default a local instance).
    progress : bool, default False
        Show progress bars.
    force : bool, default False
        Train again the run folders made with another config.

    Returns
    -------
    SweepResult
        The folder, the per-run and per-point tables and each task's outcome.

    Examples
    --------
    >>> import tempfile
    >>> base = {"classes": 2, "layers": 2, "n": 2, "width": 4, "steps": 20, "log_every": 10}
    >>> spec = SweepSpec(base=base, grid={"lam": [0.01, 0.02]})
    >>> result = run_sweep(spec, tempfile.mkdtemp(), workers=1)
    >>> [o.status for o in result.statuses], list(result.summary["point"])
    (['trained', 'trained'], ['lam=0.01', 'lam=0.02'])
    """
    check_executor_options(executor, workers)
    out = check_output_folder(out_dir, option="out")
    tasks = spec.tasks(out)
    preflight = get_kind(spec.kind).preflight
    if preflight is not None:  # e.g. device cuda without one: one line, before anything is written
        for config in {json.dumps(t.config, sort_keys=True, default=str): t.config for t in tasks}.values():
            preflight(config)
    out.mkdir(parents=True, exist_ok=True)
    for t in tasks:
        _check_existing(t, force)
    out.mkdir(parents=True, exist_ok=True)
    (out / "sweep.yaml").write_text(yaml.safe_dump(spec.to_dict(), sort_keys=False))
    statuses = run_tasks(
        tasks, executor=executor, workers=workers, ray_address=ray_address, progress=progress
    )
    runs, summary = collect_results(spec, out)
    runs.to_csv(out / "results.csv", index=False)
    summary.to_csv(out / "summary.csv", index=False)
    return SweepResult(out, spec, runs, summary, statuses)


@fill_doc
def collect_results(spec: SweepSpec, out_dir: str | Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Join the finished run folders of ``spec`` into (one row per (point, seed), mean ± std per point).

    Parameters
    ----------
    %(runs_sweep_spec)s
    %(runs_sweep_out)s

    Returns
    -------
    runs : pandas.DataFrame
        One row per (point, seed) of the finished tasks: ``point``, the varying keys, the kind's table row
        and ``run_dir``.
    summary : pandas.DataFrame
        Mean and std over seeds per point.

    Examples
    --------
    >>> import tempfile
    >>> base = {"classes": 2, "layers": 2, "n": 2, "width": 4, "steps": 20, "log_every": 10}
    >>> spec = SweepSpec(base=base, grid={"lam": [0.01, 0.02]})
    >>> out = tempfile.mkdtemp()
    >>> _ = run_sweep(spec, out, workers=1)
    >>> runs, summary = collect_results(spec, out)
    >>> list(runs["point"]), list(runs["seed"])
    (['lam=0.01', 'lam=0.02'], [0, 0])
    """
    from deepcollapse.analysis.tables import aggregate_runs

    rows: list[dict[str, Any]] = []
    keys = spec.varying_keys()
    for t in spec.tasks(out_dir):
        if not t.done:
            continue
        folder = Path(t.out_dir)
        base = {"point": t.meta["point"], **{k: _cell(t.meta["overrides"].get(k)) for k in keys}}
        new = get_kind(spec.kind).rows(folder)
        rows += [{**base, **r, "run_dir": str(folder)} for r in new]
    runs = pd.DataFrame(rows)
    if not runs.empty:
        runs = runs.drop_duplicates(subset=["point", "seed"], keep="last").reset_index(drop=True)
    summary = aggregate_runs(runs, ["point", *keys])
    return runs, summary


def _cell(v: Any) -> Any:
    return ",".join(map(str, v)) if isinstance(v, (list, tuple)) else v


def write_sweep_report(result: SweepResult, path: str | Path | None = None) -> Path:
    """``report.html`` of a sweep: for each numeric swept field, the main metrics against it
    (:mod:`deepcollapse.analysis.sweep_plots`: Wilson intervals for probabilities, log axes for geometric
    grids, a note instead of a panel for a metric that is 0 everywhere); the per-point and per-run tables,
    each column explained under them; the spec.

    Parameters
    ----------
    result : SweepResult
        What :func:`run_sweep` returned.
    path : str or Path, optional
        Where to write (default ``result.out_dir / "report.html"``).

    Returns
    -------
    Path
        The report written.

    Examples
    --------
    >>> import tempfile
    >>> base = {"classes": 2, "layers": 2, "n": 2, "width": 4, "steps": 20, "log_every": 10}
    >>> spec = SweepSpec(base=base, grid={"lam": [0.01, 0.02]})
    >>> result = run_sweep(spec, tempfile.mkdtemp(), workers=1)
    >>> write_sweep_report(result).name
    'report.html'
    """
    from deepcollapse.analysis.report import Report
    from deepcollapse.analysis.sweep_plots import add_sweep_figures

    spec, out = result.spec, result.out_dir
    rep = Report(
        f"Sweep {spec.name}",
        description=spec.description,
        command=f"deepcollapse sweep {out / 'sweep.yaml'} --out {out}",
    )
    summary = result.summary
    add_sweep_figures(rep, summary, spec.varying_keys(), out / "figures")
    rep.section("Per point (mean ± std over seeds)")
    rep.add_table(summary)
    rep.section("Per run")
    rep.add_table(result.runs.drop(columns=["run_dir"], errors="ignore"))
    rep.set_config(spec.to_dict())
    return rep.write(Path(path) if path else out / "report.html")

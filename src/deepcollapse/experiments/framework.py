"""The experiment framework: :class:`Experiment` (a named, documented reproduction of one paper figure),
:class:`Context` (what an experiment's body gets: its folder, run options, a report, sweep / figure / table
helpers) and :func:`register`.

Figure definitions live in their own modules (``paper2024``, ``paper2023``, ``net_reports``, ...), which
import this module and call :func:`register` on import; :mod:`deepcollapse.experiments.registry` imports them
and looks experiments up by name.  This module imports none of them (no import circle).

Each experiment is a *configuration* of the toolkit's engines (the theory engine, the batched L-DUFM trainer
via :mod:`deepcollapse.runs.sweep`, the supervised trainer via the network presets), never a copy of a
training loop.  ``run`` writes into ``out_dir``: the run folders (``points/...``), tables (``tables/*.csv``),
figures (``figures/*.png`` and ``*.pdf``) and a self-contained ``report.html``; it returns the report's path.
Re-running into the same folder skips finished runs; a folder that holds another experiment is refused unless
``force``.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from deepcollapse._core.checks import ConfigError, check_choice
from deepcollapse._core.config import ConfigMixin
from deepcollapse._core.io import check_output_folder
from deepcollapse.runs.executors import Task, TaskOutcome, check_executor_options, run_tasks
from deepcollapse.runs.sweep import SweepResult, SweepSpec, run_sweep

__all__ = ["Context", "Experiment", "NetRunOptions", "register", "registered"]

log = logging.getLogger(__name__)


@dataclass
class NetRunOptions(ConfigMixin):
    """The settings file of a network experiment, ``reproduce NAME --config FILE.yaml`` (``kind == "net"``
    experiments without a ``config_class`` of their own): the :class:`~deepcollapse.nets.config.NetConfig`
    fields ``device`` and ``batch_seeds`` set in every run, as ``--device`` / ``--batch-seeds`` set them (the
    command line's win).  E.g. ``device: cuda`` and ``batch_seeds: auto``; unknown keys are refused."""

    device: str | None = None
    batch_seeds: str | int | None = None

    def __post_init__(self) -> None:
        from deepcollapse.nets.build import select_device
        from deepcollapse.nets.config import DEVICES, check_batch_seeds

        if self.device is not None:
            check_choice("device", self.device, DEVICES)
            select_device(self.device)  # a CUDA (or MPS) device this machine lacks: one line naming the file
        if self.batch_seeds is not None:
            self.batch_seeds = check_batch_seeds(self.batch_seeds)


class Context:
    """What an experiment's body gets: its folder, the run options, a report, helpers to run sweeps and save
    figures and tables (figures go to ``figures/`` as PNG + PDF and into the report)."""

    def __init__(
        self,
        experiment: Experiment,
        out_dir: Path,
        smoke: bool,
        executor: str,
        workers: int | None,
        ray_address: str | None,
        progress: bool,
        force: bool = False,
        data_dir: str | None = None,
        family: dict[str, Any] | None = None,
        settings: Any = None,
        config_file: str | None = None,
        run_options: dict[str, Any] | None = None,
        announce: Callable[[str], None] | None = None,
        registry: Any = None,
    ) -> None:
        from deepcollapse.analysis.report import Report

        self.experiment = experiment
        self.out_dir = out_dir
        self.smoke = smoke
        self.executor = executor
        self.workers = workers
        self.ray_address = ray_address
        self.progress = progress
        self.force = force
        self.data_dir = data_dir  # full-size network runs: the folder with the MNIST / CIFAR-10 files
        # the model family of an experiment that takes one (``reproduce NAME --loss ce``; default MSE + ReLU)
        self.family: dict[str, Any] = dict(family or DEFAULT_FAMILY)
        # the settings read from ``reproduce NAME --config FILE`` (an ``experiment.config_class``), or None:
        # the experiment's shipped settings
        self.settings = settings
        self.config_file = config_file
        # ``reproduce NAME --device ... --batch-seeds ...`` (validated, the settings file's under the command
        # line's): set in each network sweep's base; the basin atlases read ``device``
        self.run_options: dict[str, Any] = dict(run_options or {})
        # where messages for the user go before the work starts (the command line prints them; default: log)
        self.announce: Callable[[str], None] = announce or log.info
        # the best-known user registry (``reproduce --registry``; a loaded Registry) that search experiments
        # offer their points to and read the table's minimum from; None: none (the search's own table)
        self.registry = registry
        cmd = experiment.command or f"deepcollapse reproduce {experiment.name}{' --smoke' if smoke else ''}"
        cmd += family_options(self.family)
        if config_file is not None:
            cmd += f" --config {shlex.quote(config_file)}"
        if data_dir is not None:
            cmd += f" --data-dir {shlex.quote(data_dir)}"
        for key, value in self.run_options.items():
            cmd += f" --{key.replace('_', '-')} {value}"
        cmd += f" --out {shlex.quote(str(out_dir))}"
        title = f"{experiment.paper} {experiment.figure}: {experiment.name}{' (smoke)' if smoke else ''}"
        if self.family != DEFAULT_FAMILY:
            title += " (" + ", ".join(f"{k} = {v}" for k, v in self.family.items() if v is not None) + ")"
        self.report = Report(title, description=experiment.description, command=cmd)
        self.report.section("Settings", experiment.settings)
        self.settings_section = self.report.sections[-1]
        if smoke:
            self.report.add_note(
                "Smoke variant: tiny sizes and step counts to check the pipeline, "
                "not a reproduction of the paper."
            )
        elif isinstance(settings, NetRunOptions):
            self.report.add_note(f"Run options read from {config_file}: {settings.to_dict()}.")
        elif config_file is not None:
            self.report.add_note(
                f"Settings read from {config_file}, not the shipped ones: the shipped settings' expected "
                f"runtime ({experiment.runtime}) does not apply."
            )
        else:
            self.report.add_note(f"Expected runtime on a 2-core CPU: {experiment.runtime}.")
        self.configs: dict[str, Any] = {}

    def sweep(self, spec: SweepSpec, sub: str = "") -> SweepResult:
        """Run ``spec`` into ``out_dir/sub`` (skipping finished points) and keep its config for the report.

        A network sweep (``kind: net``) takes the run's :attr:`run_options` (``--device``, ``--batch-seeds``)
        into its base and, unless it is a smoke run, first announces its runtime estimated from a short
        calibration on the device (:func:`~deepcollapse.experiments.net_runtime.estimate_net_runtime`), which
        also goes into the report.

        Parameters
        ----------
        spec : SweepSpec
            The sweep.
        sub : str, optional
            A subfolder of ``out_dir`` (default: ``out_dir`` itself); also the key of its config in
            :attr:`configs` (default: ``spec.name``).

        Returns
        -------
        SweepResult
            :func:`~deepcollapse.runs.sweep.run_sweep`'s result (per-run and per-point tables).

        Examples
        --------
        >>> import tempfile
        >>> from deepcollapse.experiments.registry import get_experiment
        >>> ctx = Context(get_experiment("basins"), Path(tempfile.mkdtemp()), True, "local", 1, None, False)
        >>> from deepcollapse.experiments.dufm_helpers import dufm_base, seeded_spec
        >>> base = dufm_base(False, classes=3, layers=2, width=4, n=2, steps=20, log_every=10)
        >>> result = ctx.sweep(seeded_spec("tiny", base, 2), "tiny")
        >>> len(result.runs), list(ctx.configs)
        (2, ['tiny'])
        """
        if spec.kind == "net" and self.run_options:
            spec = dataclasses.replace(spec, base={**spec.base, **self.run_options})
        if spec.kind == "net" and not self.smoke:
            from deepcollapse.experiments.net_runtime import estimate_net_runtime

            out = self.out_dir / sub if sub else self.out_dir
            estimate = estimate_net_runtime(spec.tasks(out), workers=self.workers)
            self.announce(f"{self.experiment.name}: {estimate.text()}")
            self.report.add_note(f"Before it started: {estimate.text()}.")
        self.configs[sub or spec.name] = spec.to_dict()
        return run_sweep(
            spec,
            self.out_dir / sub if sub else self.out_dir,
            executor=self.executor,
            workers=self.workers,
            ray_address=self.ray_address,
            progress=self.progress,
            force=self.force,
        )

    def tasks(
        self, tasks: Sequence[Task], on_done: Callable[[Task, TaskOutcome], None] | None = None
    ) -> list[TaskOutcome]:
        """Run the independent tasks (:class:`~deepcollapse.runs.executors.Task`) that are not done
        yet with this run's executor, workers and Ray address; one
        :class:`~deepcollapse.runs.executors.TaskOutcome` per task.

        Parameters
        ----------
        tasks : sequence of Task
            The tasks (a finished one is skipped).
        on_done : callable, optional
            ``on_done(task, outcome)`` as each task finishes (:func:`~deepcollapse.runs.executors.run_tasks`).

        Returns
        -------
        list of TaskOutcome
            In the order of ``tasks``.

        Examples
        --------
        >>> import tempfile
        >>> from deepcollapse.experiments.registry import get_experiment
        >>> ctx = Context(get_experiment("basins"), Path(tempfile.mkdtemp()), True, "local", 1, None, False)
        >>> from deepcollapse.experiments.basin_atlas import BasinAtlas, atlas_tasks
        >>> atlas = BasinAtlas(classes=3, layers=2, n=2, width=4, steps=10, records=10, runs=2)
        >>> [o.status for o in ctx.tasks(atlas_tasks(atlas, ctx.out_dir))]
        ['trained']
        >>> [o.status for o in ctx.tasks(atlas_tasks(atlas, ctx.out_dir))]
        ['skipped']
        """
        return run_tasks(
            tasks,
            executor=self.executor,
            workers=self.workers,
            ray_address=self.ray_address,
            progress=self.progress,
            on_done=on_done,
        )

    def say(self, text: str) -> None:
        """Tell the user ``text`` now: one line on stderr (as the progress bars, so only with ``progress``),
        prefixed with the experiment's name, and logged (e.g. a runtime estimate before a long run).

        Parameters
        ----------
        text : str
            The message.

        Returns
        -------
        None
            Logs it (and writes it to stderr with ``progress``).

        Examples
        --------
        >>> import tempfile
        >>> from deepcollapse.experiments.registry import get_experiment
        >>> ctx = Context(get_experiment("basins"), Path(tempfile.mkdtemp()), True, "local", 1, None, False)
        >>> ctx.say("estimated runtime 3 s")  # logged; progress is off, so nothing on stderr
        """
        log.info("%s: %s", self.experiment.name, text)
        if self.progress:
            from tqdm.auto import tqdm

            tqdm.write(f"{self.experiment.name}: {text}", file=sys.stderr)

    def figure(self, fig: Any, name: str, caption: str) -> Path:
        """Save ``fig`` as ``figures/<name>.png`` and ``.pdf`` and add the PNG to the report (a smoke run's
        figure is marked as such on its face).

        Parameters
        ----------
        fig : matplotlib.figure.Figure
            The figure.
        name : str
            The file name without suffix.
        caption : str
            The report's caption.

        Returns
        -------
        Path
            The PNG.

        Examples
        --------
        >>> import tempfile
        >>> from deepcollapse.experiments.registry import get_experiment
        >>> ctx = Context(get_experiment("basins"), Path(tempfile.mkdtemp()), True, "local", 1, None, False)
        >>> import matplotlib.pyplot as plt
        >>> fig, ax = plt.subplots()
        >>> ctx.figure(fig, "empty", "An empty figure.").relative_to(ctx.out_dir).as_posix()
        'figures/empty.png'
        """
        from deepcollapse.analysis.figures import mark_smoke, save_figure

        if self.smoke:  # a smoke figure must never pass for the paper's: it says so on its face
            mark_smoke(fig)
        png, _ = save_figure(fig, self.out_dir / "figures", name)
        self.report.add_figure(png, caption)
        return png

    def table(self, df: pd.DataFrame, name: str, caption: str, columns: Sequence[str] | None = None) -> Path:
        """Write ``df`` as ``tables/<name>.csv`` (every column) and add it to the report (only ``columns``
        where given, those of them that ``df`` has).

        Parameters
        ----------
        df : DataFrame
            The table.
        name : str
            The file name without suffix.
        caption : str
            The report's caption.
        columns : sequence of str, optional
            The columns shown in the report (default all).

        Returns
        -------
        Path
            The CSV.

        Examples
        --------
        >>> import tempfile
        >>> from deepcollapse.experiments.registry import get_experiment
        >>> ctx = Context(get_experiment("basins"), Path(tempfile.mkdtemp()), True, "local", 1, None, False)
        >>> df = pd.DataFrame({"K": [3, 4], "loss": [0.1, 0.2]})
        >>> ctx.table(df, "losses", "Two rows.", columns=["loss"]).relative_to(ctx.out_dir).as_posix()
        'tables/losses.csv'
        """
        path = self.out_dir / "tables" / f"{name}.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        df.to_csv(path, index=False)
        shown = df[[c for c in columns if c in df.columns]] if columns else df
        self.report.add_table(shown, caption)
        return path


def _load_average() -> float | None:
    """The 1-minute load average (``None`` where the system has none, e.g. Windows)."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def measured_runtime(seconds: float, load: float | None) -> str:
    """The report's line on the wall time this very run took, with the machine it ran on.

    Parameters
    ----------
    seconds : float
        Wall time of the experiment's body (training, tables, figures), measured by :meth:`Experiment.run`.
    load : float or None
        The 1-minute load average when it started (``None``: not available).

    Returns
    -------
    str
        One sentence for the report's notes.

    Examples
    --------
    >>> measured_runtime(150, None).split(" of wall")[0]
    'This run took 2.5 min'
    """
    took = f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"
    machine = f"{os.cpu_count() or '?'} CPU cores"
    if load is not None:
        machine += f", load average {load:.1f} at the start"
    return (
        f"This run took {took} of wall time on this machine ({machine}); runs already finished in the output "
        "folder (if any) were reused, not re-run."
    )


@dataclass(frozen=True)
class Experiment:
    """A named, documented reproduction of one paper figure."""

    name: str
    paper: str
    figure: str
    description: str
    settings: str
    runtime: str
    kind: str  # "theory", "dufm" or "net"
    body: Callable[[Context], None]
    command: str | None = None  # how to reproduce, without --out (default: deepcollapse reproduce NAME)
    families: bool = False  # takes a model family: ``reproduce NAME --loss ce --activation ... --eps ...``
    # its settings can come from YAML, ``reproduce NAME --config FILE.yaml``: a config class
    # (:class:`~deepcollapse._core.config.ConfigMixin`) the body finds as ``ctx.settings``; None: no file
    config_class: type[Any] | None = None

    def device_choices(self) -> tuple[str, ...]:
        """The values ``reproduce NAME --device`` takes for this experiment (empty: it takes none): a network
        experiment's :class:`~deepcollapse.nets.config.NetConfig` devices, or the choices of the ``device``
        field of its settings class (the basin atlases: :class:`~deepcollapse.experiments.basin_atlas.
        BasinAtlas`, whose trainer calls run there).

        Returns
        -------
        tuple of str

        Examples
        --------
        >>> from deepcollapse.experiments.registry import get_experiment
        >>> get_experiment("basins").device_choices(), get_experiment("fig3-left").device_choices()
        (('cpu', 'cuda', 'auto'), ())
        """
        if self.kind == "net":
            from deepcollapse.nets.config import DEVICES

            return DEVICES
        if self.config_class is None:
            return ()
        fields = {f.name: f for f in dataclasses.fields(self.config_class)}
        return tuple(fields["device"].metadata.get("choices", ())) if "device" in fields else ()

    def run(
        self,
        out_dir: str | Path,
        smoke: bool = False,
        executor: str = "local",
        *,
        workers: int | None = None,
        ray_address: str | None = None,
        progress: bool = False,
        force: bool = False,
        data_dir: str | Path | None = None,
        family: dict[str, Any] | None = None,
        config: str | Path | None = None,
        device: str | None = None,
        batch_seeds: str | int | None = None,
        announce: Callable[[str], None] | None = None,
        registry: Any = None,
    ) -> Path:
        """Run the experiment (or its smoke variant) into ``out_dir``; return the path of ``report.html``.

        Finished runs in ``out_dir`` are reused if their config matches; ``force`` re-trains those that do not
        (otherwise ``ConfigError``).  ``data_dir``: the folder with the full datasets that the paper-scale
        network experiments read (``None``: their presets' ``data``; smoke runs use bundled data).
        ``family``: ``{"loss", "activation", "eps"}`` (missing keys: MSE, ReLU, no ε) for an experiment with
        ``families``; any other experiment refuses a family other than MSE + ReLU (``ConfigError``).
        ``config``: a YAML file of ``config_class`` fields, instead of the shipped settings (only for an
        experiment with a ``config_class``, not with ``smoke``); read before anything is written.
        ``device``: where it computes, for an experiment with :meth:`device_choices` (the network experiments:
        every run's :class:`~deepcollapse.nets.config.NetConfig` device; the basin atlases: the atlas's
        device); ``batch_seeds``: every run's NetConfig ``batch_seeds`` (network experiments only).  Others
        refuse them; they win over a settings file's and are checked before anything is written (a missing
        CUDA device included).  A network experiment that is not a smoke run first announces its runtime
        estimated on the device through ``announce`` (default: the log).  ``registry``: a best-known
        :class:`~deepcollapse.landscape.best_known.Registry` that the search experiments (best-known,
        depth-bound) offer their points to and whose rows (with the shipped ones) enter their tables;
        ``None`` (default): no registry is read or written.

        Parameters
        ----------
        out_dir : str or Path
            The output folder (created; one holding another experiment is refused unless ``force``).
        smoke : bool, default False
            Run the seconds-long smoke variant.
        executor : str, default "local"
            ``"local"`` or ``"ray"``.
        workers : int, optional
            Task processes (``None``: one per pending task up to the CPU count).
        ray_address : str, optional
            The Ray cluster to join.
        progress : bool, default False
            Progress bars and :meth:`Context.say` lines on stderr.
        force : bool, default False
            As above.
        data_dir : str or Path, optional
            As above.
        family : dict, optional
            As above.
        config : str or Path, optional
            As above.
        device : str, optional
            As above.
        batch_seeds : str or int, optional
            As above.
        announce : callable, optional
            Where the messages before the work go (default: the log).
        registry : Registry, optional
            As above.

        Returns
        -------
        Path
            ``out_dir/report.html``.

        Examples
        --------
        A one-table experiment (not registered):

        >>> import tempfile
        >>> body = lambda ctx: ctx.table(pd.DataFrame({"x": [1]}), "x", "One row.")
        >>> exp = Experiment("one-table", "demo", "none", "One table.", "none", "instant", "theory", body)
        >>> exp.run(tempfile.mkdtemp()).name
        'report.html'
        """
        check_executor_options(executor, workers)
        family = _check_experiment_family(self, family)
        run_options = _check_run_options(self, device, batch_seeds)
        settings = read_experiment_config(self, config, smoke, run_options)
        if isinstance(settings, NetRunOptions):  # the file's options under the command line's
            run_options = {k: v for k, v in settings.to_dict().items() if v is not None}
        out = check_output_folder(out_dir, option="--out").resolve()
        self._claim_folder(out, force)
        ctx = Context(
            self,
            out,
            smoke,
            executor,
            workers,
            ray_address,
            progress,
            force,
            None if data_dir is None else str(data_dir),
            family,
            settings,
            None if config is None else str(Path(config).resolve()),
            run_options,
            announce,
            registry,
        )
        load, t0 = _load_average(), time.perf_counter()
        self.body(ctx)
        ctx.settings_section.notes.append(measured_runtime(time.perf_counter() - t0, load))
        if smoke:  # say what was run, not only the full-size settings
            ctx.settings_section.text = (
                f"This report is the smoke variant. Actually run: {describe_configs(ctx.configs)}. "
                f"The full experiment: {self.settings}"
            )
        ctx.report.set_config(ctx.configs)
        path = ctx.report.write(out / "report.html")
        log.info("report written to %s", path)
        return path

    def _claim_folder(self, out: Path, force: bool) -> None:
        """Refuse an output folder that holds another experiment (or a sweep) unless ``force``; then mark it
        as this experiment's (``experiment.json``), so that two reports never mix in one folder."""
        import json

        marker = out / "experiment.json"
        other = None
        if marker.is_file():
            try:
                other = json.loads(marker.read_text()).get("name")
            except (OSError, ValueError, AttributeError):
                other = "an unreadable experiment.json"
        elif out.is_dir() and ((out / "sweep.yaml").is_file() or (out / "report.html").is_file()):
            other = "a sweep or another report"
        if other is not None and other != self.name and not force:
            raise ConfigError(
                f"--out == {str(out)!r}, must be an empty folder or one holding experiment {self.name!r} "
                f"(it holds {other if other.startswith(('a ', 'an ')) else repr(other)}); choose another "
                "folder, or pass --force to write into it anyway."
            )
        out.mkdir(parents=True, exist_ok=True)
        marker.write_text(json.dumps({"name": self.name, "paper": self.paper, "figure": self.figure}) + "\n")


#: MSE + ReLU, the papers' model (the family of every experiment without ``families``)
DEFAULT_FAMILY: dict[str, Any] = {"loss": "mse", "activation": "relu", "eps": None}


def family_options(family: dict[str, Any]) -> str:
    """The ``reproduce`` options that select ``family`` (empty for MSE + ReLU), with a leading space.

    Parameters
    ----------
    family : dict
        ``{"loss", "activation", "eps"}``.

    Returns
    -------
    str
        E.g. ``" --loss ce"`` or ``" --activation relu_eps --eps 0.1"``.

    Examples
    --------
    >>> family_options({"loss": "ce"}), family_options({"activation": "relu_eps", "eps": 0.1})
    (' --loss ce', ' --activation relu_eps --eps 0.1')
    >>> family_options(DEFAULT_FAMILY)
    ''
    """
    out = ""
    for key in ("loss", "activation", "eps"):
        value = family.get(key, DEFAULT_FAMILY[key])
        if value != DEFAULT_FAMILY[key]:
            out += f" --{key} {value:g}" if isinstance(value, float) else f" --{key} {value}"
    return out


def _check_experiment_family(experiment: Experiment, family: dict[str, Any] | None) -> dict[str, Any]:
    """The validated family of one run of ``experiment`` (one-line ``ConfigError`` naming the option).

    Parameters
    ----------
    experiment : Experiment
        The experiment to run; only one with ``families`` takes a family other than MSE + ReLU.
    family : dict or None
        ``{"loss", "activation", "eps"}`` as given (``None`` or missing keys: the defaults).

    Returns
    -------
    dict
        The three keys, ``eps`` a float or ``None``.
    """
    from deepcollapse._core.checks import check_float
    from deepcollapse.family import get_family

    fam = {**DEFAULT_FAMILY, **{k: v for k, v in (family or {}).items() if v is not None}}
    unknown = sorted(set(fam) - set(DEFAULT_FAMILY))
    if unknown:
        raise ConfigError(f"family has keys {unknown}, must have only loss, activation and eps.")
    if fam != DEFAULT_FAMILY and not experiment.families:
        takes = ", ".join(e.name for e in _REGISTRY.values() if e.families) or "none"
        first = next(k for k in DEFAULT_FAMILY if fam[k] != DEFAULT_FAMILY[k])
        raise ConfigError(
            f"--{first} == {fam[first]!r}, experiment {experiment.name!r} runs only the papers' MSE + ReLU "
            f"model; drop --loss / --activation / --eps, or run one that takes a model family ({takes})."
        )
    if fam["eps"] is not None:
        fam["eps"] = check_float("--eps", fam["eps"], gt=0.0)
    get_family(fam["loss"], fam["activation"], fam["eps"])  # ConfigError naming loss / activation / eps
    return fam


def _check_run_options(
    experiment: Experiment, device: str | None, batch_seeds: str | int | None
) -> dict[str, Any]:
    """The validated ``--device`` / ``--batch-seeds`` of one run of ``experiment`` (one-line ``ConfigError``).

    Parameters
    ----------
    experiment : Experiment
        The experiment to run: ``device`` needs one with :meth:`Experiment.device_choices` (the network
        experiments, the basin atlases), ``batch_seeds`` a network experiment (``kind == "net"``).
    device : str or None
        Where it computes (``None``: the experiment's own); ``cuda`` must exist here.
    batch_seeds : str, int or None
        ``auto``, ``on``, ``off`` or N (``None``: the experiment's own).

    Returns
    -------
    dict
        The given options (NetConfig fields; ``device`` is also the basin atlas's field).
    """
    given = {k: v for k, v in (("device", device), ("batch_seeds", batch_seeds)) if v is not None}
    if "batch_seeds" in given and experiment.kind != "net":
        nets = ", ".join(e.name for e in _REGISTRY.values() if e.kind == "net")
        raise ConfigError(
            f"--batch-seeds == {given['batch_seeds']!r}, experiment {experiment.name!r} trains no network; "
            f"drop --batch-seeds, or run a network experiment ({nets})."
        )
    if "device" in given:
        choices = experiment.device_choices()
        if not choices:
            takes = ", ".join(e.name for e in _REGISTRY.values() if e.device_choices() and e.kind != "net")
            raise ConfigError(
                f"--device == {given['device']!r}, experiment {experiment.name!r} has no device setting; "
                f"drop --device, or run one that computes where you say (the network experiments, {takes})."
            )
        check_choice("--device", given["device"], choices)
        if experiment.kind == "net":
            from deepcollapse.nets.build import select_device

            select_device(str(given["device"]))  # cuda (or mps) without one: the line naming what was found
        else:
            from deepcollapse._core.devices import check_cuda_device

            check_cuda_device("device", str(given["device"]))
    if "batch_seeds" in given:
        from deepcollapse.nets.config import check_batch_seeds

        given["batch_seeds"] = check_batch_seeds(given["batch_seeds"], "--batch-seeds")
    return given


def read_experiment_config(
    experiment: Experiment,
    path: str | Path | None,
    smoke: bool,
    overrides: dict[str, Any] | None = None,
) -> Any:
    r"""The settings of ``reproduce NAME --config FILE`` for ``experiment`` (one-line ``ConfigError`` naming
    ``--config`` or the file: an experiment without a settings file, ``--smoke`` beside it, the file's own
    errors), with ``overrides`` (the command line's ``--device`` / ``--batch-seeds``, validated) in place of
    the file's values.

    Parameters
    ----------
    experiment : Experiment
        The experiment to run; only one with a ``config_class`` takes a file.
    path : str, Path or None
        The YAML file as given (``None``: the shipped settings).
    smoke : bool
        ``--smoke`` was given (it runs the shipped seconds-long settings, so it excludes a file).
    overrides : dict, optional
        Fields set on the command line (validated), which win over the file's.

    Returns
    -------
    object or None
        An instance of ``experiment.config_class`` (``None`` without a file).

    Examples
    --------
    >>> import tempfile
    >>> from deepcollapse.experiments.registry import get_experiment
    >>> path = Path(tempfile.mkdtemp()) / "atlas.yaml"
    >>> _ = path.write_text("name: tiny\nsteps: 100\n")
    >>> atlas = read_experiment_config(get_experiment("basins"), path, smoke=False)
    >>> type(atlas).__name__, atlas.name, atlas.steps
    ('BasinAtlas', 'tiny', 100)
    """
    if path is None:
        return None
    config_class = experiment.config_class or (NetRunOptions if experiment.kind == "net" else None)
    if config_class is None:
        takes = (
            ", ".join(e.name for e in _REGISTRY.values() if e.config_class is not None or e.kind == "net")
            or "none"
        )
        raise ConfigError(
            f"--config == {str(path)!r}, experiment {experiment.name!r} has no settings file; drop --config, "
            f"or run one that takes one ({takes})."
        )
    if smoke and config_class is not NetRunOptions:
        raise ConfigError(
            f"--config == {str(path)!r} with --smoke, must be one of the two: --smoke runs the shipped "
            "seconds-long settings (a small settings file runs as fast)."
        )
    try:
        if not overrides:
            return config_class.from_yaml(Path(path))  # type: ignore[attr-defined]
        from deepcollapse._core.io import read_yaml

        data = read_yaml(Path(path), expected=f"{config_class.__name__} fields")  # a mapping, or one line
        return config_class.from_dict({**data, **overrides})  # type: ignore[attr-defined]
    except ConfigError as exc:
        text = str(exc)
        raise ConfigError(text if text.startswith(str(path)) else f"{path}: {text}") from None


_SYMBOLS = {"classes": "K", "layers": "L", "lam": "λ", "lam_h": "λ_H1", "lam_w": "λ_W", "width": "width"}


def _value(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, (list, tuple)):
        return "{" + ", ".join(_value(x) for x in v) + "}"
    return str(v)


def describe_configs(configs: dict[str, Any]) -> str:
    """One readable line per sweep or theory setting of ``Context.configs`` (the settings actually run).

    Parameters
    ----------
    configs : dict
        ``Context.configs``: name -> a sweep spec's ``to_dict()`` (with ``base``) or a flat dict of settings.

    Returns
    -------
    str
        The parts joined by ``" | "`` (``"see the configuration below"`` when there are none).

    Examples
    --------
    >>> describe_configs({"theory": {"classes": 10, "lam": 0.004},
    ...                   "sweep": {"base": {"classes": 10}, "grid": {"width": [16, 32]}, "seeds": [0, 1]}})
    'theory: K = 10, λ = 0.004 | sweep: K = 10; width ∈ {16, 32}; 2 seeds'
    """
    parts = []
    for name, cfg in configs.items():
        if not isinstance(cfg, dict):
            continue
        if "base" in cfg:  # a sweep spec
            base = ", ".join(f"{_SYMBOLS.get(k, k)} = {_value(v)}" for k, v in cfg["base"].items())
            grid = "; ".join(
                f"{_SYMBOLS.get(k, k)} ∈ {_value(v)}" for k, v in (cfg.get("grid") or {}).items()
            )
            points = cfg.get("points") or []
            seeds = cfg.get("seeds") or []
            text = f"{name}: {base}"
            text += f"; {grid}" if grid else ""
            text += f"; {len(points)} points {_value(points)}" if points else ""
            text += f"; {len(seeds)} seed{'s' if len(seeds) != 1 else ''}"
        else:
            text = f"{name}: " + ", ".join(f"{_SYMBOLS.get(k, k)} = {_value(v)}" for k, v in cfg.items())
        parts.append(text)
    return " | ".join(parts) if parts else "see the configuration below"


_REGISTRY: dict[str, Experiment] = {}


def register(experiment: Experiment) -> Experiment:
    """Add an experiment to the registry (names are unique).

    Parameters
    ----------
    experiment : Experiment
        The experiment; a name registered before is a ``ValueError``.

    Returns
    -------
    Experiment
        ``experiment`` itself.

    Examples
    --------
    >>> from deepcollapse.experiments.registry import get_experiment
    >>> register(get_experiment("fig3-left"))
    Traceback (most recent call last):
        ...
    ValueError: experiment 'fig3-left' registered twice
    """
    if experiment.name in _REGISTRY:
        raise ValueError(f"experiment {experiment.name!r} registered twice")
    _REGISTRY[experiment.name] = experiment
    return experiment


def registered() -> list[Experiment]:
    """The experiments registered so far, in registration order (importing a figure module registers its).

    Returns
    -------
    list of Experiment

    Examples
    --------
    >>> import deepcollapse.experiments.basins
    >>> {"basins", "basins-gpu"} <= {e.name for e in registered()}
    True
    """
    return list(_REGISTRY.values())

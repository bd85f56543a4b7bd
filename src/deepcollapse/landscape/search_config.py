"""What a global search is given and what it returns (:func:`~deepcollapse.landscape.search.search_dufm`).

``SearchConfig`` (the instance of eq. (1) and the search's knobs; each field a ``dufm search`` option; λ = 0
refused with :data:`NO_MINIMUM`), the results ``SearchSummary`` / ``SearchSolution`` (``summary.json``),
``SearchInterrupted`` and ``resume_command`` (the command line that resumes a search).  Every name here is
re-exported by :mod:`deepcollapse.landscape.search`.
"""

from __future__ import annotations

import shlex
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deepcollapse._core import flagship
from deepcollapse._core.checks import ConfigError, Interrupted, check_float, check_int
from deepcollapse._core.config import ConfigMixin
from deepcollapse._core.problem_fields import PROBLEM_HELP, check_problem_fields
from deepcollapse._core.results import Result
from deepcollapse.dufm.config import HoldsProblem
from deepcollapse.family.fields import activation_field, check_family_fields, eps_field, loss_field

if TYPE_CHECKING:
    pass

__all__ = [
    "NO_MINIMUM",
    "SearchConfig",
    "SearchInterrupted",
    "SearchSolution",
    "SearchSummary",
    "resume_command",
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


#: why a search refuses λ = 0 (one line; ``{name}`` is the field, rewritten to the option typed by the CLI)
NO_MINIMUM = (
    "{name} == 0, must be > 0 for a search: without regularisation eq. (1) has no minimum to find (scaling "
    "the weights up drives the loss down to its infimum 0, which cross-entropy never attains and MSE "
    "attains on a whole set of interpolating points); the regularisation is what makes a global minimum "
    "exist, so give λ > 0 (train λ = 0 with `deepcollapse dufm train`)."
)


class SearchInterrupted(Interrupted):
    """Raised after an interrupted search wrote its state; ``command`` (also ``resume``) resumes it.

    An :class:`~deepcollapse._core.checks.Interrupted` (a ``KeyboardInterrupt``), so a sweep of search points
    stops on it rather than going on with the next point."""

    def __init__(
        self, out_dir: Path, command: str, signum: int = signal.SIGINT, saved: str = "state saved"
    ) -> None:
        head, _, tail = saved.partition("; ")  # what is saved, then what else the message says (best loss)
        text = f"search interrupted; {head} in {out_dir}" + (f"; {tail}" if tail else "")
        super().__init__(signum, f"{text}; resume with: {command}", resume=command)
        self.out_dir = out_dir
        self.command = command
        self.saved = saved

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.out_dir, self.command, self.signum, self.saved))


#: minutes of wall time per call of a search that sets no ``rounds`` (``dufm search`` without --rounds)
DEFAULT_BUDGET = 30.0


@dataclass
class SearchConfig(HoldsProblem, ConfigMixin):
    """What to search: eq. (1) with ``classes, layers, n, lam_h, lam_w, width`` (``d_1 = .. = d_L``); how:
    ``runs`` GD starts per round, ``steps`` GD steps at rate ``lr``, ``polish_top`` polished per round,
    ``keep`` solutions written, ``seed``; when to stop: ``rounds`` (a count: the folder's total over every
    call, so an interrupted search re-run with the same command ends where an uninterrupted one does, on a
    busy or an idle machine) and/or ``budget`` (minutes of wall time per call, the default 30 when ``rounds``
    is unset; with ``rounds`` set and no ``budget`` there is no wall-clock limit).

    Each field's metadata is its command-line option (``deepcollapse dufm search``)."""

    # the problem's fields: the flagship's values, Problem's words (deepcollapse._core.problem_fields)
    classes: int = field(default=flagship.CLASSES, metadata={"help": PROBLEM_HELP["classes"]})
    layers: int = field(default=flagship.LAYERS, metadata={"help": PROBLEM_HELP["layers"]})
    n: int = field(default=flagship.N, metadata={"help": PROBLEM_HELP["n"]})
    lam_h: float = field(
        default=flagship.LAM, metadata={"help": PROBLEM_HELP["lam_h"] + " (overrides --lam)"}
    )
    lam_w: list[float] = field(
        default_factory=lambda: [flagship.LAM] * flagship.LAYERS,
        metadata={"help": PROBLEM_HELP["lam_w"] + " (overrides --lam)"},
    )
    width: int = field(default=flagship.WIDTH, metadata={"help": "d_1 = .. = d_L, one int (every layer)"})
    loss: str = loss_field()
    activation: str = activation_field()
    eps: float | None = eps_field()
    runs: int = field(default=32, metadata={"help": "GD starts per round"})
    steps: int = field(default=10_000, metadata={"help": "GD steps per round"})
    lr: float = field(default=0.5, metadata={"help": "GD learning rate"})
    polish_top: int = field(
        default=3, metadata={"help": "lowest distinct results polished in float64 per round"}
    )
    keep: int = field(default=5, metadata={"help": "solutions written"})
    seed: int = field(default=0, metadata={"help": "seed of the starts"})
    budget: float | None = field(
        default=None,
        metadata={
            "help": "minutes of wall time for this call (without --rounds a call always finishes one round)",
            "shown_default": "30 without --rounds, no limit with it",
        },
    )
    rounds: int | None = field(
        default=None,
        metadata={
            "help": "stop when the folder holds this many rounds (a count over every call: the same on a "
            "busy or an idle machine, and re-running the command after an interruption ends where an "
            "uninterrupted run does)",
            "shown_default": "only the budget",
        },
    )

    def __post_init__(self) -> None:
        K, L, n, lam_h, lam_w = check_problem_fields(
            self.classes, self.layers, self.n, self.lam_h, self.lam_w, min_layers=2
        )
        if lam_h == 0.0 or 0.0 in lam_w:  # the search's own rule: eq. (1) has a minimum only with λ > 0
            raise ConfigError(NO_MINIMUM.format(name="lam_h" if lam_h == 0.0 else "lam_w"))
        self.classes, self.layers, self.n, self.lam_h, self.lam_w = K, L, n, lam_h, lam_w
        self.width = check_int("width", self.width, min=self.classes)
        check_family_fields(self)  # ConfigError naming loss / activation / eps
        self.runs = check_int("runs", self.runs, min=1)
        self.steps = check_int("steps", self.steps, min=0)
        self.lr = check_float("lr", self.lr, gt=0.0)
        self.polish_top = check_int("polish_top", self.polish_top, min=1)
        self.keep = check_int("keep", self.keep, min=1)
        self.seed = check_int("seed", self.seed, min=0)
        if self.rounds is not None:
            self.rounds = check_int("rounds", self.rounds, min=1)
        if self.budget is None and self.rounds is None:
            self.budget = DEFAULT_BUDGET
        if self.budget is not None:
            self.budget = check_float("budget", self.budget, gt=0.0)

    def rounds_reached(self, rounds: int) -> bool:
        """Whether a folder holding ``rounds`` finished rounds (over every call) has the configured count
        (never without ``rounds``).

        Parameters
        ----------
        rounds : int
            The folder's finished rounds (``search.json``, ``summary.json``).

        Returns
        -------
        bool

        Examples
        --------
        >>> SearchConfig(rounds=4).rounds_reached(4), SearchConfig(budget=1.0).rounds_reached(99)
        (True, False)
        """
        return self.rounds is not None and rounds >= self.rounds

    def searched(self, rounds: int, elapsed_s: float) -> bool:
        """Whether a folder's search is complete for this configuration: its ``rounds`` reached
        (:meth:`rounds_reached`), or, with a ``budget``, its search time over every call at least the
        budget.  A table's point (:func:`~deepcollapse.runs.search_point.run_search_point`) that is
        complete is reused, not searched again.

        Parameters
        ----------
        rounds : int
            The folder's finished rounds.
        elapsed_s : float
            The folder's search time in seconds over every call (``summary.json``'s ``elapsed_s``).

        Returns
        -------
        bool

        Examples
        --------
        >>> SearchConfig(rounds=4).searched(3, 1e6), SearchConfig(budget=1.0).searched(1, 60.0)
        (False, True)
        """
        spent = self.budget is not None and elapsed_s >= 60.0 * self.budget
        return spent or self.rounds_reached(rounds)

    def problem_key(self) -> dict[str, Any]:
        """The fields that define the optimisation problem (a resumed search must match them; a state written
        before the family fields existed reads as MSE + ReLU).  A plain dict: the JSON ``problem`` entry of
        ``search.json`` and ``summary.json``, compared key by key on resume.

        Returns
        -------
        dict
            ``classes, layers, n, lam_h, lam_w, width, loss, activation, eps``.

        Examples
        --------
        >>> config = SearchConfig(classes=3, layers=2, n=1, lam_h=0.01, lam_w=[0.01, 0.01], width=3)
        >>> config.problem_key()["width"], config.problem_key()["loss"]
        (3, 'mse')
        """
        keys = ("classes", "layers", "n", "lam_h", "lam_w", "width", "loss", "activation", "eps")
        return {k: getattr(self, k) for k in keys}


def resume_command(out: Path, config: SearchConfig) -> str:
    """The ``deepcollapse dufm search`` command line that resumes the search of ``config`` in ``out``.

    Parameters
    ----------
    out : Path
        The search folder (shell-quoted).
    config : SearchConfig
        The search's settings (the family, ``--budget`` and ``--rounds`` only where set).

    Returns
    -------
    str
        One line.

    Examples
    --------
    >>> from pathlib import Path
    >>> config = SearchConfig(classes=3, layers=2, n=1, lam_h=0.01, lam_w=[0.01, 0.01], width=3)
    >>> print(resume_command(Path("my search"), config))  # doctest: +NORMALIZE_WHITESPACE
    deepcollapse dufm search --classes 3 --layers 2 --n 1 --lam-h 0.01 --lam-w 0.01,0.01 --width 3 --seed 0
    --runs 32 --steps 10000 --lr 0.5 --keep 5 --polish-top 3 --budget 30 --out 'my search'
    """
    lam_w = ",".join(f"{x:g}" for x in config.lam_w)
    return (
        f"deepcollapse dufm search --classes {config.classes} --layers {config.layers} --n {config.n} "
        f"--lam-h {config.lam_h:g} --lam-w {lam_w} --width {config.width} --seed {config.seed} "
        + ("" if config.loss == "mse" else f"--loss {config.loss} ")
        + ("" if config.activation == "relu" else f"--activation {config.activation} ")
        + ("" if config.eps is None else f"--eps {config.eps!r} ")
        + f"--runs {config.runs} --steps {config.steps} --lr {config.lr:g} --keep {config.keep} "
        f"--polish-top {config.polish_top}"
        + ("" if config.budget is None else f" --budget {config.budget:g}")
        + ("" if config.rounds is None else f" --rounds {config.rounds}")
        + f" --out {shlex.quote(str(out))}"
    )

"""The typed results of the DUFM classification: :class:`DUFMRun` (one run) and :class:`DUFMSummary` (a fit or
a run folder), returned by :func:`~deepcollapse.dufm.classify.classify` and
:func:`~deepcollapse.dufm.summary.analyze_dufm`; ``summary.json`` is ``DUFMSummary.to_dict()``.  Also the
steps under them: :class:`PolishResult` (:func:`~deepcollapse.dufm.classify.polish`) and
:class:`RunObservation` (:func:`~deepcollapse.dufm.trainer.observe_run`, a record of ``metrics.jsonl``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from deepcollapse._core.results import Result, to_jsonable
from deepcollapse.theory.compare import Comparison

if TYPE_CHECKING:
    from deepcollapse.dufm.config import DUFMConfig

__all__ = ["DUFMRun", "DUFMSummary", "PolishResult", "RunObservation"]


@dataclass(frozen=True, eq=False, kw_only=True)
class DUFMRun(Result):
    """One run of a DUFM run folder, analysed in float64 from ``params.pt`` (an entry of
    :attr:`~deepcollapse.dufm.summary.DUFMSummary.runs`; the classification rules are in the module
    docstring).  :func:`~deepcollapse.dufm.classify.classify_run` returns one without ``run`` and ``seed``.

    A diverged run holds only ``run, seed, diverged, diverged_step, final_loss, fit, reg, classification,
    ranks, ranks_pre, dnc1, dnc2_cond, polished_loss, grad_norm, srg_gram_distance, below_dnc`` (all but the
    first four ``None`` / ``False``); ``norms``, ``loss_decrease_last_10pct`` and ``polish_*`` are absent.
    Those fields but ``run`` and ``seed`` are required (keyword-only); ``from_dict`` reads one an older file
    lacks as ``None``.

    Attributes
    ----------
    run : int
        Index of the run in the folder (``0 .. runs − 1``).
    seed : int
        Its seed (``config.seed + run``).
    diverged : bool
        Marked diverged by the trainer, or its final parameters are not finite.
    diverged_step : int or None
        The step at which the trainer marked it diverged.
    final_loss, fit, reg : float or None
        Eq. (1) (or the family's objective) and its two terms at the final parameters.
    norms : dict
        ``{"H1": ‖H_1‖_F, "W": [‖W_l‖_F ...]}`` (they grow without bound at λ = 0).
    grad_norm : float or None
        ``‖∇ eq.(1)‖_F`` at the final parameters (float64).
    loss_decrease_last_10pct : float or None
        Relative loss decrease over the last 10 % of the steps (``metrics.jsonl``).
    ranks : list of int or None
        Numerical ranks of the post-activation class means ``M_1 .. M_L`` (tolerance ``rank_rtol · σ_1``).
    ranks_pre : list of int or None
        Those of the pre-activation class means ``M~_2 .. M~_L``.
    dnc1 : list of float or None
        ``tr Σ_W / tr Σ_B`` of ``H_1 .. H_L``.
    dnc2_cond : list of float or None
        ``σ_1 / σ_K`` of ``M_1 .. M_L``.
    srg_gram_distance : float or None
        Distance of the cosine Gram matrix of ``M_L`` to the SRG's, up to a permutation (``K >= 6``).
    classification : str
        One of :data:`CLASSIFICATIONS`.
    polished_loss : float or None
        The lowest explicit loss with the run's class-mean structure (:func:`polish`); ``None`` without a
        closed form, or with ``config.polish`` false.
    polish_scales : list of float or None
        The scales ``c_l`` of the polished structure.
    polish_source : {'learned', 'collapsed', 'zero', 'run'} or None
        Which class means the polish started from; ``'run'``: no re-fit is lower than the run's own point,
        which is kept (``polished_loss == final_loss``).
    polish_refit_loss : float or None
        The lowest loss of the collapsed re-fits (may be above ``final_loss`` for a run that has not
        collapsed).
    below_dnc : bool
        ``final_loss < loss_dnc``.
    steps_to_verdict : int or None
        For a run labelled ``not_converged`` that is still moving: about how many more steps at the observed
        rate until the gradient norm reaches ``GRAD_TOL`` or the loss stops falling
        (:func:`steps_to_verdict`).
    convergence_note : str or None
        In words: how far the run is from a verdict and why (``not_converged`` runs only).
    """

    run: int | None = None
    seed: int | None = None
    diverged: bool | None
    diverged_step: int | None
    final_loss: float | None
    fit: float | None
    reg: float | None
    norms: dict[str, Any] | None = None
    grad_norm: float | None
    loss_decrease_last_10pct: float | None = None
    ranks: list[int] | None
    ranks_pre: list[int] | None
    dnc1: list[float | None] | None
    dnc2_cond: list[float | None] | None
    srg_gram_distance: float | None
    classification: str | None
    polished_loss: float | None
    polish_scales: list[float] | None = None
    polish_source: str | None = None
    polish_refit_loss: float | None = None
    below_dnc: bool | None
    steps_to_verdict: int | None = None
    convergence_note: str | None = None


@dataclass(frozen=True, eq=False)
class DUFMSummary(Result):
    """The analysis of a DUFM run folder (``summary.json``) or of a fit in memory: returned by
    :func:`~deepcollapse.dufm.summary.analyze_dufm`, :func:`~deepcollapse.dufm.classify.classify`,
    :func:`~deepcollapse.dufm.trainer.train_dufm` and :func:`~deepcollapse.dufm.trainer.resume_dufm`.

    A training stopped early on purpose (``max_steps``) returns a summary holding only ``step`` and
    ``finished = False`` (its other fields are ``None`` and absent from ``to_dict()``).  Read-only key access
    (``summary["runs"][0]["classification"]``) works as for the dict of earlier releases.

    Attributes
    ----------
    loss_dnc, loss_srg : float or None
        The closed-form optimal DNC and SRG losses of the problem (``None`` without a closed form;
        ``loss_srg`` also where SRG is undefined, ``K < 6``).
    loss_zero : float or None
        The fit of the all-zero network (1/2 for MSE, ``log K`` for cross-entropy).
    step : int
        The step of the parameters analysed.
    finished : bool
        ``step == config.steps``.
    best_loss : float or None
        The lowest final loss over the runs that did not diverge.
    n_below_dnc : int or None
        How many runs ended below ``loss_dnc``.
    classifications : dict of str to int or None
        Number of runs per label of :data:`~deepcollapse.dufm.classify.CLASSIFICATIONS` (labels with no run
        are absent).
    criteria : dict or None
        The tolerances of the classification (``zero_tol, grad_tol, plateau_tol, gram_tol, dnc2_tol,
        dnc_converging_cond, dnc_converging_gap, rank_rtol``).
    theory : Comparison or None
        :func:`~deepcollapse.dufm.classify.theory_of`: the :class:`~deepcollapse.theory.compare.Comparison`
        plus the key ``closed_form: True``, or, without a closed form, one holding only ``closed_form:
        False, note, family, loss_dnc: None, loss_srg: None, loss_zero`` (``summary.json``'s ``theory`` is
        its ``to_dict()``).
    config : DUFMConfig, dict or None
        The run's :class:`~deepcollapse.dufm.config.DUFMConfig` (``summary.json`` holds its ``to_dict()``).
        A summary read from an earlier release's file keeps that file's ``config`` dict for ``to_dict()``
        (key for key: the file is rewritten unchanged) while ``config`` is the validated config; a config
        that no longer validates stays the dict it was.  Key access, ``summary["config"]``, gives the dict
        (as in earlier releases).
    runs : list of DUFMRun or None
        One entry per run.
    """

    _nested = {"runs": DUFMRun, "theory": Comparison}

    loss_dnc: float | None = None
    loss_srg: float | None = None
    loss_zero: float | None = None
    step: int = 0  # present in every summary, also one stopped early (max_steps)
    finished: bool = False
    best_loss: float | None = None
    n_below_dnc: int | None = None
    classifications: dict[str, int] | None = None
    criteria: dict[str, float] | None = None
    theory: Comparison | None = None
    config: DUFMConfig | dict[str, Any] | None = None
    runs: list[DUFMRun] | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DUFMSummary:
        """The summary held by ``data`` (a ``summary.json`` of this or an earlier release); its ``config``
        dict becomes a :class:`~deepcollapse.dufm.config.DUFMConfig` (the dict itself is kept for
        ``to_dict()``, so that a file read and written back is unchanged).

        Parameters
        ----------
        data : mapping
            The keys of the class docstring.

        Returns
        -------
        DUFMSummary

        Examples
        --------
        >>> s = DUFMSummary.from_dict({"step": 5, "finished": True, "config": {"classes": 3, "steps": 5}})
        >>> s.config.classes, s.config.problem.classes, s.to_dict()["config"]
        (3, 3, {'classes': 3, 'steps': 5})
        """
        raw = data.get("config") if isinstance(data, Mapping) and not isinstance(data, cls) else None
        obj = super().from_dict(data)
        if isinstance(raw, Mapping):
            object.__setattr__(obj, "_config_data", dict(raw))
        return obj

    @classmethod
    def _read(cls, name: str, value: Any) -> Any:
        if name == "config" and isinstance(value, Mapping):
            import warnings

            from deepcollapse._core.checks import ConfigError
            from deepcollapse.dufm.config import DUFMConfig

            try:
                with warnings.catch_warnings():  # an old key renamed since: the file is read as it is
                    warnings.simplefilter("ignore", DeprecationWarning)
                    return DUFMConfig.from_dict(dict(value))
            except ConfigError:  # a config of an earlier release that no longer validates: kept as read
                return dict(value)
        return super()._read(name, value)

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready dict (``summary.json``); ``config`` as read from a file, else the config's
        ``to_dict()``.

        Returns
        -------
        dict

        Examples
        --------
        >>> DUFMSummary.from_dict({"step": 0, "finished": False}).to_dict()
        {'step': 0, 'finished': False}
        """
        out = super().to_dict()
        if "config" in out:
            out["config"] = self["config"]
        return out

    def __getitem__(self, key: str) -> Any:
        # key access is the dict of earlier releases: ``summary["config"]`` is the config as a dict
        value = super().__getitem__(key)
        if key == "config" and value is not None:
            raw = self.__dict__.get("_config_data")
            return to_jsonable(raw if raw is not None else value)
        return value


@dataclass(frozen=True, eq=False)
class PolishResult(Result):
    """The polish of one run's class-mean structure: returned by :func:`~deepcollapse.dufm.classify.polish`
    (the module docstring of :mod:`deepcollapse.dufm.classify` says how); the ``polished_loss``,
    ``polish_scales`` and ``polish_source`` of a :class:`DUFMRun` are read off it.

    Attributes
    ----------
    polished_loss : float or None
        The lowest explicit eq. (1) value found with the structure (``0.5`` for all-zero class means).
    scales : list of float or None
        The scales ``c_2 .. c_L`` of the pre-ReLU class means ``M~_2 .. M~_L`` at that value (``None`` where
        the run's own point is kept).
    source : {'learned', 'collapsed', 'zero', 'run'} or None
        Which class means it started from: the learned ones, those of the collapsed network, all zero, or
        (in :func:`~deepcollapse.dufm.classify.classify_run`) the run's own point.
    """

    polished_loss: float | None = None
    scales: list[float] | None = None
    source: str | None = None


@dataclass(frozen=True, eq=False)
class RunObservation(Result):
    """The loss parts and per-layer collapse metrics of one run at one step: returned by
    :func:`~deepcollapse.dufm.trainer.observe_run`; a record of ``metrics.jsonl`` is its ``to_dict()`` with
    ``step, run, seed`` in front and ``diverged`` before ``layers``.

    Attributes
    ----------
    loss, fit, reg : float or None
        Eq. (1) (or the family's objective) and its two terms, float64 (``None`` where not finite).
    layers : list of dict
        One entry per feature layer, ``1 post`` (``H_1``), then ``l pre`` (``H~_l``) and ``l post`` (``H_l``)
        for ``l = 2 .. L``: ``{layer, kind, dnc1, dnc2_cond, rank, singular_values}`` (``dnc1 = tr Σ_W /
        tr Σ_B``; ``dnc2_cond = σ_1 / σ_K``, ``rank`` and ``singular_values`` of the class-mean matrix
        ``M_l``); empty where the loss or the features are not finite.
    """

    loss: float | None = None
    fit: float | None = None
    reg: float | None = None
    layers: list[dict[str, Any]] | None = None

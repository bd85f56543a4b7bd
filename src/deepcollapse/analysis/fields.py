"""The one table of field names: how every column of a run table is written in figures, captions and reports.

Each entry of :data:`FIELDS` gives a column three renderings: ``label`` for axes (may use mathtext
``$…$``), ``text`` for HTML captions (plain Unicode: HTML does not render mathtext) and ``meaning``, the
sentence printed under every report table that shows the column.  Per-layer columns (``rank_3``,
``dnc1_2``) are matched by their prefix (:data:`LAYER_FIELDS`); aggregated columns (``final_loss_mean``,
``final_loss_std``) by their suffix.  Nothing here imports matplotlib or pandas.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "FIELDS",
    "LAYER_FIELDS",
    "PROBABILITIES",
    "Field",
    "explanations",
    "field_label",
    "field_meaning",
    "field_text",
]


@dataclass(frozen=True)
class Field:
    """How one column is written: ``label`` on axes (mathtext allowed), ``text`` in captions (plain Unicode,
    defaults to ``label``), ``meaning`` under tables (one sentence; empty: self-explanatory)."""

    label: str
    text: str = ""
    meaning: str = ""

    @property
    def caption(self) -> str:
        """The caption text: ``text``, else ``label``.

        Returns
        -------
        str
            Plain Unicode where ``text`` is given.

        Examples
        --------
        >>> Field(r"width $d_l$", "width d_l").caption, Field("classes K").caption
        ('width d_l', 'classes K')
        """
        return self.text or self.label


_L_DNC, _L_SRG = r"$L_{\mathrm{DNC}}$", r"$L_{\mathrm{SRG}}$"

#: Every named column (config fields that sweeps vary, per-run results, theory values, aggregates).
FIELDS: dict[str, Field] = {
    # configuration (swept fields)
    "lam": Field(
        r"weight decay $\lambda$ (every parameter)",
        "weight decay λ (every parameter)",
        "one λ for λ_H1 and every λ_W (the sweep alias)",
    ),
    "lam_h": Field(
        r"regularisation $\lambda_{H_1}$", "regularisation λ_H1", "weight decay of the free features H_1"
    ),
    "lam_w": Field(r"regularisation $\lambda_W$", "regularisation λ_W", "weight decay of W_1 … W_L"),
    "width": Field(r"width $d_l$", "width d_l", "rows of every hidden feature matrix H_l"),
    "classes": Field("classes K", meaning="number of classes"),
    "n": Field("samples per class n", meaning="N = K n samples in all"),
    "layers": Field("layers L", meaning="number of weight matrices W_1 … W_L"),
    "lr": Field(r"learning rate $\eta$", "learning rate η", "(initial) step size of gradient descent"),
    "steps": Field("gradient steps", meaning="full-batch gradient steps per run"),
    "eps": Field(
        r"$\varepsilon$ of $\sigma_\varepsilon$", "ε of σ_ε", "smoothing of the ReLU (Definition 7)"
    ),
    "activation": Field(r"activation $\sigma$", "activation σ"),
    "init_scale": Field("initial std", meaning="std of the initial entries of H_1, W_1 … W_L"),
    "reg": Field("regularisation term", meaning="the weight-decay part of the loss at the end"),
    "seed": Field("seed", meaning="random seed of the run"),
    "point": Field("grid point", meaning="the sweep point (its overrides of the base config)"),
    "run_dir": Field("run folder", meaning="where the run's config.yaml, metrics.jsonl and summary.json are"),
    "n_runs": Field("runs", meaning="runs (seeds) at this point"),
    # training results
    "step": Field("gradient step"),
    "epoch": Field("epoch"),
    "final_loss": Field(
        r"final loss $f(\theta)$",
        "final loss f(θ)",
        "training loss (eq. (1): fit + regularisation) at the end",
    ),
    "loss": Field(
        r"training loss $f(\theta)$",
        "training loss f(θ)",
        "eq. (1), fit + regularisation (at the end of training, or of the solution in that row)",
    ),
    "best_loss": Field("best loss", meaning="lowest loss found (search runs)"),
    "fit": Field(
        r"fit $\|W_L H_L - Y\|_F^2 / (2N)$",
        "fit ‖W_L H_L − Y‖²_F / (2N)",
        "the data term of the loss at the end",
    ),
    "classification": Field(
        "classification",
        meaning="the trainer's verdict on the end point: dnc, dnc_converging, srg_like, low_rank, zero, "
        "not_converged or diverged",
    ),
    "diverged": Field("P(diverged)", meaning="1 if the loss became non-finite (its losses are left out)"),
    "loss_dnc": Field(_L_DNC, "L_DNC", "optimal loss of the DNC construction (closed form, Theorem 3)"),
    "loss_srg": Field(_L_SRG, "L_SRG", "optimal loss of the best SRG construction (closed form)"),
    # best-known tables (deepcollapse.experiments.search_experiments, depth_bound)
    "best_over_dnc": Field(
        "best / " + _L_DNC,
        "best / L_DNC",
        "best_loss / loss_dnc; below 1: the search found a point below DNC",
    ),
    "best_over_srg": Field(
        "best / " + _L_SRG,
        "best / L_SRG",
        "best_loss / loss_srg; below 1: below the SRG construction (empty where SRG is undefined)",
    ),
    "loss_dnc_family": Field(
        r"$L_{\mathrm{DNC}}$ of the family",
        "L_DNC of the family",
        "loss of the DNC construction for the row's model family: the closed form under MSE + ReLU, "
        "else with its scales and last layer re-optimised for that loss (theory.family_compare; under "
        "cross-entropy L_DNC^CE, no closed form)",
    ),
    "loss_srg_family": Field(
        r"$L_{\mathrm{SRG}}$ of the family",
        "L_SRG of the family",
        "loss of the SRG construction re-optimised for the row's model family, as loss_dnc_family "
        "(empty where SRG is undefined)",
    ),
    "best_over_dnc_family": Field(
        "best / " + r"$L_{\mathrm{DNC}}$ of the family",
        "best / L_DNC of the family",
        "best_loss / loss_dnc_family; below 1: the search found a point below DNC for that family",
    ),
    "best_over_srg_family": Field(
        "best / " + r"$L_{\mathrm{SRG}}$ of the family",
        "best / L_SRG of the family",
        "best_loss / loss_srg_family; below 1: below the re-optimised SRG construction",
    ),
    "structure": Field(
        "structure",
        meaning="classification of the best solution (dnc, srg_like, low_rank, zero, ...), as the trainer's",
    ),
    "rank_profile": Field(
        "rank profile",
        meaning="numerical ranks of the post-activation class means M_1-M_2-…-M_L of the best solution",
    ),
    "verdict": Field(
        "verdict",
        meaning="the Hessian / Clarke verdict on the best solution (dufm landscape): local minimum, saddle, "
        "not critical, or undecided at kinks",
    ),
    "fit_term": Field(
        "fit term", meaning="the loss of the row's model family: mse (squared error) or ce (cross-entropy)"
    ),
    "sv_counts": Field(
        "singular values per layer",
        meaning="per layer M_1-M_2-…-M_L: singular values of the class means above 1e-3 σ_1(M_l), recomputed "
        "in float64 from the saved solution",
    ),
    "sv_count_max": Field(
        "largest count over M_2 … M_L",
        meaning="the largest of sv_counts over the hidden layers M_2 … M_L (the quantity bounded in depth by "
        "Garrod & Keating 2025)",
    ),
    "sv_count_min": Field(
        "smallest count over M_2 … M_L", meaning="the smallest of sv_counts over the hidden layers M_2 … M_L"
    ),
    "mean_rank": Field(
        r"average rank of $M_2, \ldots, M_{L-1}$",
        "average rank of M_2 … M_{L-1}",
        "mean numerical rank of the intermediate post-ReLU class means M_2 … M_{L-1} (singular values "
        "above rank_rtol · σ_1); K = DNC, lower = low-rank (2024 Fig. 3 middle)",
    ),
    "is_dnc": Field(
        "P(DNC)", meaning="1 if the run was classified dnc, else 0; its mean over seeds is P(DNC)"
    ),
    "reaches_dnc": Field(
        "P(DNC or heading to DNC)", meaning="1 if classified dnc or dnc_converging; its mean is a probability"
    ),
    "below_dnc": Field(
        r"P($f(\theta) < L_{\mathrm{DNC}}$)",
        "P(f(θ) < L_DNC)",
        "1 if the final loss is below L_DNC (the run found something better than DNC), else 0",
    ),
    "loss_ratio_srg": Field(
        r"$f(\theta)$ / " + _L_SRG, "f(θ) / L_SRG", "final loss divided by L_SRG (1 = as good as SRG)"
    ),
    "train_acc": Field("training accuracy"),
    "test_acc": Field("test accuracy"),
    "avg_rank": Field(
        r"average rank of $\tilde M_2, \ldots, \tilde M_L$",
        "average rank of M~_2 … M~_L",
        "mean numerical rank of the head's class means",
    ),
    "min_rank": Field("smallest rank over M_2 … M_L", meaning="lowest numerical rank over M_2 … M_L"),
    "rank_last": Field("rank of M_L", meaning="numerical rank of the last hidden layer's class means"),
    "dnc1": Field(
        r"DNC1 = tr$(\Sigma_W)$ / tr$(\Sigma_B)$",
        "DNC1 = tr(Σ_W) / tr(Σ_B)",
        "within-class over between-class variability (0 = collapsed)",
    ),
    # theory (deepcollapse.theory.compare)
    "ratio": Field(
        _L_SRG + " / " + _L_DNC,
        "L_SRG / L_DNC",
        "L_SRG / L_DNC; below 1: the SRG construction beats DNC (Theorem 5)",
    ),
    "loss_zero": Field("loss of the all-zero point", meaning="always 1/2"),
    "rank_dnc": Field("rank of DNC", meaning="rank of the intermediate class means of DNC (K, or 0 at zero)"),
    "rank_srg": Field("rank of SRG", meaning="rank of the intermediate class means of the SRG construction"),
    "rank_srg_post": Field("rank of ReLU(M~_L) of SRG", meaning="rank of the last layer after the ReLU"),
    "srg_construction": Field(
        "SRG construction", meaning="which construction L_SRG is (def9, def11.1, def11.2)"
    ),
    "srg_beats_dnc": Field("SRG beats DNC", meaning="L_SRG < L_DNC"),
    "Lambda": Field(r"$\Lambda$", "Λ", "Λ = n λ_H1 Π_l λ_W_l, on which every optimal loss depends"),
    "r": Field(r"$r$", "r", "the SRG graph's vertices: K = r(r − 1)/2 classes (2024 Fig. 3 left)"),
    "solution": Field("solution", meaning="which construction (DNC or SRG) the row describes"),
    "matrix": Field("matrix", meaning="which class-mean or Gram matrix of that solution"),
    "rank": Field("rank", meaning="numerical rank of that matrix"),
    "zero_threshold": Field(
        r"$\Lambda^*$", "Λ*", "above Λ* the all-zero point is the optimal DNC point (L_DNC = 1/2)"
    ),
    # the basin atlas (deepcollapse.experiments.basins)
    "cell": Field("cell", meaning="the atlas setting: K, L, n, width d, λ, learning rate η and init scale α"),
    "init_factor": Field(
        r"init scale $\alpha$",
        "init scale α",
        "factor α on the trainer's default initial stds (H_1: 1, W_l: 1/√d_l); α = 1 is the default",
    ),
    "reference_loss": Field(
        "reference loss",
        meaning="the cell's best-known loss (a best-known table) or min(L_DNC, L_SRG); column reference says "
        "which",
    ),
    "reference": Field("reference", meaning="where the reference loss comes from"),
    "loss_over_best": Field(
        "final loss / reference loss",
        meaning="final loss over the cell's reference loss (1 = as low as the best known; below 1 = lower)",
    ),
    "grad_norm": Field(r"$\|\nabla f\|_F$", "‖∇f‖_F", "norm of the float64 gradient at the end of training"),
    "ratio_min": Field(
        "lowest loss ratio", meaning="smallest final loss / reference loss over the cell's runs"
    ),
    "ratio_median": Field("median loss ratio", meaning="median of final loss / reference loss over the runs"),
    "ratio_max": Field(
        "highest loss ratio", meaning="largest final loss / reference loss (diverged runs out)"
    ),
    **{
        f"p_{c}": Field(
            f"P({words})",
            meaning=f"fraction of the runs classified {what}",
        )
        for c, words, what in (
            ("reaches_dnc", "DNC or heading to DNC", "dnc or dnc_converging"),
            ("dnc", "DNC", "dnc"),
            ("dnc_converging", "heading to DNC", "dnc_converging"),
            ("srg_like", "SRG-like", "srg_like"),
            ("low_rank", "low rank", "low_rank"),
            ("zero", "zero", "zero (the all-zero point)"),
            ("not_converged", "not converged", "not_converged"),
            ("diverged", "diverged", "diverged"),
        )
    },
}

#: Per-layer columns ``<prefix>_<l>``: (axis label, caption text, meaning), formatted with the layer ``l``.
LAYER_FIELDS: dict[str, tuple[str, str, str]] = {
    "rank": (
        r"rank of $M_{{{l}}}$",
        "rank of M_{l}",
        "numerical rank of the post-ReLU class means M_l (singular values above rank_rtol · σ_1; "
        "layer 1 = H_1)",
    ),
    "sv_count": (
        r"singular values of $M_{{{l}}}$ above $10^{{-3}}\sigma_1$",
        "singular values of M_{l} above 1e-3 σ_1",
        "number of singular values of the class means M_l above 1e-3 σ_1(M_l), recomputed in float64 from"
        " the saved solution (layer 1 = H_1; empty beyond the row's L)",
    ),
    "dnc1": (
        r"DNC1 of $H_{{{l}}}$",
        "DNC1 of H_{l}",
        "tr(Σ_W) / tr(Σ_B) of the post-ReLU features H_l at the end (0 = collapsed)",
    ),
    "dnc2_cond": (
        r"condition number of $M_{{{l}}}$",
        "condition number of M_{l}",
        "σ_1 / σ_K of the class means M_l (1 = an orthogonal frame, DNC2)",
    ),
    "effective_rank": (
        r"effective rank of $M_{{{l}}}$",
        "effective rank of M_{l}",
        "exp of the entropy of the normalised singular values of M_l",
    ),
}

#: Columns that are one Bernoulli outcome per run (0 or 1): their mean over runs is a probability, drawn
#: with binomial (Wilson) intervals, never mean ± std.
PROBABILITIES = ("is_dnc", "reaches_dnc", "below_dnc", "diverged")

_SUFFIXES = {
    "_mean": "mean over seeds of",
    "_std": "sample standard deviation (ddof = 1) over seeds of",
    "_lo": "lower end of the binomial Wilson 95 % interval of",
    "_hi": "upper end of the binomial Wilson 95 % interval of",
}
_LAYER = re.compile(r"^(?P<prefix>[a-z_0-9]+?)_(?P<layer>\d+)$")


def _lookup(name: str) -> tuple[str, str, str] | None:
    if name in FIELDS:
        f = FIELDS[name]
        return f.label, f.caption, f.meaning
    m = _LAYER.match(name)
    if m and m["prefix"] in LAYER_FIELDS:
        label, text, meaning = LAYER_FIELDS[m["prefix"]]
        layer = m["layer"]
        return label.format(l=layer), text.format(l=layer), meaning
    return None


def field_label(name: str) -> str:
    """The axis label of column ``name`` (words and symbols; mathtext allowed), else ``name`` itself.

    Parameters
    ----------
    name : str
        A column name (``lam_h``, ``final_loss``, ``rank_3``).

    Returns
    -------
    str
        E.g. ``"regularisation $\\lambda_{H_1}$"``.

    Examples
    --------
    >>> print(field_label("lam_h"))
    regularisation $\\lambda_{H_1}$
    >>> field_label("rank_3"), field_label("my_column")
    ('rank of $M_{3}$', 'my_column')
    """
    found = _lookup(name)
    return found[0] if found else name


def field_text(name: str) -> str:
    """The caption text of column ``name`` (plain Unicode, for HTML), else ``name`` itself.

    Parameters
    ----------
    name : str
        A column name.

    Returns
    -------
    str
        E.g. ``"final loss f(θ)"``.

    Examples
    --------
    >>> field_text("lam_h"), field_text("rank_3")
    ('regularisation λ_H1', 'rank of M_3')
    """
    found = _lookup(name)
    return found[1] if found else name


def field_meaning(name: str) -> str | None:
    """One sentence saying what column ``name`` holds (``<col>_mean``/``_std`` included), or ``None``.

    Parameters
    ----------
    name : str
        A column name of a run table or of an aggregated table.

    Returns
    -------
    str or None
        ``None`` when the column is not in the table or needs no explanation.

    Examples
    --------
    >>> field_meaning("width"), field_meaning("width_mean"), field_meaning("my_column")
    ('rows of every hidden feature matrix H_l', 'mean over seeds of width', None)
    """
    for suffix, words in _SUFFIXES.items():
        if name.endswith(suffix) and _lookup(name[: -len(suffix)]) is not None:
            return f"{words} {name[: -len(suffix)]}"
    found = _lookup(name)
    return found[2] or None if found else None


def explanations(columns: Iterable[str]) -> list[tuple[str, str]]:
    """``(column, meaning)`` for every column with a meaning, in order; ``<col>_mean``/``<col>_std`` pairs
    are explained once, through ``<col>``, and per-layer columns once per prefix (``rank_<l>``).

    Parameters
    ----------
    columns : iterable of str
        The columns of a table.

    Returns
    -------
    list of (str, str)
        Column (or pattern) and its meaning, each once.

    Examples
    --------
    >>> [column for column, _ in explanations(["width", "rank_2", "rank_3", "final_loss_mean"])]
    ['width', 'rank_<l>', 'final_loss', '<column>_mean']
    """
    out: dict[str, str] = {}
    suffixes: dict[str, str] = {}
    for col in columns:
        base = col
        for suffix, words in _SUFFIXES.items():
            if col.endswith(suffix) and _lookup(col[: -len(suffix)]) is not None:
                base = col[: -len(suffix)]
                suffixes.setdefault(f"<column>{suffix}", f"the {words} <column>")
        m = _LAYER.match(base)
        key = f"{m['prefix']}_<l>" if m and base not in FIELDS and m["prefix"] in LAYER_FIELDS else base
        meaning = field_meaning(base)
        if meaning:
            out.setdefault(key, meaning)
    return [*out.items(), *suffixes.items()]

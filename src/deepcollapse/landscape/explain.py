"""The landscape's verdicts in words: what each verdict means (:data:`MEANINGS`, one paragraph per verdict of
:data:`~deepcollapse.landscape.verdicts.VERDICTS`, shown by ``deepcollapse dufm landscape --help``) and
:func:`explain`, the verdict of one result with its numbers (printed by the command and written to
``landscape.json`` as ``explanation``).

Plain Python (no numpy): ``--help`` builds its epilog from this module.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["FAMILIES", "MEANINGS", "explain", "verdicts_epilog"]

#: What each verdict means, whatever the point: the one table behind ``--help`` and :func:`explain`.
MEANINGS: dict[str, str] = {
    "local minimum": (
        "The gradient of the smooth piece is zero (‖∇f‖ <= grad_tol) and no Hessian eigenvalue off the "
        "symmetry directions is below −eig_tol: the second-order necessary condition of a local minimum "
        "holds. Eigenvalues within eig_tol of 0 off the symmetries (near-zero modes) leave it non-strict. "
        "With pre-activations exactly at a ReLU kink, this is said of the smooth piece with those "
        "pre-activations switched off."
    ),
    "saddle": (
        "The gradient of the smooth piece is zero and its Hessian has an eigenvalue λ_1 < −eig_tol off the "
        "symmetry directions: along that eigenvector v_1 the loss falls like ½ λ_1 t², so the point is not a "
        "local minimum (with pre-activations exactly at a kink: of the smooth piece with those switched off)."
    ),
    "not critical": (
        "The point is not critical: the gradient is above grad_tol where the loss is smooth (no "
        "pre-activation near a ReLU kink), or a step along −∇f or along the least-norm chain-rule gradient "
        "lowered the true loss by more than rounding, a certificate that the point is not a local minimum; "
        "gradient descent started here keeps moving."
    ),
    "critical at a kink": (
        "Pre-activations sit at the kink of the ReLU and the smooth piece's gradient is not zero, but some "
        "choice of ReLU derivatives in [0, 1] at those pre-activations makes it vanish: 0 is in the Clarke "
        "subdifferential, the first-order condition of the nonsmooth loss. The Hessian of one smooth piece "
        "does not decide between minimum and saddle there: negative eigenvalues make the point a saddle of "
        "that piece, but the pieces meeting at the kink can still make it a local minimum of the nonsmooth "
        "loss; a step that lowers the true loss (the probe along ±v_1) settles it, no decrease found does "
        "not."
    ),
    "undecided at kinks": (
        "Pre-activations sit near a ReLU kink, the smooth piece's gradient is above grad_tol, the least-norm "
        "chain-rule gradient found is above grad_tol too (an upper bound: the point may still be Clarke "
        "critical), and no probe step lowered the true loss: the first-order tests available here do not "
        "decide."
    ),
}


#: How the model family (``--loss``, ``--activation``) changes the tests behind the verdicts (``--help``).
FAMILIES: dict[str, str] = {
    "relu (mse or ce)": (
        "eq. (1) is piecewise smooth with kinks where a pre-activation is 0: all five verdicts can occur; "
        "the loss (squared error or cross-entropy) enters through the float64 objective, its gradient and "
        "the Hessian of the smooth piece."
    ),
    "linear, relu_eps (mse or ce)": (
        "eq. (1) is smooth (σ_ε of Definition 7 is C¹, its second derivative jumps only at 0 and ε): there "
        "are no kinks, the Clarke residual is the gradient norm and the Hessian is that of the loss itself, "
        "so the verdict is local minimum, saddle or not critical."
    ),
}


def _negatives(r: Mapping[str, Any]) -> str:
    """'k negative eigenvalues (lowest λ)' of the Hessian off the symmetries, or '' if none."""
    vals = list(r.get("lowest_eigenvalues_off_symmetry") or [])
    tol = (r.get("tolerances") or {}).get("eig_tol", 0.0)
    neg = sum(1 for x in vals if x < -tol)
    if not neg:
        return ""
    count = f"at least {neg}" if neg == len(vals) else str(neg)
    plural = "s" if neg > 1 else ""
    return f"{count} negative eigenvalue{plural} off the symmetry directions (lowest λ_1 = {vals[0]:.3e})"


def _curvature_words(r: Mapping[str, Any]) -> str:
    """What the probe along ±v_1 found."""
    c = r.get("curvature_probe")
    if not c or not c.get("step"):  # no probe, or θ = 0 where its steps 10^-k ‖θ‖ are all 0
        return ""
    if r.get("certified_descent") and r["certified_descent"].get("along", "").endswith("v_1"):
        return (
            f"the probe along {c['direction']} found a decrease (Δf = {c['delta']:.3g} at step "
            f"{c['step']:.3g}), so the point is not a local minimum of the nonsmooth loss either"
        )
    return (
        f"the probe along ±v_1 (steps 10^-1 .. 10^-10 ‖θ‖) found no decrease (best Δf = {c['delta']:.3g} at "
        f"step {c['step']:.3g}), so nothing here shows it is not one"
    )


def _local_minimum(r: Mapping[str, Any]) -> str:
    vals = r.get("lowest_eigenvalues_off_symmetry") or [float("nan")]
    modes = r.get("near_zero_modes") or 0
    sym = r.get("symmetry_dim") or 0
    strict = "strict" if modes == 0 else f"not strict: {modes} near-zero mode{'s' if modes > 1 else ''}"
    return (
        f"‖∇f‖ = {r['grad_norm']:.2e} <= grad_tol and the lowest Hessian eigenvalue off the "
        f"{sym} symmetry direction{'' if sym == 1 else 's'} is λ_1 = {vals[0]:.3e} >= −eig_tol: a local "
        f"minimum of the {'loss' if r.get('smooth') else 'smooth piece'} ({strict})."
    )


def _saddle(r: Mapping[str, Any]) -> str:
    text = f"‖∇f‖ = {r['grad_norm']:.2e} <= grad_tol and the Hessian has {_negatives(r)}: a saddle"
    d = r.get("certified_descent")
    probe = _curvature_words(r) if d and d.get("along", "").endswith("v_1") else ""
    return text + (f"; {probe}." if probe else ".")


def _not_critical(r: Mapping[str, Any]) -> str:
    d = r.get("certified_descent")
    text = f"‖∇f‖ = {r['grad_norm']:.2e} > grad_tol"
    if d:
        return (
            f"{text}, and a step t = {d['step']:.3g} along {d['along']} lowers the true loss by "
            f"Δf = {d['delta']:.3g}: a certified descent direction, so the point is not a local minimum."
        )
    if r.get("smooth"):
        return f"{text} and the loss of {r.get('family')} is smooth: −∇f is a descent direction."
    return (
        f"{text} and no pre-activation is near a ReLU kink: the loss is smooth here and −∇f is a descent "
        "direction."
    )


def _critical_at_a_kink(r: Mapping[str, Any]) -> str:
    text = (
        f"0 is in the Clarke subdifferential (residual {r['clarke_residual']:.3e} <= grad_tol, while the "
        f"smooth piece's own ‖∇f‖ = {r['grad_norm']:.2e})"
    )
    negs = _negatives(r)
    if not negs:
        vals = r.get("lowest_eigenvalues_off_symmetry") or [float("nan")]
        return (
            f"{text}; the Hessian of the smooth piece has no eigenvalue below −eig_tol off the symmetries "
            f"(λ_1 = {vals[0]:.3e}): consistent with a local minimum, not a proof of one at a kink."
        )
    return (
        f"{text}; the Hessian of the smooth piece has {negs}: on this piece the point is a saddle, but a "
        "kink can still make it a local minimum of the nonsmooth loss — "
        f"{_curvature_words(r) or 'no probe ran'}."
    )


def _undecided(r: Mapping[str, Any]) -> str:
    note = r.get("verdict_note") or ""
    return f"‖∇f‖ = {r['grad_norm']:.2e} > grad_tol near kinks{': ' + note if note else ''}; not decided."


_EVIDENCE: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "local minimum": _local_minimum,
    "saddle": _saddle,
    "not critical": _not_critical,
    "critical at a kink": _critical_at_a_kink,
    "undecided at kinks": _undecided,
}


def explain(result: Mapping[str, Any]) -> str:
    """The verdict of a landscape result in words, with its numbers.

    Parameters
    ----------
    result : mapping
        A :class:`~deepcollapse.landscape.verdicts.Landscape` or its dict (``verdict``, ``grad_norm``,
        ``clarke_residual``, ``lowest_eigenvalues_off_symmetry``, ``tolerances``, and where present
        ``curvature_probe`` and ``certified_descent``).

    Returns
    -------
    str
        One paragraph: the evidence for the verdict (numbers), what it means for a minimum or a saddle, and
        whether a descent direction was found.

    Examples
    --------
    >>> text = explain({"verdict": "not critical", "grad_norm": 0.5})
    >>> text.split(":")[0]
    '‖∇f‖ = 5.00e-01 > grad_tol and no pre-activation is near a ReLU kink'
    """
    verdict = result["verdict"]
    return _EVIDENCE[verdict](result)


def verdicts_epilog(width: int = 100) -> str:
    """The ``--help`` epilog: every verdict with its paragraph of :data:`MEANINGS` (wrapped to ``width``).

    Parameters
    ----------
    width : int
        Line width of the wrapped text.

    Returns
    -------
    str
        Plain text, one indented paragraph per verdict.

    Examples
    --------
    >>> verdicts_epilog(60).splitlines()[1]
    '  local minimum:'
    """
    parts = ["verdicts (printed with the numbers of the point after 'verdict:'):"]
    for verdict, text in MEANINGS.items():
        parts.append(f"  {verdict}:")
        parts.append(
            textwrap.fill(
                text, width, initial_indent="    ", subsequent_indent="    ", break_on_hyphens=False
            )
        )
    parts.append("model families (--loss, --activation):")
    for family, text in FAMILIES.items():
        parts.append(f"  {family}:")
        parts.append(
            textwrap.fill(
                text, width, initial_indent="    ", subsequent_indent="    ", break_on_hyphens=False
            )
        )
    return "\n".join(parts)

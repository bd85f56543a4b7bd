"""Is this point of the L-DUFM a local minimum, a saddle, or not critical?  ``landscape(params, problem)``.

At a point ``θ = (H_1, W_1..W_L)`` of eq. (1) (2024 paper), in float64:

* ``grad_norm``: ‖∇f‖ of the smooth piece ``f_D`` of the current activation pattern ``D_l = 1[H~_l > 0]``
  (:mod:`deepcollapse.landscape.piecewise`; the true gradient wherever no pre-activation is 0).
* ``zero_preactivations``: per layer, the pre-activations with ``|H~_l| <= max(shape) · eps · max|H~_l|``
  (kinks of the ReLU); the Hessian is that of the smooth piece ``f_D`` (zeros off).  ``near_kinks``: those
  with ``|H~_l| <= KINK_RTOL · max|H~_l|`` (``1e-6``): the low-rank solutions (SRG and the ones below it) have
  many class-mean pre-activations exactly at 0, which float32 GD and an L-BFGS polish leave at ``±1e-11``,
  where the piece's gradient means nothing beyond a ``1e-11`` ball.
* ``clarke_residual = min_{D_Z ∈ [0,1]} ‖∇f_D‖`` over the derivative values at the near-kinks (every such
  ``∇f_D`` is an element of the chain-rule hull of the Clarke subdifferential; with kinks in several layers
  the minimum found over this non-convex set is an upper bound): ``≈ 0`` means *critical at the kink* even
  when the piece's own gradient is not 0.
* ``descent_probe``: the true eq. (1) along ``−∇f`` and along the least-norm chain-rule gradient, at steps
  ``10^{-k} ‖θ‖``: a decrease beyond rounding is a certificate that the point is not a local minimum.
  ``curvature_probe``: the same along ``±v_1`` (the lowest eigenvector off the symmetries) where ``λ_1 <
  −eig_tol``: at a kink the smooth piece's negative curvature alone does not make a saddle, a decrease does.
  ``certified_descent``: the decrease that certifies a descent (``along``, ``step``, ``delta``; the descent
  probe's if it certifies one, else the curvature probe's), its unit direction in ``descent_direction``.
* the lowest Hessian eigenvalues from exact float64 Hessian-vector products (torch double back-propagation):
  up to 5000 parameters the Hessian is formed column by column and diagonalised densely
  (``numpy.linalg.eigh``: exact and reproducible), above that Lanczos (``scipy.sparse.linalg.eigsh``,
  ``which='SA'``, fixed start vector); and the same with the model's **symmetry directions deflated**: the
  orbit of ``H_1 → Q H_1``, ``W_1 → W_1 Q^T`` (``Q`` orthogonal on ``R^{d_1}``), whose tangent vectors
  ``(A H_1, −W_1 A)`` (``A`` antisymmetric) are exact zero modes at a critical point.
  ``symmetry_dim`` is the dimension of that tangent space at ``θ``.

Verdict (tolerances ``grad_tol`` on gradient norms, ``eig_tol`` on eigenvalues, both absolute):

* ``not critical``: ``grad_norm > grad_tol`` and no near-kink (smooth there), or a probe found descent;
* ``saddle``: the piece is critical and the lowest eigenvalue off the symmetry directions is ``< −eig_tol``
  (its eigenvector is a descent direction of second order);
* ``local minimum``: the piece is critical and every eigenvalue off the symmetry directions is ``>= −eig_tol``
  (second-order necessary condition; ``near_zero_modes`` counts eigenvalues in ``[−eig_tol, eig_tol]`` off
  the symmetries: 0 means strict);
* ``critical at a kink``: only the Clarke residual vanishes; the second-order test of one smooth piece does
  not decide, so no min/saddle verdict is claimed (the numbers are still reported);
* ``undecided at kinks``: near-kinks, ``clarke_residual > grad_tol``, and no probe found descent: the
  first-order tests available here do not decide (``verdict_note`` gives the numbers).

With kinks present the min/saddle verdicts are statements about the smooth piece with the zero
pre-activations off, and say so.

Every model family (:mod:`deepcollapse.family`): the loss (MSE or cross-entropy) enters through the problem's
float64 objective and gradient and the torch fit of the Hessian.  The ``linear`` activation and σ_ε
(``relu_eps``, C¹) have no kinks (``smooth`` in the result): the kink counts are 0, the Clarke residual is
``‖∇f‖``, the Hessian is that of ``f`` itself, and the verdict is one of ``local minimum``, ``saddle``,
``not critical``.  ``explanation`` says the verdict in words with its numbers
(:mod:`deepcollapse.landscape.explain`).  ``progress=True`` shows tqdm bars (stderr) over the probes, the
Clarke residual's L-BFGS iterations and the Hessian-vector products (dense Hessian or Lanczos).

The pieces: :mod:`~deepcollapse.landscape.probes` (kinks, the Clarke residual, the descent probes),
:mod:`~deepcollapse.landscape.hessian` (the symmetry basis and the Hessian spectrum, dense or Lanczos),
:mod:`~deepcollapse.landscape.targets` (``load_point``, ``TARGET_HELP``); this module owns the result
(``Landscape``) and the verdict, and re-exports their public names.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from deepcollapse._core.devices import torch_threads
from deepcollapse._core.docs import fill_doc
from deepcollapse._core.results import Result
from deepcollapse.dufm.points import as_point
from deepcollapse.landscape.explain import explain
from deepcollapse.landscape.hessian import hessian_spectrum, symmetry_basis
from deepcollapse.landscape.piecewise import (
    Problem,
    _Piece,
    activation_pattern,
    collapse,
    expand,
    flatten,
    is_smooth,
    value_and_grad,
    zero_preactivations,
)
from deepcollapse.landscape.probes import (
    CLARKE_ITER,
    DESCENT_RTOL,
    KINK_RTOL,
    DescentProbe,
    _certified_descent,
    clarke_direction,
    clarke_residual,
    descent_probe,
    kink_masks,
)
from deepcollapse.landscape.slices import loss_slices  # re-exported: landscape.verdicts.loss_slices
from deepcollapse.landscape.targets import TARGET_HELP as TARGET_HELP
from deepcollapse.landscape.targets import load_point as load_point

if TYPE_CHECKING:
    from deepcollapse.dufm.fit import DUFMFit

__all__ = [
    "KINK_RTOL",
    "VERDICTS",
    "Landscape",
    "clarke_direction",
    "clarke_residual",
    "descent_probe",
    "kink_masks",
    "landscape",
    "loss_slices",
    "symmetry_basis",
]

VERDICTS = ("local minimum", "saddle", "not critical", "critical at a kink", "undecided at kinks")


@dataclass(frozen=True, eq=False)
class Landscape(Result):
    """Gradient, kinks, lowest Hessian eigenvalues and verdict at a point (the result of :func:`landscape`).

    ``to_dict()`` without ``directions`` is ``landscape.json`` (``deepcollapse dufm landscape --out``, which
    adds ``target`` and ``figure``); read-only key access works as for the dict of earlier releases.

    Attributes
    ----------
    loss : float
        Eq. (1) at the point (of the analysed problem: the reduced one when ``reduced``).
    grad_norm : float
        ``‖∇f‖`` of the smooth piece the point lies on.
    clarke_residual : float
        Norm of the least-norm chain-rule gradient over the near kinks (an upper bound of the distance of 0 to
        the Clarke subdifferential): the smaller of the minimisation over ``D`` and the element the
        multipliers of the kink manifold give (:func:`~deepcollapse.landscape.kink_manifold.
        multiplier_certificate`); ``grad_norm`` where not computed.
    zero_preactivations : list of int
        Per layer: pre-activations that are exactly zero (to ``max(shape) · eps · max|H~_l|``).
    near_kinks : list of int
        Per layer: pre-activations within ``KINK_RTOL · max|H~_l|`` of a kink.
    descent_probe : DescentProbe or None
        ``{delta, step, direction}``: the largest decrease of the true eq. (1) found along ``−∇f`` (and the
        chain-rule gradient) by :func:`descent_probe`; ``None`` where the gradient is below ``grad_tol``.
    curvature_probe : DescentProbe or None
        ``{delta, step, direction}`` (``direction`` ``"+v_1"`` or ``"-v_1"``): the same probe along ``±v_1``,
        the lowest eigenvector off the symmetries; ``None`` where ``λ_1 >= −eig_tol``.
    certified_descent : dict or None
        ``{along, step, delta}``: a decrease of the true eq. (1) beyond rounding at ``θ + step · u``
        (``u = descent_direction``), from the descent probe or else the curvature probe; ``None`` if neither
        found one.
    parameters : int
        Number of parameters of the analysed problem.
    symmetry_dim : int
        Dimension of the continuous symmetries (rescalings between layers) deflated from the Hessian.
    lambda_max : float
        Largest Hessian eigenvalue.
    lowest_eigenvalues : list of float
        The ``k`` lowest Hessian eigenvalues.
    lowest_eigenvalues_off_symmetry : list of float
        The ``k`` lowest off the symmetry directions.
    near_zero_modes : int
        How many of those are within ``eig_tol`` of zero.
    verdict : str
        One of :data:`VERDICTS`.
    verdict_note : str
        What qualifies the verdict (empty if nothing).
    explanation : str
        The verdict in words with its numbers (:func:`deepcollapse.landscape.explain.explain`).
    tolerances : dict
        ``grad_tol, eig_tol, lanczos_tol`` and the rules for ``zero``, ``near_kink`` and ``descent``.
    directions : list of ndarray
        The two lowest eigenvectors off the symmetries (flat float64, of the analysed problem), for
        :func:`loss_slices`; not written to ``landscape.json``.
    descent_direction : ndarray or None
        Unit vector ``u`` of ``certified_descent`` (flat float64, of the analysed problem), for
        :func:`~deepcollapse.landscape.slices.descent_slice`; not written to ``landscape.json``.
    reduced : bool
        The point had an exactly collapsed ``H_1`` and was analysed as the ``n = 1`` problem at ``(M_1, W)``.
    family : str
        The model family analysed (``"mse+relu"``, ``"ce+relu_eps(0.1)"``, ...).
    smooth : bool
        The family has no kinks (``linear``, ``relu_eps``): no kink counts, Clarke residual = ``grad_norm``,
        the Hessian is that of ``f`` itself.
    """

    _nested = {"descent_probe": DescentProbe, "curvature_probe": DescentProbe}

    loss: float | None = None
    grad_norm: float | None = None
    clarke_residual: float | None = None
    zero_preactivations: list[int] | None = None
    near_kinks: list[int] | None = None
    descent_probe: DescentProbe | None = None
    curvature_probe: DescentProbe | None = None
    certified_descent: dict[str, Any] | None = None
    parameters: int | None = None
    symmetry_dim: int | None = None
    lambda_max: float | None = None
    lowest_eigenvalues: list[float] | None = None
    lowest_eigenvalues_off_symmetry: list[float] | None = None
    near_zero_modes: int | None = None
    verdict: str | None = None
    verdict_note: str | None = None
    explanation: str | None = None
    tolerances: dict[str, Any] | None = None
    directions: list[np.ndarray] | None = None
    descent_direction: np.ndarray | None = None
    reduced: bool | None = None
    family: str | None = None
    smooth: bool | None = None

    def to_file_dict(self) -> dict[str, Any]:
        """The dict of ``landscape.json``: :meth:`to_dict` without the arrays (``directions``,
        ``descent_direction``).

        Returns
        -------
        dict
            JSON-ready; non-finite floats still as floats (write it through ``finite_or_none``).  A plain
            dict: the JSON form written to disk.

        Examples
        --------
        >>> from deepcollapse.landscape.piecewise import Problem
        >>> params = [np.eye(2), np.array([[1.0, -1.0], [0.0, 1.0]]), np.eye(2)]  # one kink: H~_2[1, 0] = 0
        >>> problem = Problem(2, 2, 1, 0.1, 0.1)
        >>> "directions" in landscape(params, problem).to_file_dict()
        False
        """
        return {k: v for k, v in self.to_dict().items() if k not in _ARRAY_KEYS}


_ARRAY_KEYS = ("directions", "descent_direction")  # flat vectors for the slices: not in landscape.json


@fill_doc
def landscape(
    params: Sequence[np.ndarray] | DUFMFit | str | Path,
    problem: Problem | None = None,
    *,
    run: int | None = None,
    k: int = 6,
    grad_tol: float = 1e-6,
    eig_tol: float = 1e-6,
    lanczos_tol: float = 1e-10,
    reduce: bool = True,
    progress: bool = False,
    clarke_witness: Sequence[np.ndarray] | None = None,
    clarke_iter: int = CLARKE_ITER,
) -> Landscape:
    """Gradient, kinks, lowest Hessian eigenvalues (all / off the symmetries) and the verdict at ``params``
    (module docstring).

    ``reduce`` (default): at a point whose ``H_1`` is exactly collapsed (``H_1 = M_1 ⊗ 1_n^T``) the analysis
    runs on the ``n = 1`` problem with ``nλ_{H_1}`` at ``(M_1, W)`` (``"reduced": True`` in the result).  The
    verdict is the same: the Hessian of eq. (1) there splits into the collapsed directions, congruent to the
    reduced Hessian (same inertia, eigenvalues in the reduced metric), and the within-class directions
    (``Σ_i δh_{c,i} = 0``), which do not couple to the rest and on which each column's Hessian is
    ``J_c^T J_c / N + λ_{H_1} I ≻ 0`` (the network is piecewise linear in one column).

    ``progress``: tqdm bars on stderr over the long phases (probe steps, the Clarke residual's L-BFGS
    iterations, Hessian-vector products of the dense Hessian or of Lanczos); the numbers do not depend on it.

    ``clarke_witness``: a Clarke element ``D_2 .. D_L`` known from elsewhere (the kink refinement's
    ``clarke_masks``, the shapes of ``H~_l`` at ``params``); its ``‖∇f_D‖`` is one more upper bound of the
    Clarke residual where it is a candidate of the near-kink rule
    (:func:`~deepcollapse.landscape.kink_manifold.witness_residual`), tried first.

    Returns a :class:`Landscape` (its ``directions``: the two lowest eigenvectors off the symmetries, flat
    float64 arrays, of the analysed problem, for :func:`loss_slices`).

    Parameters
    ----------
    %(landscape_source)s
    k : int, default 6
        How many of the lowest Hessian eigenvalues.
    grad_tol : float, default 1e-6
        The tolerance on the (Clarke) gradient norm of a critical point (absolute).
    eig_tol : float, default 1e-6
        The tolerance on the eigenvalues (absolute, module docstring).
    lanczos_tol : float, default 1e-10
        Tolerance of Lanczos (above the dense size only).
    reduce : bool, default True
        Analyse a collapsed point on the ``n = 1`` problem.
    progress : bool, default False
        Progress bars on stderr.
    clarke_witness : sequence of ndarray, optional
        A Clarke element ``D_2 .. D_L`` to try first.
    clarke_iter : int, default :data:`~deepcollapse.landscape.probes.CLARKE_ITER`
        L-BFGS-B iterations of the Clarke residual's minimisation over ``D`` at near-kinks (its minimum is
        an upper bound: a larger budget can only lower it, and can turn *undecided at kinks* into
        *critical at a kink*).

    Returns
    -------
    Landscape
        The verdict and its evidence.

    Examples
    --------
    >>> from deepcollapse.landscape.piecewise import Problem
    >>> params = [np.eye(2), np.array([[1.0, -1.0], [0.0, 1.0]]), np.eye(2)]  # one kink: H~_2[1, 0] = 0
    >>> problem = Problem(2, 2, 1, 0.1, 0.1)
    >>> result = landscape(params, problem)
    >>> result.verdict, result.reduced
    ('not critical', False)
    """
    from threadpoolctl import threadpool_limits

    params, problem = as_point(params, problem, run=run)
    # small dense products and autograd graphs: threads only cost here (on a busy machine many times over)
    with threadpool_limits(limits=1, user_api="blas"), torch_threads(1):
        witness = None
        if clarke_witness is not None:
            witness = [np.asarray(D, dtype=np.float64) for D in clarke_witness]
        if reduce and problem.n > 1 and is_collapsed(params[0], problem.classes):
            M1 = collapse(np.asarray(params[0], dtype=np.float64), problem.classes)
            out = _landscape(
                [M1, *params[1:]],
                problem.reduced(),
                k,
                grad_tol,
                eig_tol,
                lanczos_tol,
                progress,
                None if witness is None else _reduce_witness(witness, problem.n),
                clarke_iter,
            )
            return Landscape.from_dict({**out, "reduced": True})
        out = _landscape(params, problem, k, grad_tol, eig_tol, lanczos_tol, progress, witness, clarke_iter)
        return Landscape.from_dict({**out, "reduced": False})


def _reduce_witness(masks: list[np.ndarray], n: int) -> list[np.ndarray] | None:
    """A witness of the full problem on the ``n = 1`` problem: one column per class where it is the same
    on the ``n`` columns of every class (as on a collapsed point's own pre-activations), else None."""
    out = []
    for D in masks:
        if D.ndim != 2 or D.shape[1] % n:
            return None
        first = D[:, ::n]
        if not np.array_equal(expand(first, n), D):
            return None
        out.append(first)
    return out


def is_collapsed(H1: np.ndarray, classes: int) -> bool:
    """Every column of ``H_1`` equals its class mean up to rounding: ``max|H_1 − M_1 ⊗ 1_n^T| <= 4 eps
    max|H_1|`` (a mean of ``n`` equal floats can differ from them in the last bit).

    Parameters
    ----------
    H1 : ndarray, (d_1, K n)
        The features, samples ordered by class.
    classes : int
        ``K``.

    Returns
    -------
    bool
        Whether ``H_1 = M_1 ⊗ 1_n^T`` up to rounding.

    Examples
    --------
    >>> is_collapsed(np.array([[1.0, 1.0, 0.0, 0.0]]), 2), is_collapsed(np.array([[1.0, 0.0, 1.0, 0.0]]), 2)
    (True, False)
    """
    H1 = np.asarray(H1, dtype=np.float64)
    gap = float(np.max(np.abs(H1 - expand(collapse(H1, classes), H1.shape[1] // classes)), initial=0.0))
    return gap <= 4 * float(np.finfo(np.float64).eps) * float(np.max(np.abs(H1), initial=0.0))


def _landscape(
    params: Sequence[np.ndarray],
    problem: Problem,
    k: int,
    grad_tol: float,
    eig_tol: float,
    lanczos_tol: float,
    progress: bool = False,
    witness: list[np.ndarray] | None = None,
    clarke_iter: int = CLARKE_ITER,
) -> dict[str, Any]:
    bar = partial(_bar, progress)
    params = [np.asarray(p, dtype=np.float64) for p in params]
    loss, grads = value_and_grad(params, problem)
    gvec = flatten(grads)
    g = float(np.linalg.norm(gvec))
    smooth = is_smooth(problem)  # no kinks: Clarke residual = ‖∇f‖, the Hessian is that of f itself
    zeros = [0] * (len(params) - 2) if smooth else zero_preactivations(params)
    kinks = sum(zeros)
    near_masks = [] if smooth else kink_masks(params, KINK_RTOL)
    near = [0] * (len(params) - 2) if smooth else [int(z.sum()) for z in near_masks]
    clarke, probe = g, None
    probed = [gvec]  # the probe's directions (−∇f, then the least-norm chain-rule gradient)
    if g > grad_tol:  # first the cheap probe along −∇f, then (near kinks) the residual and its probe
        with bar("descent probe along −∇f", 10, "step") as b:
            probe = descent_probe(params, problem, [gvec], bar=b)
        if sum(near) and probe.delta >= -DESCENT_RTOL * max(1.0, abs(loss)):
            from deepcollapse.landscape.kink_manifold import multiplier_certificate, witness_residual

            # the given witness first (when it certifies, no minimisation); xi: the ∇f_D of the best bound
            clarke, xi = float("inf"), gvec
            if witness is not None:
                found, found_xi = witness_residual(params, problem, witness, KINK_RTOL)
                if found_xi is not None:
                    clarke, xi = found, found_xi
            if clarke > grad_tol:
                with bar(f"Clarke residual (L-BFGS, at most {clarke_iter})", clarke_iter, "iter") as b:
                    found, found_xi = clarke_direction(params, problem, clarke_iter, masks=near_masks, bar=b)
                if found < clarke:
                    clarke, xi = found, found_xi
            if clarke > grad_tol:  # the multipliers' Clarke element (where the minimisation over D stalls)
                clarke = min(clarke, multiplier_certificate(params, problem, near_masks, KINK_RTOL)[0])
            probed.append(xi)
            if clarke > grad_tol:
                with bar("descent probe along the chain-rule gradient", 10, "step") as b:
                    second = descent_probe(params, problem, [xi], bar=b)
                if second.delta < probe.delta:
                    probe = replace(second, direction=1)
    piece = _Piece(params, problem, None if smooth else activation_pattern(params))
    size = sum(int(np.prod(s)) for s in piece.shapes)
    B = symmetry_basis(params)
    lam_max, vals_all, vals, vecs = hessian_spectrum(piece.hvp, size, B, k, lanczos_tol, bar)
    curvature = None  # the probe along ±v_1 where the piece curves down: at a kink only a decrease decides
    if vals[0] < -eig_tol:
        v1 = vecs[:, 0]
        with bar("descent probe along ±v_1", 20, "step") as b:
            curvature = descent_probe(params, problem, [v1, -v1], bar=b)  # θ − t v: index 0 moves along −v_1
        if isinstance(curvature.direction, int):
            curvature = replace(curvature, direction=("-v_1", "+v_1")[curvature.direction])
    certified, u = _certified_descent(loss, probe, probed, curvature, vecs[:, 0])
    verdict_note = ""
    descent = probe is not None and probe.delta < -DESCENT_RTOL * max(1.0, abs(loss))
    if g <= grad_tol:
        verdict = "saddle" if vals[0] < -eig_tol else "local minimum"
        if kinks:
            verdict_note = f"of the smooth piece with the {kinks} zero pre-activations off"
    elif clarke <= grad_tol:
        verdict = "critical at a kink"
    elif not sum(near) or descent:
        verdict = "not critical"
        if probe is not None and descent:
            verdict_note = f"descent found: Δf = {probe.delta:.3g} at step {probe.step:.3g}"
    else:
        verdict = "undecided at kinks"
        verdict_note = (
            f"{sum(near)} pre-activations within {KINK_RTOL:g} max|H~| of a kink; no descent along −∇f or "
            f"the least-norm chain-rule gradient (best Δf = {probe.delta:.3g}); chain-rule residual "
            f"{clarke:.3g} is an upper bound"
            if probe is not None
            else ""
        )
    out = {
        "loss": loss,
        "grad_norm": g,
        "clarke_residual": clarke,
        "zero_preactivations": zeros,
        "near_kinks": near,
        "descent_probe": probe,
        "curvature_probe": curvature,
        "certified_descent": certified,
        "parameters": size,
        "symmetry_dim": int(B.shape[1]),
        "lambda_max": lam_max,
        "lowest_eigenvalues": [float(x) for x in vals_all],
        "lowest_eigenvalues_off_symmetry": [float(x) for x in vals],
        "near_zero_modes": int(np.sum(np.abs(vals) <= eig_tol)),
        "verdict": verdict,
        "verdict_note": verdict_note,
        "explanation": "",
        "family": problem.family.name,
        "smooth": smooth,
        "tolerances": {
            "grad_tol": grad_tol,
            "eig_tol": eig_tol,
            "lanczos_tol": lanczos_tol,
            "zero": "max(shape) * eps(float64) * max|H~_l|",
            "near_kink": f"{KINK_RTOL:g} * max|H~_l|",
            "descent": f"{DESCENT_RTOL:g} * max(1, |f|)",
        },
        "directions": [vecs[:, 0], vecs[:, min(1, vecs.shape[1] - 1)]],
        "descent_direction": u,
    }
    out["explanation"] = explain(out)
    return out


def _bar(progress: bool, desc: str, total: int | None, unit: str) -> Any:
    """A tqdm bar on stderr (nothing shown unless ``progress``)."""
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit=unit, disable=not progress, dynamic_ncols=True)

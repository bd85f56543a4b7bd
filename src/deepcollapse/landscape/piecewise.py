"""Eq. (1) at one explicit point in float64: its smooth pieces, gradient, Hessian-vector products, polish.

The L-DUFM objective (2024 paper, eq. (1))

    f(H_1, W_1..W_L) = 1/(2N) ‖W_L H_L − Y‖_F² + Σ_l (λ_{W_l}/2) ‖W_l‖_F² + (λ_{H_1}/2) ‖H_1‖_F²,
    H~_{l+1} = W_l H_l,  H_{l+1} = ReLU(H~_{l+1}),

is piecewise polynomial: on the set where the *activation pattern* ``D_l = 1[H~_l > 0]`` (``l = 2..L``) is
fixed it equals the smooth piece ``f_D`` in which ``ReLU(H~_l)`` is replaced by ``D_l ⊙ H~_l``.  The kinks are
where some pre-activation is exactly 0; there ``D_l = 1[H~_l > 0]`` picks the piece in which that unit is off
(the subgradient convention of the trainer).  Everything here evaluates that piece: the gradient of ``f`` is
the gradient of ``f_D`` at the current pattern (exact wherever no pre-activation is 0), and Hessian-vector
products are those of ``f_D`` (torch float64 double back-propagation, with ``D`` held constant).

Polish (:func:`polish`): (1) L-BFGS (scipy, float64) on ``f`` itself with the gradient above, which moves
freely across kinks; (2) trust-region Newton (scipy ``trust-krylov`` with exact Hessian-vector products) on
the smooth piece ``f_D`` of the pattern at the L-BFGS point; **the pattern is re-checked after each Newton
solve**: if it changed, the new point is kept only when the true ``f`` decreased, the pattern is re-read there
and Newton runs again on the new piece (at most ``newton_rounds`` times).  The returned point is the best
(by the true ``f``) of all visited points.

σ_ε continuation (:func:`sigma_eps_polish`, used by the search): L-BFGS on eq. (1) with ReLU replaced by the
C¹ function σ_ε of the 2024 paper's Definition 7 for ε = 1e-3, 1e-5, 1e-7 (no kinks for L-BFGS to stall
on), then :func:`polish`; the best visited point by the true eq. (1) is kept.

Model families (:mod:`deepcollapse.family`, the problem's ``loss``/``activation``/``eps``): the fit and its
residual are the family's loss (MSE, or cross-entropy with residual ``softmax(out) − Y``), in the value (the
theory's :func:`~deepcollapse.theory.objective.objective_from_output`), the gradient and the torch graph of
the Hessian.  ``linear`` and σ_ε (``relu_eps``) have no kinks (:func:`is_smooth`): ``s_l`` is the family's σ
with σ', there is one piece (``f`` itself, patterns are ignored), :func:`polish` runs Newton on ``f`` without
re-checking a pattern, and :func:`sigma_eps_polish` is :func:`polish` alone.

``Problem.reduced()``: for a point whose features are collapsed (``H_1 = M_1 ⊗ 1_n^T``) the ``n``-sample
objective equals the ``n = 1`` objective with ``λ_{H_1}`` replaced by ``nλ_{H_1}`` (same fit per class,
``‖H_1‖² = n‖M_1‖²``); and the *minimum* of eq. (1) equals the minimum of that reduced problem, because given
the weights eq. (1) separates over the columns of ``H_1`` and every column of a class solves the same
problem (replacing each column by its class's best column never increases the loss).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from deepcollapse._core.docs import fill_doc
from deepcollapse.dufm.points import as_point
from deepcollapse.theory import objective_torch as torch_eq1
from deepcollapse.theory.objective import objective_from_output
from deepcollapse.theory.problem import Problem

if TYPE_CHECKING:
    from deepcollapse.dufm.fit import DUFMFit

__all__ = [
    "PolishResult",
    "Problem",
    "activation_pattern",
    "collapse",
    "expand",
    "flatten",
    "forward_backward",
    "grad_norm",
    "hessian_operator",
    "is_smooth",
    "piece_objective",
    "polish",
    "sigma_eps_polish",
    "unflatten",
    "value",
    "value_and_grad",
    "zero_preactivations",
]


def expand(M1: np.ndarray, n: int) -> np.ndarray:
    """``H_1 = M_1 ⊗ 1_n^T`` (each class column repeated ``n`` times; samples ordered by class).

    Parameters
    ----------
    M1 : ndarray, (d_1, K)
        The class means.
    n : int
        Samples per class.

    Returns
    -------
    ndarray, (d_1, K n)
        ``H_1``, float64.

    Examples
    --------
    >>> expand(np.eye(2), 2)
    array([[1., 1., 0., 0.],
           [0., 0., 1., 1.]])
    """
    return np.repeat(np.asarray(M1, dtype=np.float64), n, axis=1)  # (d1, K n)


def collapse(H1: np.ndarray, classes: int) -> np.ndarray:
    """Class means ``M_1`` ``(d1, K)`` of ``H_1`` ``(d1, K n)``.

    Parameters
    ----------
    H1 : ndarray, (d_1, K n)
        The features, samples ordered by class.
    classes : int
        ``K``.

    Returns
    -------
    ndarray, (d_1, K)
        The class means, float64 (inverse of :func:`expand`).

    Examples
    --------
    >>> collapse(np.array([[1.0, 3.0, 0.0, 0.0]]), 2)
    array([[2., 0.]])
    """
    d1, N = H1.shape
    return np.asarray(H1, dtype=np.float64).reshape(d1, classes, N // classes).mean(axis=2)


@fill_doc
def flatten(params: Sequence[np.ndarray]) -> np.ndarray:
    """One flat float64 vector of every parameter, in order (the layout of :func:`unflatten`).

    Parameters
    ----------
    %(landscape_params)s

    Returns
    -------
    ndarray, (P,)
        The concatenated ``ravel()`` of each array.

    Examples
    --------
    >>> flatten([np.eye(2), np.ones((1, 2))])
    array([1., 0., 0., 1., 1., 1.])
    """
    return np.concatenate([np.asarray(p, dtype=np.float64).ravel() for p in params])


def unflatten(x: np.ndarray, shapes: Sequence[tuple[int, ...]]) -> list[np.ndarray]:
    """Inverse of :func:`flatten`: the arrays of ``shapes`` read in order from ``x``.

    Parameters
    ----------
    x : ndarray, (P,)
        The flat vector.
    shapes : sequence of tuple of int
        The shape of each array (their sizes add up to ``P``).

    Returns
    -------
    list of ndarray
        Views of ``x`` of those shapes.

    Examples
    --------
    >>> [a.shape for a in unflatten(np.arange(6.0), [(2, 2), (1, 2)])]
    [(2, 2), (1, 2)]
    """
    out, i = [], 0
    for s in shapes:
        size = int(np.prod(s))
        out.append(x[i : i + size].reshape(s))
        i += size
    return out


@fill_doc
def preactivations(params: Sequence[np.ndarray]) -> list[np.ndarray]:
    """``[H~_2, ..., H~_L]`` (ReLU between layers).

    Parameters
    ----------
    %(landscape_params)s

    Returns
    -------
    list of ndarray
        ``H~_l = W_{l-1} H_{l-1}``, each ``(d_l, N)``, ``l = 2..L``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> params = [rng.standard_normal((3, 3)) for _ in range(3)]  # H_1, W_1, W_2 of K = 3, L = 2, n = 1
    >>> problem = Problem(3, 2, 1, 0.01, 0.01)
    >>> [Ht.shape for Ht in preactivations(params)]
    [(3, 3)]
    """
    H = np.asarray(params[0], dtype=np.float64)
    pre = []
    for W in params[1:-1]:
        Ht = W @ H  # (d_{l+1}, N)
        pre.append(Ht)
        H = np.maximum(Ht, 0.0)
    return pre


@fill_doc
def activation_pattern(params: Sequence[np.ndarray]) -> list[np.ndarray]:
    """``D_l = 1[H~_l > 0]`` for ``l = 2..L`` (booleans, the shapes of ``H~_l``).

    Parameters
    ----------
    %(landscape_params)s

    Returns
    -------
    list of ndarray of bool
        ``D_2 .. D_L``.

    Examples
    --------
    >>> activation_pattern([np.eye(2), np.array([[1.0, -1.0], [0.0, 1.0]]), np.eye(2)])[0]
    array([[ True, False],
           [False,  True]])
    """
    return [Ht > 0 for Ht in preactivations(params)]


def zero_tolerance(Ht: np.ndarray) -> float:
    """``max(shape) · eps(float64) · max|H~|``: pre-activations at most this large in magnitude are zero.

    Parameters
    ----------
    Ht : ndarray
        One layer's pre-activations ``H~_l``.

    Returns
    -------
    float
        The tolerance (0 for an all-zero ``H~``).

    Examples
    --------
    >>> zero_tolerance(np.array([[1.0, -2.0]])) == 2 * 2 * float(np.finfo(np.float64).eps)
    True
    """
    return float(max(Ht.shape)) * float(np.finfo(np.float64).eps) * float(np.max(np.abs(Ht), initial=0.0))


@fill_doc
def zero_preactivations(params: Sequence[np.ndarray]) -> list[int]:
    """Per layer ``l = 2..L``: how many pre-activations satisfy ``|H~_l| <= zero_tolerance(H~_l)`` (kinks).

    Parameters
    ----------
    %(landscape_params)s

    Returns
    -------
    list of int
        The number of zero pre-activations of each hidden layer.

    Examples
    --------
    >>> zero_preactivations([np.eye(2), np.array([[1.0, -1.0], [0.0, 1.0]]), np.eye(2)])  # H~_2[1, 0] = 0
    [1]
    """
    return [int(np.sum(np.abs(Ht) <= zero_tolerance(Ht))) for Ht in preactivations(params)]


@fill_doc
def forward_backward(
    params: Sequence[np.ndarray],
    problem: Problem,
    activation: Callable[[int, np.ndarray], tuple[np.ndarray, np.ndarray]],
) -> tuple[float, list[np.ndarray]]:
    """Eq. (1) with ``H_{l+1} = s_l(H~_{l+1})`` and its gradient ``[∂H_1, ∂W_1..∂W_L]``: the one forward /
    backward pass behind :func:`value_and_grad` (ReLU or a fixed pattern) and the σ_ε continuation.

    ``activation(l, H~)`` returns ``(s_l(H~), s_l'(H~))`` for the ``l``-th hidden pre-activation (``l = 0``
    is ``H~_2``).  The value is the theory's :func:`~deepcollapse.theory.objective.objective_from_output` (the
    one float64 eq. (1)) of this forward pass.  Backward pass: ``G = (W_L H_L − Y)/N`` (the residual of
    ``problem``'s loss); ``∂W_l = G H_l^T + λ_{W_l} W_l``;
    ``G ← s_l' ⊙ (W_l^T G)``; ``∂H_1 = W_1^T G + λ_{H_1} H_1``.

    Parameters
    ----------
    %(landscape_params)s
    %(landscape_problem)s
    activation : callable
        ``activation(l, H~) -> (s_l(H~), s_l'(H~))``.

    Returns
    -------
    value : float
        Eq. (1) of this forward pass.
    grads : list of ndarray
        ``[∂H_1, ∂W_1, ..., ∂W_L]``, the shapes of ``params``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> params = [rng.standard_normal((3, 3)) for _ in range(3)]  # H_1, W_1, W_2 of K = 3, L = 2, n = 1
    >>> problem = Problem(3, 2, 1, 0.01, 0.01)
    >>> relu = lambda l, Ht: (np.maximum(Ht, 0.0), (Ht > 0).astype(float))
    >>> value, grads = forward_backward(params, problem, relu)
    >>> round(value, 6), [g.shape for g in grads]
    (0.474203, [(3, 3), (3, 3), (3, 3)])
    """
    H1, Ws = np.asarray(params[0], dtype=np.float64), [np.asarray(W, dtype=np.float64) for W in params[1:]]
    # a trial point far out (a line search's long step) overflows to inf / nan: its caller rejects it, so the
    # overflow is not worth a RuntimeWarning on the user's terminal
    with np.errstate(over="ignore", invalid="ignore"):
        Hs, Ds = [H1], []
        for l, W in enumerate(Ws[:-1]):
            H, D = activation(l, W @ Hs[-1])  # (d_{l+2}, N)
            Ds.append(D)
            Hs.append(H)
        N = H1.shape[1]
        loss, Y = problem.family.loss, problem.targets()
        out = Ws[-1] @ Hs[-1]  # (K, N)
        f = objective_from_output(out, Y, H1, Ws, problem.lam_h, problem.lam_w, loss).total  # the one eq. (1)
        G = loss.residual(out, Y) / N  # MSE: (W_L H_L − Y)/N
        gWs: list[np.ndarray] = [np.empty(0)] * len(Ws)
        for l in range(len(Ws) - 1, -1, -1):
            gWs[l] = G @ Hs[l].T + problem.lam_w[l] * Ws[l]
            G = Ws[l].T @ G
            if l > 0:
                G = G * Ds[l - 1]
        return f, [G + problem.lam_h * H1, *gWs]


def _relu(pattern: Sequence[np.ndarray] | None) -> Callable[[int, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    def act(l: int, Ht: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        D = (Ht > 0) if pattern is None else pattern[l]
        return Ht * D, D

    return act


def is_smooth(problem: Problem) -> bool:
    """Whether eq. (1) of ``problem`` has no kinks: every activation but ReLU (``linear``; ``relu_eps``, the
    C¹ σ_ε of Definition 7, whose second derivative only jumps at 0 and ε).  For these the pattern / piece
    machinery is not used: the "smooth piece" is ``f`` itself.

    Parameters
    ----------
    problem : Problem
        The instance of eq. (1) (its family).

    Returns
    -------
    bool
        ``problem.activation != "relu"``.

    Examples
    --------
    >>> is_smooth(Problem(3, 2, 1, 0.01, 0.01)), is_smooth(Problem(3, 2, 1, 0.01, 0.01, activation="linear"))
    (False, True)
    """
    return problem.activation != "relu"


def _family_activation(
    problem: Problem, pattern: Sequence[np.ndarray] | None
) -> Callable[[int, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """``s_l`` of :func:`forward_backward` for ``problem``'s family: ReLU (or the fixed ``pattern``), else the
    family's σ and σ' (``pattern`` ignored: a smooth family has one piece)."""
    if not is_smooth(problem):
        return _relu(pattern)
    act = problem.family.activation
    return lambda l, Ht: (act.forward(Ht), act.derivative(Ht))


@fill_doc
def value_and_grad(
    params: Sequence[np.ndarray], problem: Problem, pattern: Sequence[np.ndarray] | None = None
) -> tuple[float, list[np.ndarray]]:
    """``f`` (or the smooth piece ``f_D`` when ``pattern`` is given) and its gradient ``[∂H_1, ∂W_1..∂W_L]``
    (:func:`forward_backward` with ``s_l(H~) = D_l ⊙ H~``, ``D_l = 1[H~_l > 0]`` or ``pattern[l]``; for a
    smooth family (:func:`is_smooth`) ``s_l = σ`` of the family and ``pattern`` is ignored).

    Parameters
    ----------
    %(landscape_params)s
    %(landscape_problem)s
    %(landscape_pattern)s

    Returns
    -------
    value : float
        ``f`` (or ``f_D``).
    grads : list of ndarray
        ``[∂H_1, ∂W_1, ..., ∂W_L]``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> params = [rng.standard_normal((3, 3)) for _ in range(3)]  # H_1, W_1, W_2 of K = 3, L = 2, n = 1
    >>> problem = Problem(3, 2, 1, 0.01, 0.01)
    >>> f, grads = value_and_grad(params, problem)
    >>> from deepcollapse.theory.objective import evaluate
    >>> f == evaluate(params[0], params[1:], problem).total, len(grads)
    (True, 3)
    """
    return forward_backward(params, problem, _family_activation(problem, pattern))


@fill_doc
def value(
    params: Sequence[np.ndarray], problem: Problem, pattern: Sequence[np.ndarray] | None = None
) -> float:
    """``f`` (or the smooth piece ``f_D``): the value of :func:`value_and_grad`.

    Parameters
    ----------
    %(landscape_params)s
    %(landscape_problem)s
    %(landscape_pattern)s

    Returns
    -------
    float
        Eq. (1) at ``params``, float64.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> params = [rng.standard_normal((3, 3)) for _ in range(3)]  # H_1, W_1, W_2 of K = 3, L = 2, n = 1
    >>> problem = Problem(3, 2, 1, 0.01, 0.01)
    >>> round(value(params, problem), 6)
    0.474203
    """
    return value_and_grad(params, problem, pattern)[0]


@fill_doc
def grad_norm(params: Sequence[np.ndarray], problem: Problem) -> float:
    """``‖∇f‖`` at ``params`` (the gradient of :func:`value_and_grad` at the current pattern).

    Parameters
    ----------
    %(landscape_params)s
    %(landscape_problem)s

    Returns
    -------
    float
        The Euclidean norm of every partial derivative together.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> params = [rng.standard_normal((3, 3)) for _ in range(3)]  # H_1, W_1, W_2 of K = 3, L = 2, n = 1
    >>> problem = Problem(3, 2, 1, 0.01, 0.01)
    >>> round(grad_norm(params, problem), 6)
    0.211047
    """
    return math.sqrt(sum(float(np.sum(g**2)) for g in value_and_grad(params, problem)[1]))


def piece_objective(ts: Sequence[Any], masks: Sequence[Any] | None, Y: Any, problem: Problem) -> Any:
    """The smooth piece ``f_D`` of eq. (1) as a torch float64 graph, for second derivatives only (HVPs,
    the Clarke residual): ``H~_{l+1} = W_l H_l``, ``H_{l+1} = D_l ⊙ H~_{l+1}`` with the masks ``D_l`` (0/1,
    or relaxed in [0, 1]); with ``masks = None`` (a smooth family, :func:`is_smooth`) ``H_{l+1} =
    σ(H~_{l+1})`` with the family's torch σ, i.e. ``f`` itself.  This is the one torch eq. (1),
    :func:`deepcollapse.theory.objective_torch.objective` (its ``masks``).  Values of eq. (1) come from
    :func:`value`, i.e. the theory's numpy objective.

    Parameters
    ----------
    ts : sequence of torch.Tensor
        ``[H_1, W_1, ..., W_L]`` (float64, usually ``requires_grad``).
    masks : sequence of torch.Tensor or None
        ``D_2 .. D_L``, the shapes of ``H~_2 .. H~_L``; ``None`` for a smooth family.
    Y : torch.Tensor
        Targets ``(K, N)``.
    problem : Problem
        The ``λ``s.

    Returns
    -------
    torch.Tensor
        The scalar ``f_D``.

    Examples
    --------
    >>> import torch
    >>> p = Problem(2, 1, 1, 0.1, 0.1, activation="linear")
    >>> float(piece_objective([torch.eye(2, dtype=torch.float64)] * 2, None, torch.tensor(p.targets()), p))
    0.2
    """
    return torch_eq1.objective(ts[0], ts[1:], Y, problem.lam_h, problem.lam_w, problem.family, masks).total


class _Piece:
    """Torch float64 graph of the smooth piece ``f_D`` at one point, reused for many HVPs."""

    def __init__(
        self, params: Sequence[np.ndarray], problem: Problem, pattern: Sequence[np.ndarray] | None
    ) -> None:
        import torch

        self.torch = torch
        self.shapes = [np.shape(p) for p in params]
        self.ts = [torch.tensor(np.asarray(p, dtype=np.float64), requires_grad=True) for p in params]
        masks = (
            None
            if is_smooth(problem) or pattern is None
            else [torch.tensor(np.asarray(D, dtype=np.float64)) for D in pattern]
        )
        f = piece_objective(self.ts, masks, torch.tensor(problem.targets()), problem)
        self.grads = torch.autograd.grad(f, self.ts, create_graph=True)

    def hvp(self, v: np.ndarray) -> np.ndarray:
        torch = self.torch
        vs = [
            torch.from_numpy(np.ascontiguousarray(x))
            for x in unflatten(np.asarray(v, np.float64), self.shapes)
        ]
        gv = sum((g * x).sum() for g, x in zip(self.grads, vs))
        hv = torch.autograd.grad(gv, self.ts, retain_graph=True)
        return np.concatenate([h.detach().numpy().ravel() for h in hv])


@fill_doc
def hessian_operator(
    params: Sequence[np.ndarray], problem: Problem, pattern: Sequence[np.ndarray] | None = None
) -> Any:
    """``scipy.sparse.linalg.LinearOperator`` of the Hessian of the smooth piece ``f_D`` at ``params``
    (``D`` = ``pattern``, default the current one), exact float64 Hessian-vector products.

    Parameters
    ----------
    %(landscape_params)s
    %(landscape_problem)s
    %(landscape_pattern)s

    Returns
    -------
    scipy.sparse.linalg.LinearOperator
        The ``(P, P)`` Hessian, ``P`` the number of parameters.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> params = [rng.standard_normal((3, 3)) for _ in range(3)]  # H_1, W_1, W_2 of K = 3, L = 2, n = 1
    >>> problem = Problem(3, 2, 1, 0.01, 0.01)
    >>> H = hessian_operator(params, problem)
    >>> H.shape, (H @ np.zeros(27)).shape
    ((27, 27), (27,))
    """
    from scipy.sparse.linalg import LinearOperator

    if pattern is None and not is_smooth(problem):
        pattern = activation_pattern(params)
    piece = _Piece(params, problem, pattern)
    size = sum(int(np.prod(s)) for s in piece.shapes)
    return LinearOperator((size, size), matvec=piece.hvp, dtype=np.float64)


def _lbfgs(
    fun: Callable[[list[np.ndarray]], tuple[float, list[np.ndarray]]],
    x: np.ndarray,
    shapes: Sequence[tuple[int, ...]],
    **options: Any,
) -> Any:
    """scipy L-BFGS-B (float64, ``ftol`` 1e-16) on ``fun(params) -> (f, [gradients])`` over the flat vector
    ``x``; overflow on the way is left to the line search (``inf`` is rejected)."""
    from scipy.optimize import minimize

    def fg(z: np.ndarray) -> tuple[float, np.ndarray]:
        f, g = fun(unflatten(z, shapes))
        return f, flatten(g)

    with np.errstate(over="ignore", invalid="ignore"):
        return minimize(fg, x, jac=True, method="L-BFGS-B", options={"ftol": 1e-16, **options})


@dataclass
class PolishResult:
    """Outcome of :func:`polish`: the point, its true float64 loss and gradient norm, and what was done."""

    params: list[np.ndarray]
    loss: float
    grad_norm: float
    start_loss: float
    lbfgs_iterations: int = 0
    newton_rounds: int = 0
    pattern_stable: bool = False
    info: dict[str, Any] = field(default_factory=dict)


@fill_doc
def polish(
    params: Sequence[np.ndarray] | DUFMFit | str | Path,
    problem: Problem | None = None,
    *,
    run: int | None = None,
    lbfgs_iter: int = 5000,
    newton_rounds: int = 4,
    newton_iter: int = 30,
    gtol: float = 1e-11,
    newton_below: float = 1e-3,
) -> PolishResult:
    """Second-order float64 polish of one point (module docstring): L-BFGS on ``f``, then trust-region Newton
    on the smooth piece of the current activation pattern, re-checking the pattern after each solve.

    Newton runs only where it can converge fast: no pre-activation at a kink (:func:`zero_preactivations`)
    and a gradient norm below ``newton_below`` after L-BFGS (at a kink the smooth piece's gradient does not
    vanish, and Newton there costs minutes for nothing).

    Parameters
    ----------
    %(landscape_source)s
    lbfgs_iter : int, default 5000
        L-BFGS iterations.
    newton_rounds : int, default 4
        Newton solves at most (one per activation pattern visited).
    newton_iter : int, default 30
        Iterations of each Newton solve.
    gtol : float, default 1e-11
        The gradient tolerance of both.
    newton_below : float, default 1e-3
        Newton runs only when the gradient norm after L-BFGS is below this.

    Returns
    -------
    PolishResult
        The best visited point, its loss and gradient norm, and what was done.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> params = [rng.standard_normal((3, 3)) for _ in range(3)]  # H_1, W_1, W_2 of K = 3, L = 2, n = 1
    >>> problem = Problem(3, 2, 1, 0.01, 0.01)
    >>> result = polish(params, problem)
    >>> bool(result.loss < result.start_loss), bool(result.grad_norm < 1e-6)
    (True, True)
    """
    from scipy.optimize import minimize

    params, problem = as_point(params, problem, run=run)
    shapes = [np.shape(p) for p in params]
    x = flatten(params)
    f0 = value(unflatten(x, shapes), problem)

    def fg(z: np.ndarray, pattern: Sequence[np.ndarray] | None = None) -> tuple[float, np.ndarray]:
        f, g = value_and_grad(unflatten(z, shapes), problem, pattern)
        return f, flatten(g)

    res = _lbfgs(lambda p: value_and_grad(p, problem), x, shapes, maxiter=lbfgs_iter, maxcor=30, gtol=gtol)
    best_x, best_f = (res.x, float(res.fun)) if math.isfinite(res.fun) and res.fun <= f0 else (x, f0)
    stable, rounds = False, 0
    smooth = is_smooth(problem)  # one piece: Newton on f itself, no pattern to re-check
    at_kink = not smooth and sum(zero_preactivations(unflatten(best_x, shapes))) > 0
    if at_kink or grad_norm(unflatten(best_x, shapes), problem) > newton_below:
        newton_rounds = 0
    for rounds in range(1, newton_rounds + 1):  # noqa: B007  (the count is reported)
        pattern = None if smooth else activation_pattern(unflatten(best_x, shapes))
        cache: dict[str, Any] = {}

        def hessp(
            z: np.ndarray,
            p: np.ndarray,
            pattern: list[np.ndarray] | None = pattern,
            cache: dict[str, Any] = cache,
        ) -> np.ndarray:
            key = z.tobytes()
            if cache.get("key") != key:
                cache["key"], cache["piece"] = key, _Piece(unflatten(z, shapes), problem, pattern)
            return np.asarray(cache["piece"].hvp(p))

        try:
            with np.errstate(over="ignore", invalid="ignore"):
                nres = minimize(
                    lambda z, pattern=pattern: fg(z, pattern),
                    best_x,
                    jac=True,
                    hessp=hessp,
                    method="trust-krylov",
                    options={"gtol": gtol, "maxiter": newton_iter},
                )
        except (ValueError, np.linalg.LinAlgError, RuntimeError):  # pragma: no cover - numerical failure
            break
        z = nres.x
        f_true = value(unflatten(z, shapes), problem)
        same = pattern is None or all(
            np.array_equal(a, b) for a, b in zip(activation_pattern(unflatten(z, shapes)), pattern)
        )
        if math.isfinite(f_true) and f_true <= best_f:
            best_x, best_f = z, f_true
        else:
            break
        if same:
            stable = True
            break
    out = unflatten(best_x.copy(), shapes)
    return PolishResult(
        params=out,
        loss=best_f,
        grad_norm=grad_norm(out, problem),
        start_loss=f0,
        lbfgs_iterations=int(res.nit),
        newton_rounds=rounds,
        pattern_stable=stable,
    )


_EPS_SCHEDULE = (1e-3, 1e-5, 1e-7)


def _sigma(x: np.ndarray, eps: float) -> tuple[np.ndarray, np.ndarray]:
    """σ_ε(x) (Definition 7: 0 for x <= 0, x²(2ε − x)/ε² on (0, ε), x for x >= ε) and σ_ε'(x)."""
    inside = x * x * (2 * eps - x) / eps**2
    d_inside = (4 * eps * x - 3 * x * x) / eps**2
    s = np.where(x <= 0, 0.0, np.where(x >= eps, x, inside))
    ds = np.where(x <= 0, 0.0, np.where(x >= eps, 1.0, d_inside))
    return s, ds


def _value_grad_eps(
    params: Sequence[np.ndarray], problem: Problem, eps: float
) -> tuple[float, list[np.ndarray]]:
    """Eq. (1) with σ_ε between layers and its gradient (:func:`forward_backward` with ``s_l = σ_ε``)."""
    return forward_backward(params, problem, lambda l, Ht: _sigma(Ht, eps))


@fill_doc
def sigma_eps_polish(
    params: Sequence[np.ndarray],
    problem: Problem,
    *,
    eps: Sequence[float] = _EPS_SCHEDULE,
    max_iter: int = 800,
) -> tuple[list[np.ndarray], float]:
    """σ_ε continuation (module docstring, step 3) then :func:`~.dufm_piecewise.polish`; returns the best
    visited point by the true eq. (1) (float64) and its loss.  A smooth family (:func:`is_smooth`) has no
    kinks to relax: :func:`polish` alone (L-BFGS, then trust-region Newton on ``f``).

    Parameters
    ----------
    %(landscape_params)s
    %(landscape_problem)s
    eps : sequence of float, default (1e-3, 1e-5, 1e-7)
        The ε schedule of the continuation.
    max_iter : int, default 800
        L-BFGS iterations per ε.

    Returns
    -------
    params : list of ndarray
        The best visited point.
    loss : float
        Its eq. (1), float64.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> params = [rng.standard_normal((3, 3)) for _ in range(3)]  # H_1, W_1, W_2 of K = 3, L = 2, n = 1
    >>> problem = Problem(3, 2, 1, 0.01, 0.01)
    >>> point, loss = sigma_eps_polish(params, problem, max_iter=200)
    >>> bool(loss < value(params, problem)), len(point)
    (True, 3)
    """
    shapes = [np.shape(p) for p in params]
    x = flatten(params)
    best_x, best_f = x, value(params, problem)
    if is_smooth(problem):
        result = polish(params, problem)
        if result.loss <= best_f:
            return result.params, result.loss
        return unflatten(best_x.copy(), shapes), best_f
    for e in eps:
        fun = partial(_value_grad_eps, problem=problem, eps=e)
        res = _lbfgs(fun, x, shapes, maxiter=max_iter, gtol=1e-12)
        if not np.all(np.isfinite(res.x)):
            break
        x = res.x
        f_true = value(unflatten(x, shapes), problem)
        if f_true < best_f:
            best_x, best_f = x, f_true
    result = polish(unflatten(best_x, shapes), problem, lbfgs_iter=2000)
    if result.loss <= best_f:
        return result.params, result.loss
    return unflatten(best_x.copy(), shapes), best_f

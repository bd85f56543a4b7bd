"""Shared docstring blocks, written once (SciPy's ``doccer`` style): a docstring line that holds only
``%(name)s`` is replaced by the block ``name`` of :data:`BLOCKS`, indented like the marker, when the function
is decorated with :func:`fill_doc`.

To add a block: put its numpydoc text (unindented) in :data:`BLOCKS`; write ``%(name)s`` on its own line in
each docstring that repeats it and decorate the function with ``@fill_doc``.  A marker without a block is a
``KeyError`` at import, so a misspelt name cannot ship.
"""

from __future__ import annotations

from typing import TypeVar

__all__ = ["BLOCKS", "fill_doc"]

T = TypeVar("T")

#: the blocks, by name: numpydoc text without indentation
BLOCKS: dict[str, str] = {
    # the five arguments of a theory function that takes a problem (deepcollapse.theory.problem.problem_of)
    "problem": """\
classes : int or Problem
    ``K >= 2``, or the whole :class:`~deepcollapse.theory.problem.Problem` (then ``layers`` .. ``lam_w``
    are left out; ``problem=`` works too).
layers, n, lam_h, lam_w
    ``L >= 1``, samples per class ``n >= 1``, ``λ_{H_1}``, ``λ_{W_1} .. λ_{W_L}`` (one value, ``L``
    values, or a comma-separated string).""",
    "problem_kw": """\
problem : Problem, optional
    The problem by keyword.""",
    # nets: the arguments of a run's summary (RunFolder.summary / write_summary, MemoryRun.write_summary)
    "net_summary_args": """\
device : torch.device
    The device the run computed on.
n_params : int
    The number of parameters of the network.
n_train : int
    The number of training samples.""",
    # theory: blocks shared by the docstrings of deepcollapse.theory (prefixed theory_)
    "theory_construction": """\
construction : {"best", "def9", "def11.1", "def11.2"}, default "best"
    Which SRG construction; ``"best"`` is the lower of 11.1 and 11.2 (``"def9"`` when ``K = C(r, 2)``).""",
    "theory_width": """\
width : int, optional
    Every hidden width ``d_l`` (default: the construction's own, ``K`` for DNC); the class means' rows are
    spread over ``width`` rows.""",
    "theory_chain": """\
geom : Geometry
    The unit class-mean geometry of the block (:func:`dnc_geometry`, :func:`srg_geometry`).
layers : int
    ``L``, the number of weight matrices.
n : int
    Samples per class.
lam_h : float
    ``λ_{H_1} > 0``.
lam_w : sequence of float
    ``λ_{W_1} .. λ_{W_L}``.""",
    # family: blocks shared by the docstrings of deepcollapse.family (prefixed family_)
    "family_X": """\
X : numpy.ndarray
    The pre-activation ``H~`` (any shape).""",
    "family_torch_X": """\
X : torch.Tensor
    The pre-activation ``H~`` (any shape).""",
    "family_scalar": """\
x : float
    The pre-activation, one number.
eps, inv : float
    ``ε`` and ``1/ε²``, read by σ_ε only (the other activations ignore them).""",
    "family_forward_": """\
pre : numpy.ndarray
    The pre-activation ``H~`` (float).
post : numpy.ndarray
    The output, ``pre``'s shape and dtype (may be ``pre`` itself when ``keeps_pre`` is False).
zeros : numpy.ndarray
    All zeros, ``pre``'s shape and dtype.
scratch : numpy.ndarray
    A spare array of ``pre``'s shape and dtype (overwritten).""",
    "family_backprop_": """\
G : numpy.ndarray
    The back-propagated error, multiplied in place.
pre : numpy.ndarray
    The pre-activation ``H~`` (``post`` itself when ``keeps_pre`` is False).
post : numpy.ndarray
    The post-activation ``σ(H~)``.
scratch : numpy.ndarray
    A spare float array of ``G``'s shape (overwritten).
mask : numpy.ndarray
    A spare bool array of ``G``'s shape (overwritten).""",
    "family_out_Y": """\
out : numpy.ndarray
    The network outputs ``W_L H_L``, shape ``(..., K, N)`` (``...``: a batch of runs).
Y : numpy.ndarray
    The one-hot targets ``(K, N)`` (:func:`~deepcollapse.family.losses.targets`).""",
    "family_torch_out_Y": """\
out : torch.Tensor
    The network outputs ``W_L H_L``, shape ``(..., K, N)``.
Y : torch.Tensor
    The one-hot targets ``(K, N)``, ``out``'s dtype.""",
    "family_loop_residual_": """\
E : numpy.ndarray
    One run's outputs ``(K, N)`` on entry, ``scale · residual`` on exit.
Y : numpy.ndarray
    The one-hot targets ``(K, N)``.
scale : float
    The factor, of ``E``'s dtype (the kernel passes ``1/N``).
m, s : numpy.ndarray
    Spare ``(N,)`` arrays (overwritten).""",
    "family_residual_": """\
E : numpy.ndarray
    The outputs ``(..., K, N)`` on entry, the residual on exit.
Y : numpy.ndarray
    The one-hot targets ``(K, N)``.
scratch : numpy.ndarray
    A spare array of ``E``'s shape and dtype (overwritten).""",
    # metrics: blocks shared by the docstrings of deepcollapse.metrics (prefixed metrics_)
    "metrics_features": """\
features : array_like, (N, D)
    One sample per row (numpy array or torch tensor; computed in float64).
labels : array_like of int, (N,)
    Class labels in ``0..K-1``.
num_classes : int, optional
    ``K``; default ``max(labels) + 1``.""",
    "metrics_features_or_means": """\
features : array_like, (N, D) or (K, D)
    One sample per row (numpy array or torch tensor; computed in float64), or the class means as rows when
    ``labels`` is None.
labels : array_like of int, (N,), optional
    Class labels in ``0..K-1``; None: ``features`` are the class means.
num_classes : int, optional
    ``K``; default ``max(labels) + 1``.""",
    "metrics_weighted": """\
weighted : bool, default True
    Global mean sample-weighted, ``(1/N) Σ_i h_i``; False: unweighted, ``(1/K) Σ_c μ_c``.""",
    "metrics_drop_empty": """\
drop_empty : bool, default False
    Drop classes without samples (the rest renumbered ``0..K'-1``) instead of raising ``ConfigError``.""",
    "metrics_rtol": """\
rtol : float, optional
    Rank tolerance ``rtol · σ_1`` instead of the dtype default (:func:`~deepcollapse._core.rank_tolerance`
    of the features' dtype).""",
    "metrics_centered": """\
centered : bool, default True
    Use the centred means ``μ_c − μ_G`` (the ETF convention); False: the uncentred ``μ_c`` (bias-free).""",
    "metrics_matrix": """\
matrix : array_like, 2-D
    Any finite matrix (numpy or torch).""",
    # dufm: blocks shared by the docstrings of deepcollapse.dufm (prefixed dufm_)
    "dufm_eq1": """\
H1 : torch.Tensor, (R, d_1, N)
    The features of the ``R`` runs.
weights : sequence of torch.Tensor
    ``W_1 (R, d_2, d_1), ..., W_L (R, K, d_L)``.
Y : torch.Tensor, (K, N)
    The targets (:func:`targets`), the parameters' dtype.
lam_h : float
    ``λ_{H_1}``.
lam_w : sequence of float
    ``λ_{W_1} .. λ_{W_L}``.""",
    "dufm_family": """\
family : Family, optional
    The loss and activation (:func:`~deepcollapse.family.get_family`); default mse+relu.""",
    "dufm_config": """\
config : DUFMConfig
    The training configuration.""",
    "dufm_history": """\
history : list of (step, loss)
    The run's logged losses (``metrics.jsonl``), the last at the final step.""",
    "dufm_state": """\
state : FitState
    The loop's state: a live view, valid during the call only (read it, do not change the parameters).""",
    "dufm_progress": """\
progress : bool, default True
    Show a progress bar of the steps (:class:`~deepcollapse.dufm.fit.ProgressBar`).""",
    "dufm_max_steps": """\
max_steps : int, optional
    Stop after this many steps with a checkpoint, as if interrupted (``resume_dufm`` continues); the return
    value then holds only ``step`` and ``finished = False``.""",
    "dufm_criteria": """\
criteria : Criteria
    The thresholds (default: ``Criteria()``).""",
    # runs: blocks shared by the docstrings of deepcollapse.runs (prefixed runs_)
    "runs_config_data": """\
data : mapping
    A config of this kind as a dict (a sweep point's keys).""",
    "runs_folder": """\
folder : str or Path
    A task's folder.""",
    "runs_progress": """\
progress : bool, default False
    Show the trainer's progress bars.""",
    "runs_sweep_spec": """\
spec : SweepSpec
    The validated sweep (:func:`load_sweep`).""",
    "runs_sweep_out": """\
out_dir : str or Path
    The sweep's folder (``points/<point-id>/...``, ``results.csv``, ``summary.csv``).""",
    # landscape: blocks shared by the docstrings of deepcollapse.landscape (prefixed landscape_)
    "landscape_params": """\
params : sequence of ndarray
    The point ``[H_1 (d_1, K n), W_1 (d_2, d_1), ..., W_L (K, d_L)]``, float64.""",
    "landscape_problem": """\
problem : Problem
    The instance of eq. (1): its ``λ``s, ``n`` and model family.""",
    "landscape_source": """\
params : sequence of ndarray, DUFMFit, str or Path
    The point ``[H_1 (d_1, K n), W_1 (d_2, d_1), ..., W_L (K, d_L)]`` (float64), or one run of a
    :class:`~deepcollapse.dufm.fit.DUFMFit` or of a DUFM run folder
    (:func:`~deepcollapse.dufm.points.as_point`).
problem : Problem, optional
    The instance of eq. (1): its ``λ``s, ``n`` and model family; required with arrays (a fit or a folder
    brings its own).
run : int, optional
    The run of a fit or a folder (default: its lowest float64 loss).""",
    "landscape_pattern": """\
pattern : sequence of ndarray of bool, optional
    The activation pattern ``D_2 .. D_L`` of the piece ``f_D`` (default the current one); ignored for a
    smooth family (:func:`~deepcollapse.landscape.piecewise.is_smooth`).""",
    "landscape_masks": """\
masks : list of ndarray, optional
    The kink masks (:func:`~deepcollapse.landscape.probes.kink_masks`); default those of ``params``.""",
    "landscape_kink_rtol": """\
kink_rtol : float
    Pre-activations with ``|H~| <= kink_rtol · max|H~|`` (per layer) count as kinks.""",
}


def fill_doc(obj: T) -> T:
    """Replace every docstring line ``%(name)s`` of ``obj`` by ``BLOCKS[name]``, indented like the marker.

    Parameters
    ----------
    obj : function or class
        Its ``__doc__`` is rewritten in place (nothing happens when docstrings are stripped, ``python -OO``).

    Returns
    -------
    function or class
        ``obj`` itself.

    Examples
    --------
    >>> @fill_doc
    ... def f(problem=None):
    ...     '''Parameters
    ...     ----------
    ...     %(problem_kw)s
    ...     '''
    >>> print(f.__doc__.splitlines()[2].strip())
    problem : Problem, optional
    """
    doc = obj.__doc__
    if not doc:
        return obj
    lines: list[str] = []
    for line in doc.splitlines():
        stripped = line.strip()
        if stripped.startswith("%(") and stripped.endswith(")s"):
            indent = line[: len(line) - len(line.lstrip())]
            block = BLOCKS[stripped[2:-2]]
            lines.extend(indent + b if b else b for b in block.splitlines())
        else:
            lines.append(line)
    obj.__doc__ = "\n".join(lines) + ("\n" if doc.endswith("\n") else "")
    return obj

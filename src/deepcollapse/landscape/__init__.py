"""deepcollapse.landscape: eq. (1) at single float64 points -- where GD's solutions sit and what lies below.

Nothing here trains with the batched trainer's bookkeeping; it works on one point ``[H1, W_1, ..., W_L]``.

- :mod:`.piecewise` -- the piecewise-smooth calculus of eq. (1): one forward/backward pass, gradients, HVPs,
  the activation pattern, the L-BFGS polish and the σ_ε continuation (``Problem``, ``polish``).
- :mod:`.search` -- ``search_dufm``: the global search (random, construction, perturbed and redrawn starts,
  GD on the kernel, polish) with a resumable folder of ranked solutions; its pieces :mod:`.search_config`
  (``SearchConfig``, the results), :mod:`.search_starts` (the round plan and its starts) and
  :mod:`.search_state` (the pool, the state and solution files).
- :mod:`.verdicts` -- ``landscape``: Hessian verdicts (local minimum, saddle, critical at a kink, not
  critical, undecided); its pieces :mod:`.probes` (kinks, Clarke residuals, the descent probes),
  :mod:`.hessian` (the Hessian spectrum off the symmetries) and :mod:`.targets` (``load_point``).
- :mod:`.kinks` -- ``refine_at_kinks``: an active-set method on the kink manifold (sharper verdicts at kinks);
  ``refine_verdict``: the verdict re-read at the refined point.
- :mod:`.descent` -- ``descend_until_certified``: follow a certified descent (line search, polish, kink
  refinement) until the point is critical at a kink or a local minimum, by count budgets.
- :mod:`.best_known` -- the best-known registry (``Registry``: offers re-evaluated by ``theory check``, kept
  only below the cell's row; merge; locked, versioned); its rows in :mod:`.best_known_types`.
- :mod:`.explain` -- the verdicts in words (``MEANINGS``, ``explain``).
- :mod:`.slices` -- ``loss_slices``, ``descent_slice``: eq. (1) along lines and planes (the figures' data).
- :mod:`.solution_file` -- ``save_solution`` / ``load_solution`` / ``check_solution``: a point as an ``.npz``
  anyone can re-evaluate (numpy only; ``deepcollapse theory check``).

Extension point: a new kind of start is one generator in :mod:`.search_starts`; a new verdict is one entry of
``VERDICTS`` in :mod:`.verdicts` with its test.
"""

from deepcollapse._core.lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "Problem": "piecewise",
        "PolishResult": "piecewise",
        "polish": "piecewise",
        "value_and_grad": "piecewise",
        "SearchConfig": "search",
        "search_dufm": "search",
        "SearchSummary": "search",
        "SearchSolution": "search",
        "SearchInterrupted": "search",
        "landscape": "verdicts",
        "Landscape": "verdicts",
        "VERDICTS": "verdicts",
        "loss_slices": "verdicts",
        "descent_slice": "slices",
        "refine_at_kinks": "kinks",
        "KinkRefinement": "kinks",
        "refine_verdict": "kinks",
        "RefinedVerdict": "kinks",
        "explain": "explain",
        "descend_until_certified": "descent",
        "CertifiedDescent": "descent",
        "Registry": "best_known",
        "Provenance": "best_known",
        "save_solution": "solution_file",
        "load_solution": "solution_file",
        "check_solution": "solution_file",
        "LoadedSolution": "solution_file",
        "SolutionCheck": "solution_file",
        "LossSlices": "slices",
        "DescentSlice": "slices",
        "DescentProbe": "probes",
        "SolutionDescription": "search_state",
    },
)

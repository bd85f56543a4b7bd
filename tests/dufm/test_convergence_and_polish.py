"""How far a run is from a verdict, and a polish never above its start (issue 32, point 8)."""

from __future__ import annotations

import math

import pytest

from deepcollapse.dufm import DUFMConfig, train_dufm
from deepcollapse.dufm.classify import GRAD_TOL, PLATEAU_TOL, steps_to_verdict


def _geometric(L: float, A: float, q: float, T: int, every: int) -> list[tuple[int, float]]:
    return [(t, L + A * q**t) for t in range(0, T + 1, every)]


def test_the_gradient_bound_is_the_geometric_extrapolation():
    """Exact geometric decay f(t) = L + A q^t: the rate of decrease shrinks by q per step, the gradient norm
    (∝ √rate under GD) by √q, so it reaches GRAD_TOL after 2 ln(GRAD_TOL / g) / ln q steps."""
    q, g = 0.999, 2e-4
    history = _geometric(0.2, 1.0, q, 3000, 100)
    N, how = steps_to_verdict(history, g, history[-1][1])
    expected = 2 * math.log(GRAD_TOL / g) / math.log(q)
    assert "gradient norm reaches" in how
    assert N == math.ceil(expected)


def test_the_plateau_bound_is_where_the_loss_drop_over_the_last_tenth_falls_below_the_tolerance():
    """A large gradient norm: the verdict comes from the plateau rule, checked here on the closed form of
    f (the last loss logged at or before 90 % of T + N against f(T + N))."""
    L, A, q, every = 0.05, 0.2, 0.9995, 100
    f = lambda t: L + A * q**t  # noqa: E731
    history = _geometric(L, A, q, 2000, every)
    N, how = steps_to_verdict(history, 1.0, f(2000))
    assert N is not None and "stops falling" in how

    def drop(total: int) -> float:
        start = (int(0.9 * total) // every) * every
        return (f(start) - f(total)) / f(total)

    assert drop(2000 + N) <= PLATEAU_TOL * 1.05  # the verdict is there (to the model's rounding) ...
    assert drop(2000 + int(0.8 * N)) > PLATEAU_TOL  # ... and not much earlier


@pytest.mark.parametrize(
    ("history", "why"),
    [
        ([(0, 1.0), (100, 0.5)], "fewer than three losses"),
        ([(0, 1.0), (100, 0.9), (200, 0.7)], "not slowing down"),
        ([(0, 1.0), (100, 0.9), (200, 0.95)], "did not fall"),
    ],
)
def test_no_number_where_the_model_does_not_apply(history, why):
    N, how = steps_to_verdict(history, 1e-2, history[-1][1])
    assert N is None and why in how


def test_a_not_converged_run_says_how_far_it_is(tmp_path, monkeypatch):
    """The README's notebook example (2 000 steps): each run says its gradient norm and, where the logged
    losses decay, a step estimate."""
    monkeypatch.setenv("DEEPCOLLAPSE_KERNEL", "numpy")
    config = DUFMConfig(
        classes=4, n=5, layers=3, width=8, lam_h=0.004, lam_w=0.004, lr=0.5, steps=2000, runs=2
    )
    summary = train_dufm(config, tmp_path / "tiny", progress=False)
    estimates = 0
    for run in summary.runs:
        if run.classification != "not_converged":
            assert run.convergence_note is None
            continue
        assert run.convergence_note.startswith("not converged: gradient norm ")
        if run.steps_to_verdict is None:
            assert "no estimate: " in run.convergence_note
            continue
        estimates += 1
        shown = round(run.steps_to_verdict, 2 - len(str(run.steps_to_verdict)))
        assert f"needs roughly {shown:,} more steps at this rate" in run.convergence_note
    assert estimates >= 1


def test_the_polish_never_reports_more_than_the_run_it_started_from(tmp_path):
    """The issue's case, 10 times shorter: run 0 (seed 0) of K = 4, L = 3, width 8, n = 5 ends at a converged
    point whose H_1 has not collapsed; every collapsed re-fit of its class means is higher than the run."""
    config = DUFMConfig(
        classes=4, n=5, layers=3, width=8, lam_h=0.004, lam_w=0.004, lr=0.5, steps=20000, runs=1, seed=0
    )
    summary = train_dufm(config, tmp_path / "run", progress=False)
    r0 = summary.runs[0]
    assert r0.polished_loss <= r0.final_loss
    assert r0.dnc1[0] > 0.1 and r0.polish_refit_loss > r0.final_loss  # the collapsed re-fits are higher
    assert r0.polish_source == "run" and r0.polished_loss == r0.final_loss
    assert r0.convergence_note.startswith("not converged to a known structure: GD stopped (gradient norm")


def _random_point(K: int = 3, n: int = 2, width: int = 4, seed: int = 0):
    import numpy as np

    rng = np.random.default_rng(seed)
    config = DUFMConfig(classes=K, n=n, layers=2, width=width, lam_h=0.01, lam_w=0.01, runs=1, steps=100)
    return config, [
        rng.normal(size=(width, K * n)),
        rng.normal(size=(width, width)),
        rng.normal(size=(K, width)),
    ]


def test_a_run_still_falling_says_its_relative_loss_drop_as_a_percentage():
    """Issue 45, point 7: "the loss fell 5 (relative)" was a relative change shown as a bare number. A point
    whose logged loss at 90 % of the steps was 6 times its final one: the loss fell by 500 % of its final
    value, said as a percentage with the rule's threshold."""
    from deepcollapse.dufm.classify import classify

    config, params = _random_point()
    final = classify(params, config).runs[0].final_loss
    history = {0: [(0, 10 * final), (90, 6 * final), (100, final)]}
    run = classify(params, config, history=history).runs[0]
    assert run.classification == "not_converged" and run.loss_decrease_last_10pct == pytest.approx(5.0)
    note = run.convergence_note
    assert note.startswith("not converged: gradient norm ")
    assert "the loss fell by 500 % of its final value over the last 10 % of the steps (> 0.1 %)" in note
    assert "(relative)" not in note


def test_a_run_stopped_at_no_known_structure_does_not_call_itself_converged():
    """Issue 45, point 7: label ``not_converged`` (rule 8: GD stopped at a full-rank point that is not DNC)
    came with the note "converged ... more steps will not change this label". The note now says what the
    label says: not converged to a known structure, GD stopped there."""
    from deepcollapse.dufm.classify import classify
    from deepcollapse.dufm.criteria import Criteria

    config, params = _random_point()
    stopped = Criteria(grad_tol=1e9)  # every gradient counts as small: rule 8 for this full-rank point
    final = classify(params, config, stopped).runs[0].final_loss
    history = {0: [(0, final * 1.00002), (90, final * 1.00001), (100, final)]}
    run = classify(params, config, stopped, history=history).runs[0]
    assert run.classification == "not_converged" and run.steps_to_verdict is None
    note = run.convergence_note
    assert note.startswith("not converged to a known structure: GD stopped (gradient norm ")
    assert "the loss fell by 0.001 % of its final value over the last 10 % of the steps" in note
    assert "at a full-rank point that is not DNC: M_L's σ_1/σ_K is " in note
    assert note.endswith("more steps will not change this label")

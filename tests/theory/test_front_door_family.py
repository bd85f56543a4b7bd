"""The front door's theory (``dc.loss_dnc``, ``dc.loss_srg``, ``dc.compare``) answers for the Problem's family
(issue 44, point 1): the same values as ``deepcollapse theory compare --loss ... --activation ... --json``,
and one-line refusals where the family has no such construction."""

from __future__ import annotations

import json

import pytest

import deepcollapse as dc
from deepcollapse.cli import main
from deepcollapse.family import ACTIVATIONS, LOSSES
from deepcollapse.theory import ce_dnc_solution, ce_srg_solution, dnc_solution, evaluate, srg_solution

#: ε of each activation that takes one: 0.1 keeps σ_ε = ReLU on the constructions' active entries, 1.0 does
#: not (the relaxed values are explicit evaluations); every other activation takes none
EPS = {"relu_eps": (0.1, 1.0)}
FAMILIES = [(loss, act, eps) for loss in LOSSES for act in ACTIVATIONS for eps in EPS.get(act, (None,))]

PROBLEMS = {
    "def9": (6, 3, 2, 0.004, [0.004] * 3),  # K = C(4, 2)
    "def11-per-layer": (7, 4, 2, 0.002, [0.002, 0.003, 0.002, 0.002]),
    "no-srg": (4, 3, 2, 0.004, [0.004] * 3),  # K < 6: SRG undefined
    "flagship": (10, 4, 50, 0.004, [0.004] * 4),
}


def _problem(key: str, loss: str, act: str, eps: float | None) -> dc.Problem:
    K, L, n, lam_h, lam_w = PROBLEMS[key]
    return dc.Problem(K, L, n, lam_h, lam_w, loss=loss, activation=act, eps=eps)


def _cli(capsys: pytest.CaptureFixture[str], p: dc.Problem, *extra: str) -> tuple[int, str, str]:
    argv = ["theory", "compare", "--classes", str(p.classes), "--layers", str(p.layers), "--n", str(p.n)]
    argv += ["--lam-h", repr(p.lam_h), "--lam-w", ",".join(repr(x) for x in p.lam_w)]
    argv += ["--loss", p.loss, "--activation", p.activation]
    argv += [] if p.eps is None else ["--eps", repr(p.eps)]
    code = main([*argv, *extra])
    out, err = capsys.readouterr()
    return code, out, err


def _explicit(p: dc.Problem, name: str, construction: str | None = None) -> float:
    """Eq. (1) under the problem's family on the explicit matrices of the construction (an independent
    route to the value: the matrices, not the closed forms / the reduced problem)."""
    K, L, n, lam_h, lams = p.parts()
    if p.loss == "ce":
        sol = (
            ce_dnc_solution(K, L, n, lam_h, lams)
            if name == "dnc"
            else ce_srg_solution(K, L, n, lam_h, lams, construction)
        )
    else:
        sol = dnc_solution(K, L, n, lam_h, lams) if name == "dnc" else srg_solution(K, L, n, lam_h, lams)
    return evaluate(sol.H1, sol.weights, p).total


@pytest.mark.parametrize("key", list(PROBLEMS))
@pytest.mark.parametrize(("loss", "act", "eps"), FAMILIES)
def test_front_door_equals_the_command_line(capsys, key, loss, act, eps):
    p = _problem(key, loss, act, eps)
    code, out, err = _cli(capsys, p, "--json")
    assert code == 0 and err == ""
    cli = json.loads(out)

    assert json.loads(json.dumps(dc.compare(p).to_dict())) == cli
    assert dc.compare(problem=p).to_dict() == dc.compare(p).to_dict()

    dnc = dc.loss_dnc(p)
    assert dnc.loss == cli["loss_dnc"]
    assert dnc.loss == pytest.approx(_explicit(p, "dnc"), rel=1e-8)

    if act == "linear":
        with pytest.raises(dc.ConfigError) as err_info:
            dc.loss_srg(p)
        message = str(err_info.value)
        assert "\n" not in message and "activation 'linear' has none" in message
        assert f"family {loss}+linear" in message
        assert cli["loss_srg"] is None
        return
    srg = dc.loss_srg(p)
    if cli["loss_srg"] is None:
        assert srg is None and key == "no-srg"
        return
    assert srg.loss == cli["loss_srg"]
    default = (loss, act) == ("mse", "relu")
    assert srg.construction == (
        cli["srg_construction"] if default else cli["candidates"]["srg"]["construction"]
    )
    assert srg.loss == pytest.approx(_explicit(p, "srg", srg.construction), rel=1e-8)


def test_the_issue_values():
    """The values of the issue: the flagship problem under cross-entropy is not the MSE one."""
    mse = dc.Problem(classes=10, layers=4, n=50, lam_h=0.004, lam_w=0.004)
    ce = mse.with_family(loss="ce")
    assert (round(dc.loss_dnc(mse).loss, 6), round(dc.loss_srg(mse).loss, 6)) == (0.214623, 0.174826)
    assert round(dc.loss_dnc(ce).loss, 6) == round(dc.compare(ce).loss_dnc, 6) == 0.459182
    assert dc.loss_srg(ce).loss == pytest.approx(_explicit(ce, "srg", "def9"), rel=1e-8)
    assert dc.loss_srg(ce).loss > 0.2  # not the MSE value 0.174826


@pytest.mark.parametrize("loss", LOSSES)
def test_a_single_srg_construction_is_refused_outside_mse_relu_as_on_the_command_line(capsys, loss):
    p = _problem(
        "def11-per-layer", loss, "relu_eps" if loss == "mse" else "relu", 0.1 if loss == "mse" else None
    )
    with pytest.raises(dc.ConfigError) as err_info:
        dc.loss_srg(p, construction="def11.1")
    message = str(err_info.value)
    assert "\n" not in message and "construction == 'def11.1'" in message and p.family.name in message
    code, _, err = _cli(capsys, p, "--construction", "def11.1")
    assert code == 2 and "--construction == 'def11.1', must be 'best'" in err
    with pytest.raises(dc.ConfigError, match="construction") as err_info:
        dc.loss_srg(p, construction="def12")
    assert "\n" not in str(err_info.value)
    # mse+relu keeps every construction (its closed forms)
    assert dc.loss_srg(p.with_family(), construction="def11.1").construction == "def11.1"


def test_the_mse_relu_closed_forms_refuse_another_family():
    """The closed forms themselves never give the mse+relu value for another family."""
    import deepcollapse.theory as th
    from deepcollapse.theory.compare import compare as closed_compare
    from deepcollapse.theory.constructions import loss_dnc as closed_dnc
    from deepcollapse.theory.constructions import loss_srg as closed_srg

    assert (th.loss_dnc, th.loss_srg, th.compare) == (dc.loss_dnc, dc.loss_srg, dc.compare)
    p = _problem("def9", "ce", "relu", None)
    for name, closed in (("loss_dnc", closed_dnc), ("loss_srg", closed_srg), ("compare", closed_compare)):
        with pytest.raises(dc.ConfigError) as err_info:
            closed(p)
        message = str(err_info.value)
        assert "\n" not in message and message.startswith("family ce+relu has no closed form")
        assert f"use deepcollapse.{name}" in message
    assert closed_dnc(p.with_family()).loss == dc.loss_dnc(p.with_family()).loss

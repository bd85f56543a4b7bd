"""``net train --until converged --max-epochs N`` (issue 43): the criterion, the stop, the summary, the
refusals and the exact continuation of a run stopped at its budget."""

from __future__ import annotations

import json
import math

import pytest
import torch

from deepcollapse import ConfigError
from deepcollapse.cli import main
from deepcollapse.nets.checkpoint import load_run_checkpoint
from deepcollapse.nets.config import NetConfig
from deepcollapse.nets.convergence import MIN_WINDOW, check_convergence
from deepcollapse.nets.outcome import classify_head, finalise_outcome
from deepcollapse.nets.train import fit_net, resume_net, train_net

torch.set_num_threads(1)

MLP = dict(
    dataset="digits",
    classes=[0, 1, 2],
    backbone="mlp",
    backbone_width=16,
    layers=3,
    width=8,
    n=10,
    n_test=2,
    batch_size=10,
    lr=0.05,
    lr_schedule="constant",
    eval_every=0,
    device="cpu",
    threads=1,
)


def _halves(values, w):
    window = values[-w:]
    a, b = window[: w - w // 2], window[w - w // 2 :]
    return sum(a) / len(a), sum(b) / len(b)


@pytest.mark.parametrize(
    "args, words",
    [
        (["--until", "converged"], "--until == 'converged' needs max_epochs (--max-epochs N)"),
        (["--until", "converged", "--max-epochs", "0"], "--max-epochs == 0, must be >= 1"),
        (["--until", "converged", "--max-epochs", "9", "--converge-rtol", "0"], "--converge-rtol == 0"),
        (["--until", "converged", "--max-epochs", "9", "--converge-acc-tol", "-1"], "--converge-acc-tol"),
        (["--until", "converged", "--max-epochs", "9", "--converge-window", "0"], "--converge-window"),
        (["--max-epochs", "9"], "--max-epochs == 9, must come with until 'converged'"),
        (
            ["--until", "converged", "--max-epochs", "9", "--lr-schedule", "cosine"],
            "--lr-schedule == 'cosine'",
        ),
        (["--until", "converged", "--max-epochs", "9", "--epochs", "5"], "--epochs == 5 with until"),
    ],
)
def test_bad_input_is_one_line_exit_2_nothing_written(tmp_path, capsys, args, words):
    out = tmp_path / "run"
    assert main(["net", "train", "--dataset", "digits", *args, "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("deepcollapse: error: ") and words in err[0], err
    assert not out.exists()


def test_stops_when_the_criterion_holds_and_says_why(tmp_path):
    cfg = NetConfig(**MLP, until="converged", max_epochs=40, converge_rtol=10.0, converge_acc_tol=1.0)
    summary = train_net(cfg, tmp_path / "run", progress=False)
    # generous tolerances: the criterion holds as soon as it compares a full window, MIN_WINDOW epochs
    assert summary.epochs_done == MIN_WINDOW and summary.stop_reason == "converged"
    conv = summary.convergence
    assert conv["converged"] and conv["window"] == MIN_WINDOW and conv["epoch"] == MIN_WINDOW
    a, b = _halves(summary.train_loss_per_epoch, MIN_WINDOW)  # the criterion recomputed by hand
    assert conv["loss_change"] == pytest.approx(abs(a - b) / a)
    records = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert records[-1]["epoch"] == MIN_WINDOW  # the stopping epoch is evaluated
    assert records[-1]["head_weight_norms"] and len(records[-1]["head_weight_norms"]) == cfg.layers
    on_disk = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert on_disk["stop_reason"] == "converged" and on_disk["until"] == "converged"
    # in memory: the same loop, the same stop
    fit = fit_net(cfg)
    assert fit.summary.epochs_done == MIN_WINDOW and len(fit.history) == MIN_WINDOW


def test_a_run_stopped_at_its_budget_resumes_exactly(tmp_path):
    tight = dict(until="converged", converge_rtol=1e-12, converge_acc_tol=1e-12)
    cfg = NetConfig(**MLP, **tight, max_epochs=12)
    summary = train_net(cfg, tmp_path / "a", progress=False)
    assert summary.epochs_done == 12 and summary.stop_reason == "max_epochs"
    assert not summary.convergence["converged"]
    assert summary.outcome.label == "not_converged" and "max_epochs == 12" in summary.outcome.why
    resumed = resume_net(tmp_path / "a", max_epochs=16, progress=False)
    straight = train_net(NetConfig(**MLP, **tight, max_epochs=16), tmp_path / "b", progress=False)
    assert resumed.epochs_done == straight.epochs_done == 16
    assert resumed.train_loss_per_epoch == straight.train_loss_per_epoch  # bit for bit on the CPU
    a = load_run_checkpoint(tmp_path / "a" / "checkpoint.pt", "cpu")["model"]
    b = load_run_checkpoint(tmp_path / "b" / "checkpoint.pt", "cpu")["model"]
    assert all(torch.equal(a[k], b[k]) for k in b)
    # the other budget's name is refused, naming the folder; nothing changes
    with pytest.raises(ConfigError, match="must be --max-epochs"):
        resume_net(tmp_path / "a", epochs=20, progress=False)
    assert NetConfig.from_yaml(tmp_path / "a" / "config.yaml").max_epochs == 16


def test_the_criterion_waits_for_the_last_learning_rate():
    cfg = NetConfig(**{**MLP, "lr_schedule": "multistep"}, until="converged", max_epochs=40)
    lrs = [0.05 if e <= 20 else 0.005 if e <= 30 else 0.0005 for e in range(1, 41)]  # milestones 20, 30
    flat = [{"train_loss": 0.1, "train_acc": 1.0, "lr": lr} for lr in lrs]
    assert not check_convergence(cfg, flat[:30]).converged  # flat, but not at the last rate yet
    assert not check_convergence(cfg, flat[:35]).converged  # the window still reaches back before 31
    assert check_convergence(cfg, flat[:40]).converged
    # the window is 10 % of the epochs done (at least MIN_WINDOW)
    long = [{"train_loss": 0.1, "train_acc": 1.0, "lr": 0.05}] * 300
    assert check_convergence(NetConfig(**MLP, until="converged", max_epochs=300), long).window == 30
    # a change in the training accuracy alone prevents convergence
    rising = [{"train_loss": 0.1, "train_acc": 0.5 + e / 100, "lr": 0.05} for e in range(20)]
    c = check_convergence(NetConfig(**MLP, until="converged", max_epochs=40), rising)
    assert not c.converged and c.acc_change == pytest.approx(0.05) and c.loss_change == 0.0


def test_the_outcome_follows_the_stated_criterion():
    """A converged run gets its structural label even below the classifier's 0.99 accuracy (stated in why);
    one stopped at its budget is not_converged; the constant output stays constant either way."""
    K = 3
    frame = {"H1": torch.eye(K).numpy(), "H~2": 2 * torch.eye(K).numpy(), "H2": 2 * torch.eye(K).numpy()}
    out = classify_head(frame, train_acc=0.95)
    assert out.label == "not_converged"  # no criterion: the accuracy test
    cfg = NetConfig(**MLP, until="converged", max_epochs=40)
    done = check_convergence(cfg, [{"train_loss": 0.1, "train_acc": 0.95, "lr": 0.05}] * 20)
    going = check_convergence(
        cfg, [{"train_loss": 1 / (e + 1), "train_acc": 0.95, "lr": 0.05} for e in range(20)]
    )
    assert done.converged and not going.converged
    conv = finalise_outcome(out, convergence=done)
    assert conv.label == "dnc" and "0.95 < 0.99" in conv.why
    stopped = finalise_outcome(out, convergence=going)
    assert stopped.label == "not_converged" and "before converging" in stopped.why
    flat = {k: torch.ones(K, 4).numpy() for k in frame}  # every class the same mean: a constant output
    assert finalise_outcome(classify_head(flat, train_acc=1 / K), convergence=going).label == "constant"
    assert math.isclose(done.loss_change, 0.0)


def test_net_train_says_why_it_stopped_and_how_to_continue(tmp_path, capsys):
    out = tmp_path / "run"
    args = ["--dataset", "digits", "--classes", "0,1,2", "--n", "10", "--n-test", "2", "--backbone", "mlp"]
    args += [
        "--layers",
        "3",
        "--width",
        "8",
        "--batch-size",
        "10",
        "--lr-schedule",
        "constant",
        "--threads",
        "1",
    ]
    args += ["--until", "converged", "--max-epochs", "12", "--converge-rtol", "1e-9", "--no-progress"]
    assert main(["net", "train", *args, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    line = f"stopped at --max-epochs 12 before converging; continue with: deepcollapse net resume {out}"
    assert (
        line + " --max-epochs 24" in printed
        and "outcome: not_converged (stopped at max_epochs == 12" in printed
    )
    assert main(["net", "resume", str(out), "--max-epochs", "24", "--no-progress"]) == 0
    assert json.loads((out / "summary.json").read_text())["epochs_done"] == 24
    assert (
        main(["net", "resume", str(out), "--epochs", "30", "--no-progress"]) == 2
    )  # the other budget's name
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "must be --max-epochs" in err[0]


def test_several_folders_resume_each_with_its_own_budget(tmp_path):
    """``net resume A B --max-epochs M``: runs of until converged resume alone (each stops on its own)."""
    cfgs = [NetConfig(**MLP, until="converged", converge_rtol=1e-12, max_epochs=11, seed=s) for s in (0, 1)]
    outs = [tmp_path / f"s{s}" for s in (0, 1)]
    for cfg, out in zip(cfgs, outs):
        train_net(cfg, out, progress=False)
    assert main(["net", "resume", *map(str, outs), "--max-epochs", "13", "--no-progress"]) == 0
    assert [json.loads((o / "summary.json").read_text())["epochs_done"] for o in outs] == [13, 13]

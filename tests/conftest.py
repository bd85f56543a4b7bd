"""Fixtures shared across test folders (tests/nets, tests/experiments, tests/analysis and tests/gpu;
`make gpu-check` runs tests/gpu alone, which still loads this file).  Imports are lazy: most tests never need
torch from here."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture(scope="session", autouse=True)
def _session_registry(tmp_path_factory):
    """The best-known user registry of every test is a temporary folder, never the home directory
    (``$DEEPCOLLAPSE_REGISTRY``; session fixtures such as :func:`smoke_report` and subprocesses inherit
    it)."""
    import os

    old = os.environ.get("DEEPCOLLAPSE_REGISTRY")
    os.environ["DEEPCOLLAPSE_REGISTRY"] = str(tmp_path_factory.mktemp("registry"))
    yield
    if old is None:
        os.environ.pop("DEEPCOLLAPSE_REGISTRY", None)
    else:
        os.environ["DEEPCOLLAPSE_REGISTRY"] = old


@pytest.fixture(autouse=True)
def _test_registry(tmp_path_factory, monkeypatch):
    """Each test's own empty user registry (``$DEEPCOLLAPSE_REGISTRY``), so no test sees another's rows."""
    monkeypatch.setenv("DEEPCOLLAPSE_REGISTRY", str(tmp_path_factory.mktemp("registry")))


#: A tiny network on the bundled 8x8 digits: 3-layer MLP head of width 12, constant lr, CPU, one thread.
TINY_NET: dict[str, Any] = dict(
    dataset="digits",
    layers=3,
    width=12,
    lr=0.05,
    lr_schedule="constant",
    device="cpu",
    threads=1,
)


#: The keys every collapse-metrics dict must have (issue 3), stated once for the API and the CLI tests.
REQUIRED_METRIC_KEYS = (
    "nc1_trace_ratio",
    "nc1_pinv",
    "cdnv",
    "nc2_cond",
    "nc2_orth_error",
    "nc2_etf_error",
    "rank",
    "effective_rank",
    "singular_values",
    "ncc_accuracy",
    "warnings",
)


@pytest.fixture
def required_metric_keys() -> tuple[str, ...]:
    """:data:`REQUIRED_METRIC_KEYS`."""
    return REQUIRED_METRIC_KEYS


@pytest.fixture
def tiny_net():
    """``tiny_net(**overrides) -> NetConfig``: :data:`TINY_NET` with ``overrides`` (which win)."""
    from deepcollapse.nets.config import NetConfig

    def make(**overrides: Any) -> NetConfig:
        return NetConfig(**{**TINY_NET, **overrides})

    return make


@pytest.fixture
def one_training_step():
    """``one_training_step(cfg, data, x, y, device="cpu", momentum=0.0) -> (loss, parameters)``.

    A fresh network of ``cfg`` on ``device`` takes one SGD step (lr ``cfg.lr``) on the batch ``(x, y)`` of
    ``data``; returns the loss and all parameters after the step, flattened on the CPU.
    """
    import torch

    from deepcollapse.nets.train import build_network, make_grad_scaler, train_step

    def step(cfg, data, x, y, device: str = "cpu", momentum: float = 0.0) -> tuple[float, torch.Tensor]:
        d = torch.device(device)
        model = build_network(cfg, data.in_channels, device=d).to(d)
        opt = torch.optim.SGD(model.parameters(), lr=cfg.lr, momentum=momentum)
        loss = train_step(cfg, model, opt, make_grad_scaler(cfg, d), x.to(d), y.to(d), len(data.train))
        return float(loss), torch.cat([p.detach().cpu().flatten() for p in model.parameters()])

    return step


@pytest.fixture(scope="session")
def smoke_report(tmp_path_factory):
    """``smoke_report(name, **family) -> Path``: ``report.html`` of experiment ``name``'s smoke run (one
    worker); ``family`` (``loss=``, ``activation=``, ``eps=``) for an experiment that takes a model family.

    Each experiment (and family) runs once per session, in a folder of its own, and every test that reads its
    report, figures or tables shares that run (the registry's smoke test, the report's browser check, the
    experiments' direction checks).  Tests read the folder and write nothing into it.
    """
    from deepcollapse.experiments.registry import get_experiment

    reports: dict[str, Any] = {}

    def run(name: str, **family: Any):
        key = name + "".join(f"-{k}{v}" for k, v in sorted(family.items()))
        if key not in reports:
            out = tmp_path_factory.mktemp(f"smoke-{key}")
            reports[key] = get_experiment(name).run(out, smoke=True, workers=1, family=family or None)
            assert reports[key] == out.resolve() / "report.html"  # Experiment.run's contract
        return reports[key]

    return run


@pytest.fixture
def script_module():
    """``script_module("benchmarks/gpu_check.py") -> module``: a script of the repository (benchmarks/,
    tools/: not packages) imported from its file, for tests of its functions."""
    import importlib.util
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]

    def load(relative: str) -> Any:
        path = root / relative
        spec = importlib.util.spec_from_file_location(path.stem, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    return load

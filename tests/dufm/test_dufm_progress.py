"""The trainer's progress bar: ``best=`` is the lowest loss seen so far, not the current one."""

from __future__ import annotations

import itertools

import torch
import tqdm.auto

import deepcollapse.dufm.fit as fit_module  # the loop (and its progress bar) of train_dufm
import deepcollapse.dufm.numpy_engine as engine_module
from deepcollapse.dufm.config import DUFMConfig
from deepcollapse.dufm.trainer import train_dufm

torch.set_num_threads(1)


class _Recorder:
    postfixes: list[dict] = []

    def __init__(self, *args, **kwargs):
        pass

    def set_postfix(self, **kw):
        _Recorder.postfixes.append(kw)

    def update(self, n):
        pass

    def close(self):
        pass


def test_best_is_a_running_minimum(tmp_path, monkeypatch):
    losses = itertools.cycle([0.30, 0.20, 0.25, 0.10, 0.40])  # a loss that goes up and down
    monkeypatch.setattr(engine_module, "_best_loss", lambda *a: next(losses))
    monkeypatch.setattr(tqdm.auto, "tqdm", _Recorder)
    _Recorder.postfixes = []
    c = DUFMConfig(classes=3, n=2, layers=2, width=4, lam_h=0.01, lam_w=0.01, lr=0.1, steps=60, runs=1)
    c = DUFMConfig.from_dict({**c.to_dict(), "log_every": 1000, "checkpoint_every": 1000})
    monkeypatch.setattr(fit_module, "_CHUNK", 10)
    train_dufm(c, tmp_path / "run", progress=True)
    shown = [float(p["best"]) for p in _Recorder.postfixes]
    assert len(shown) >= 4
    assert all(b <= a for a, b in zip(shown, shown[1:])), shown  # never increases
    assert min(shown) == 0.10

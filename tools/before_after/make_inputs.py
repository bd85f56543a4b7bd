"""Inputs shared by both trees (written once, by plain numpy/yaml: no deepcollapse code involved)."""

import shutil
import sys
from pathlib import Path

import numpy as np

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
rng = np.random.default_rng(12345)
# features.npz: N = 60 (K = 4, 15 per class), D = 12, clustered, with a K x D classifier and a bias
K, n, D = 4, 15, 12
means = rng.normal(size=(K, D)) * 3.0
labels = np.repeat(np.arange(K), n)
features = means[labels] + rng.normal(size=(K * n, D))
np.savez(
    out / "features.npz",
    features=features,
    labels=labels,
    weights=rng.normal(size=(K, D)),
    bias=rng.normal(size=K),
)
# features_gap.npz: 5 classes requested, class 3 empty, float32 features, no weights
labels2 = np.array([0, 1, 2, 4] * 8)
features2 = (np.eye(5, 7)[labels2] * 2.0 + 0.1 * rng.normal(size=(32, 7))).astype(np.float32)
np.savez(out / "features_gap.npz", features=features2, labels=labels2)
# today's shipped sweep files (from the baseline tree, so both trees read the same bytes)
shutil.copytree(sys.argv[2], out / "configs", dirs_exist_ok=True)  # the older checkout's configs/
# a DUFMConfig YAML: the flagship setting of configs/flagship.yaml, with the `lam` alias
(out / "dufm_flagship.yaml").write_text(
    "classes: 10\nn: 50\nlayers: 4\nwidth: 30\nlam: 0.004\nlr: 0.5\nsteps: 50000\nlog_every: 1000\n"
    "runs: 2\nseed: 0\ncheckpoint_every: 100\n"
)
# a DUFMConfig YAML as a run folder writes it (every field, today's names), float64 with a step schedule
(out / "dufm_full.yaml").write_text(
    "classes: 3\nn: 4\nlayers: 2\nwidth: [6, 5]\nlam_h: 0.002\nlam_w: [0.003, 0.005]\nloss: mse\n"
    "activation: relu\neps: null\nlr: 0.3\nlr_schedule: step\nlr_decay: 0.5\nlr_decay_every: 60\nlr_min: 0.0\n"
    "steps: 250\nruns: 3\nseed: 7\nseeds: null\nlog_every: 25\ncheckpoint_every: 100\ninit: uniform\n"
    "init_scale: [0.5, 0.4, 0.3]\ndtype: float64\ndevice: cpu\ngrad: analytic\nbackend: auto\nworkers: 1\n"
    "sub_batch: 2\nrank_rtol: 0.001\n"
)
# a NetConfig YAML with today's (soon old) key names: n_per_class, n_test_per_class, head_layers, head_width,
# milestones, gamma
(out / "net_today_keys.yaml").write_text(
    "dataset: digits\nbackbone: mlp\nbackbone_width: 24\nbackbone_depth: 1\nn_per_class: 15\n"
    "n_test_per_class: 8\nhead_layers: 3\nhead_width: 12\nreg: standard\nlam: 0.001\noptimizer: sgd\n"
    "momentum: 0.9\nlr: 0.05\nlr_schedule: multistep\nmilestones: [0.5]\ngamma: 0.2\nepochs: 2\n"
    "batch_size: 30\nseed: 1\n"
)
# a tiny network sweep (kind: net) with today's key names, grid over λ, two seeds via n_seeds
(out / "net_sweep.yaml").write_text(
    "name: net-tiny\ndescription: two λ x two seeds, MLP backbone on digits\nkind: net\n"
    "base: {dataset: digits, backbone: mlp, backbone_width: 16, n_per_class: 10, n_test_per_class: 5,\n"
    "       head_layers: 2, head_width: 12, epochs: 1, batch_size: 25, lr: 0.05}\n"
    "grid:\n  lam: [0.001, 0.01]\nn_seeds: 2\n"
)
# a solution file at a generic (not collapsed, not optimal) point: K = 6, L = 3, n = 5, widths 8, 7, 6
K, L, n = 6, 3, 5
widths = [8, 7]
H1 = rng.normal(size=(8, K * n)) * 0.5
Ws = [rng.normal(size=(7, 8)) * 0.4, rng.normal(size=(6, 7)) * 0.4, rng.normal(size=(K, 6)) * 0.4]
np.savez(
    out / "solution_random.npz",
    H1=H1,
    W_1=Ws[0],
    W_2=Ws[1],
    W_3=Ws[2],
    n=np.int64(n),
    lam_h=np.float64(0.003),
    lam_w=np.array([0.004, 0.002, 0.005]),
    loss=np.float64(0.25),
)
print(f"inputs written to {out}")

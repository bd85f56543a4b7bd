"""The numpy kernel flushes float32 denormals (x86 slows ~10x on them) only for the duration of the call."""

import numpy as np
import torch

from deepcollapse.dufm.kernel import advance, advance_limited

torch.set_num_threads(1)


def _params(K=2, n=2, d=3, L=2, value=1e-39):
    shapes = [(1, d, K * n)] + [(1, d, d)] * (L - 1) + [(1, K, d)]
    return [np.full(s, value, dtype=np.float32) for s in shapes]


def test_denormal_parameters_are_flushed_by_the_limited_kernel():
    tiny = np.float32(1e-39)
    assert 0 < tiny < np.finfo(np.float32).tiny  # a float32 denormal
    lrs = np.full(3, 0.5, dtype=np.float32)
    plain, _ = advance(_params(), lrs, 0, 2, 2, 0.1, [0.1, 0.1])
    assert any(np.count_nonzero(p) for p in plain)  # gradual underflow: denormals survive without the flag
    flushed, _ = advance_limited(_params(), lrs, 0, 2, 2, 0.1, [0.1, 0.1])
    assert all(np.count_nonzero(p) == 0 for p in flushed)
    # the flag does not leak out of the call
    x = np.array([tiny], dtype=np.float32)
    assert (x * np.float32(0.5))[0] != 0


def test_flush_denormal_flag_is_restored_to_its_previous_state():
    from deepcollapse.dufm.kernel import flush_denormal_is_on

    lrs = np.full(2, 0.5, dtype=np.float32)
    assert not flush_denormal_is_on()
    torch.set_flush_denormal(True)  # a caller that flushes denormals itself keeps doing so after the call
    try:
        assert flush_denormal_is_on()
        advance_limited(_params(), lrs, 0, 2, 2, 0.1, [0.1, 0.1])
        assert flush_denormal_is_on()
    finally:
        torch.set_flush_denormal(False)
    advance_limited(_params(), lrs, 0, 2, 2, 0.1, [0.1, 0.1])
    assert not flush_denormal_is_on()

"""Whether the compute device a user named exists on this machine: one check and one message for every
command that takes ``--device`` (``dufm train``, ``net train`` / ``net resume``, ``reproduce``, ``sweep``, the
DUFM, network and basin-atlas settings files, the benchmarks).

torch is imported inside the functions (only when a CUDA device is asked for), so validating a config that
says ``cpu`` stays cheap.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

from deepcollapse._core.checks import ConfigError

__all__ = ["check_cuda_device", "cuda_found", "cuda_missing_message", "synchronize", "torch_threads"]

if TYPE_CHECKING:
    import torch


def cuda_found() -> str:
    """What this process finds when it looks for CUDA, in words: the torch build and the number of devices
    (and ``CUDA_VISIBLE_DEVICES`` where it is set), e.g. ``"torch 2.13.0+cpu, a CPU-only build"``."""
    import torch

    if torch.version.cuda is None:
        return f"torch {torch.__version__}, a CPU-only build"
    count = torch.cuda.device_count()
    text = f"torch {torch.__version__} (CUDA {torch.version.cuda}) sees {count} CUDA device" + (
        "" if count == 1 else "s"
    )
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        text += f" with CUDA_VISIBLE_DEVICES={visible!r}"
    return text


def check_cuda_device(name: str, value: str) -> None:
    """``ConfigError`` naming the option and what was found if ``value`` (``"cuda"`` or ``"cuda:I"``) is
    not a CUDA device of this machine; any other value passes.

    Parameters
    ----------
    name : str
        The field as the user wrote it (``device``; the CLI prints it as ``--device``).
    value : str
        The device asked for.

    Examples
    --------
    >>> check_cuda_device("device", "cpu")  # nothing to check
    """
    if not value.startswith("cuda"):
        return
    import torch

    index = value.partition(":")[2]
    if torch.cuda.is_available() and (not index or int(index) < torch.cuda.device_count()):
        return
    raise ConfigError(cuda_missing_message(name, value))


def cuda_missing_message(name: str, value: str, instead: str = "cpu (or auto: cuda where present)") -> str:
    """The one line for a CUDA device ``value`` that this machine lacks (:func:`check_cuda_device`'s
    message; also for scripts that print it themselves, with their own ``instead``), e.g. ``"device ==
    'cuda', must be a CUDA device of this machine (found torch 2.13.0+cpu, a CPU-only build); use cpu (or
    auto: cuda where present)."``"""
    found = cuda_found()
    return f"{name} == {value!r}, must be a CUDA device of this machine (found {found}); use {instead}."


def synchronize(device: torch.device) -> None:
    """Wait until ``device`` has finished the work queued on it (a CUDA device; elsewhere work is done when
    the call returns): what a timing of device work needs at its start and end."""
    if device.type == "cuda":
        import torch

        torch.cuda.synchronize(device)


@contextlib.contextmanager
def torch_threads(n: int | None) -> Iterator[None]:
    """``n`` torch threads inside the block, the previous count restored after; ``None``: leave it alone.

    The landscape's work (autograd through matrices of a few dozen rows: Hessian-vector products, the Clarke
    residual's L-BFGS) runs with one: torch's default of one thread per core only adds synchronisation there,
    and on a machine whose cores are busy with other work it made ``dufm landscape`` several times slower
    (issue 45).

    Examples
    --------
    >>> import torch
    >>> before = torch.get_num_threads()
    >>> with torch_threads(1):
    ...     torch.get_num_threads()
    1
    >>> torch.get_num_threads() == before
    True
    """
    if n is None:
        yield
        return
    import torch

    old = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(old)

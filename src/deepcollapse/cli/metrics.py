"""``deepcollapse metrics FILE.npz [--json]``: every collapse metric of saved features.

The ``.npz`` file holds ``features`` (N x D, rows = samples), ``labels`` (N,) integers in 0..K-1 and
optionally ``weights`` (P x D, e.g. the classifier K x D) and ``bias`` (K,).  Prints a table, or one JSON
object with ``--json``; undefined values (e.g. NC1 when all class means coincide) are printed as ``null`` and
explained in ``warnings``.  Bad input exits with code 2 and a one-line ``deepcollapse: error: ...``.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from deepcollapse._core.checks import ConfigError, check_float, check_int
from deepcollapse._core.format import fmt_num

_KNOWN = ("features", "labels", "weights", "bias")


def register(subparsers: Any) -> None:
    """Add ``metrics FILE.npz`` to the ``deepcollapse`` parser.

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
        The root parser's sub-parsers (``parser.add_subparsers()``).

    Returns
    -------
    None
        Adds the ``metrics`` command (its ``func`` is :func:`run`).

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser()
    >>> register(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["metrics", "features.npz", "--json", "--num-classes", "4"])
    >>> args.file, args.json, args.num_classes, args.func is run
    ('features.npz', True, 4, True)
    """
    p = subparsers.add_parser(
        "metrics",
        help="collapse metrics (NC1-NC4, ranks, spectra) of features saved in an .npz file",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("file", metavar="FILE.npz", help="npz: features (N x D), labels (N,), optional weights")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    p.add_argument("--num-classes", type=int, help="K (default: max(labels) + 1)")
    p.add_argument(
        "--drop-empty-classes",
        action="store_true",
        help="drop classes without samples instead of failing (remaining classes renumbered)",
    )
    p.add_argument(
        "--unweighted-mean",
        action="store_true",
        help="global mean = average of the class means (default: sample-weighted mean of all features)",
    )
    p.add_argument("--rtol", type=float, help="relative rank tolerance (default: max(D, K) * eps(dtype))")
    p.set_defaults(func=run)


def load_npz(path: str | Path) -> dict[str, np.ndarray]:
    """Read the arrays of a metrics ``.npz`` file, with clear errors for missing files and keys.

    Parameters
    ----------
    path : str or Path
        The ``.npz`` file: ``features`` (N x D), ``labels`` (N,), optional ``weights`` (P x D), ``bias`` (K,).

    Returns
    -------
    dict[str, numpy.ndarray]
        Its arrays by name.  A missing file, a missing ``features`` / ``labels`` or an unknown key raises
        :class:`~deepcollapse.ConfigError`.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> path = Path(tempfile.mkdtemp()) / "features.npz"
    >>> np.savez(path, features=np.eye(4), labels=np.array([0, 0, 1, 1]))
    >>> arrays = load_npz(path)
    >>> sorted(arrays), arrays["features"].shape
    (['features', 'labels'], (4, 4))
    """
    from deepcollapse._core.io import read_npz

    arrays = read_npz(path, hint="save features and labels with numpy.savez(FILE, features=..., labels=...)")
    for key in ("features", "labels"):
        if key not in arrays:
            raise ConfigError(
                f"FILE {str(path)!r} has keys {sorted(arrays)}, must contain {key!r} "
                "(features N x D, labels N, optional weights P x D, bias K)."
            )
    unknown = sorted(set(arrays) - set(_KNOWN))
    if unknown:
        raise ConfigError(f"FILE {str(path)!r} has unknown keys {unknown}, must only hold {list(_KNOWN)}.")
    return arrays


def _fmt(v: Any) -> str:
    """For the terminal (``fmt_num``: 6 significant digits, scientific where it reads better); ``--json``
    keeps every digit."""
    if v is None:
        return "null"
    if isinstance(v, list):
        return "[" + ", ".join(_fmt(x) for x in v) + "]"
    return fmt_num(v, 6) if isinstance(v, float) else str(v)


def format_table(result: Mapping[str, Any]) -> str:
    """Readable two-column table of a ``collapse_metrics`` result (warnings listed below).

    Parameters
    ----------
    result : Mapping[str, Any]
        Metric name -> value (a :func:`deepcollapse.metrics.functional.collapse_metrics` result), with an
        optional ``warnings`` list.

    Returns
    -------
    str
        One line per metric (numbers with 6 significant digits, ``null`` for undefined values), then the
        warnings.

    Examples
    --------
    >>> print(format_table({"nc1": 0.123456789, "rank": 3, "nc2": None, "warnings": ["nc2 is undefined"]}))
    nc1       0.123457
    rank      3
    nc2       null
    warnings:
      - nc2 is undefined
    """
    width = max(len(k) for k in result)
    lines = [f"{k:<{width}}  {_fmt(v)}" for k, v in result.items() if k != "warnings"]
    if result.get("warnings"):
        lines.append("warnings:")
        lines += [f"  - {w}" for w in result["warnings"]]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """Run ``deepcollapse metrics``: compute every collapse metric of the file's features and print them as a
    table (or one JSON object with ``--json``).

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line (the options of :func:`register`).

    Returns
    -------
    int
        The exit status: 0 (bad input raises :class:`~deepcollapse.ConfigError`, exit status 2 in
        :func:`deepcollapse.cli.main`).

    Examples
    --------
    >>> import argparse, contextlib, io, tempfile
    >>> from pathlib import Path
    >>> path = Path(tempfile.mkdtemp()) / "features.npz"
    >>> np.savez(path, features=np.array([[1.0, 0.0], [1.0, 0.1], [0.0, 1.0], [0.1, 1.0]]),
    ...          labels=np.array([0, 0, 1, 1]))
    >>> parser = argparse.ArgumentParser()
    >>> register(parser.add_subparsers(dest="command"))
    >>> with contextlib.redirect_stdout(io.StringIO()) as out:
    ...     status = run(parser.parse_args(["metrics", str(path), "--json"]))
    >>> status, json.loads(out.getvalue())["num_classes"]
    (0, 2)
    """
    from deepcollapse.metrics.functional import collapse_metrics

    arrays = load_npz(args.file)
    num_classes = None if args.num_classes is None else check_int("--num-classes", args.num_classes, min=2)
    rtol = None if args.rtol is None else check_float("--rtol", args.rtol, gt=0.0, lt=1.0)
    result = collapse_metrics(
        arrays["features"],
        arrays["labels"],
        arrays.get("weights"),
        bias=arrays.get("bias"),
        num_classes=num_classes,
        drop_empty=args.drop_empty_classes,
        weighted=not args.unweighted_mean,
        rtol=rtol,
    )
    if args.json:
        print(json.dumps(result.to_dict(), allow_nan=False))
    else:
        print(format_table(result))
    return 0

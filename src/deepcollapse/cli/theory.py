"""``deepcollapse theory ...``: optimal DNC / SRG / zero losses of the L-DUFM, grids and figures.

deepcollapse theory compare --classes 10 --layers 4 --n 50 --lam-h 0.004 --lam-w 0.004 [--json]
deepcollapse theory compare --loss ce --activation relu      (also: --activation linear | relu_eps --eps 0.1)
deepcollapse theory grid --classes 2:100 --layers 2:8 [--format csv|markdown|json] [--out FILE] [--loss ce]

Each candidate states how its loss was obtained: closed form, numerical re-optimisation, explicit evaluation
(no closed form) or unavailable.
deepcollapse theory plot ratio --out ratio.png
deepcollapse theory plot srg --classes 10 --layers 4 --out srg.png
deepcollapse theory check FILE.npz
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Mapping
from typing import Any

from deepcollapse._core import flagship
from deepcollapse._core.checks import ConfigError, check_choice, check_float, check_int, check_per_layer
from deepcollapse._core.format import fmt_list, fmt_num, fmt_time
from deepcollapse._core.problem_fields import PROBLEM_HELP
from deepcollapse.cli.options import add_option

#: the command's defaults, as typed: the flagship problem's (deepcollapse._core.flagship)
FLAGSHIP = {
    "classes": str(flagship.CLASSES),
    "layers": str(flagship.LAYERS),
    "n": str(flagship.N),
    "lam_h": f"{flagship.LAM:g}",
    "lam_w": f"{flagship.LAM:g}",
}


def _int(option: str, value: str, minimum: int) -> int:
    try:
        v = int(str(value).strip())
    except ValueError:
        raise ConfigError(f"{option} == {value!r}, must be an integer >= {minimum}.") from None
    return check_int(option, v, min=minimum)


def _problem(args: argparse.Namespace) -> tuple[int, int, int, float, list[float]]:
    K = _int("--classes", args.classes, 2)
    L = _int("--layers", args.layers, 1)
    n = _int("--n", args.n, 1)
    lam_h, lam_w = _lams(args)
    lams = check_per_layer(*lam_w, L, gt=0.0)
    return K, L, n, check_float(*lam_h, gt=0.0), lams


def _lams(args: argparse.Namespace) -> tuple[tuple[str, Any], tuple[str, Any]]:
    """``(option, value)`` of λ_H1 and of λ_W: ``--lam-h`` / ``--lam-w`` where given, else ``--lam`` (the
    same meaning as in every ``dufm`` command), so an error names the option the value came from."""
    lam_h = ("--lam-h", args.lam_h) if args.lam_h is not None else ("--lam", args.lam)
    lam_w = ("--lam-w", args.lam_w) if args.lam_w is not None else ("--lam", args.lam)
    return lam_h, lam_w


def _family(args: argparse.Namespace) -> tuple[str, str, float | None]:
    """``(loss, activation, eps)`` from ``--loss/--activation/--eps`` (validated by the family package)."""
    from deepcollapse.family import get_family

    eps = None if args.eps is None else check_float("--eps", args.eps, gt=0.0)
    try:
        fam = get_family(args.loss, args.activation, eps)
    except ConfigError as exc:  # name the options as the user typed them
        msg = str(exc)
        for field in ("loss", "activation", "eps"):
            if msg.startswith(field + " =="):
                msg = "--" + msg
        raise ConfigError(msg) from None
    return fam.loss.name, fam.activation.name, fam.eps


def _add_family(p: argparse.ArgumentParser) -> None:
    p.add_argument("--loss", default="mse", help="fit loss: mse (eq. (1)) or ce (cross-entropy)")
    p.add_argument("--activation", default="relu", help="σ: relu, linear or relu_eps (needs --eps)")
    p.add_argument("--eps", default=None, help="ε > 0 of the relaxed ReLU σ_ε (Definition 7), with relu_eps")


def _add_problem(
    p: argparse.ArgumentParser, classes: bool = True, layers: bool = True, per_layer: bool = True
) -> None:
    # the words are Problem's fields' (deepcollapse._core.problem_fields), the defaults the flagship's
    for name, wanted in (("classes", classes), ("layers", layers), ("n", True)):
        if wanted:
            add_option(p, f"--{name}", PROBLEM_HELP[name], default=FLAGSHIP[name])
    _add_lams(p, FLAGSHIP["lam_h"], per_layer)


def _add_lams(p: argparse.ArgumentParser, default: str, per_layer: bool = False) -> None:
    """``--lam`` (λ_H1 and every λ_W, as in the ``dufm`` commands) and the two options that override it."""
    add_option(p, "--lam", "set λ_{H_1} and every λ_W (> 0)", default=default)
    add_option(p, "--lam-h", PROBLEM_HELP["lam_h"] + " (> 0)", shown_default="--lam")
    help_w = PROBLEM_HELP["lam_w"] + " (> 0)" if per_layer else "λ_W, weight decay of every W_l (> 0)"
    add_option(p, "--lam-w", help_w, shown_default="--lam for every layer")


def _fmt(x: Any) -> str:
    """A number (6 significant digits: losses are compared with each other) or a list of them, for the
    terminal; ``--json`` and files keep full precision."""
    if isinstance(x, (list, tuple)):
        return fmt_list(x, 6)
    return fmt_num(x, 6)


def _compare(args: argparse.Namespace) -> int:
    from deepcollapse.theory import compare, compare_family, loss_srg

    K, L, n, lam_h, lams = _problem(args)
    loss, activation, eps = _family(args)
    if (loss, activation) != ("mse", "relu"):
        if args.construction != "best":
            raise ConfigError(
                f"--construction == {args.construction!r}, must be 'best' with --loss {loss} "
                f"--activation {activation} (the best SRG construction is reported)."
            )
        family = compare_family(K, L, n, lam_h, lams, loss=loss, activation=activation, eps=eps)
        if args.json:
            print(json.dumps(family.to_dict()))
        else:
            print_family(family)
        return 0
    if args.construction != "best":
        check_choice("--construction", args.construction, ("best", "def9", "def11.1", "def11.2"))
        if loss_srg(K, L, n, lam_h, lams, construction=args.construction) is None:
            need = "C(r, 2) with r >= 4 (6, 10, 15, ...)" if args.construction == "def9" else ">= 6"
            raise ConfigError(
                f"--classes == {K}, must be {need} for --construction {args.construction} "
                f"(and --layers >= 2)."
            )
    result = compare(K, L, n, lam_h, lams).to_dict()
    if args.construction != "best":
        cf = loss_srg(K, L, n, lam_h, lams, construction=args.construction)
        if cf is None:  # pragma: no cover - excluded above
            raise ConfigError(f"--construction == {args.construction!r}, must be defined for --classes {K}.")
        result.update(
            loss_srg=cf.loss,
            srg_construction=cf.construction,
            scales_srg=cf.scales,
            rank_srg=cf.rank,
            ranks_srg=cf.ranks,
            rank_srg_post=cf.rank_post,
            ratio=cf.loss / result["loss_dnc"],
            srg_beats_dnc=bool(cf.loss < result["loss_dnc"]),
        )
    if args.json:
        print(json.dumps(result))
        return 0
    print_compare(result, K, L, n, lam_h, lams)
    return 0


def print_compare(result: Mapping[str, Any], K: int, L: int, n: int, lam_h: float, lams: list[float]) -> None:
    """The readable table of :func:`deepcollapse.theory.compare` (used by ``theory compare`` and ``demo``).

    Parameters
    ----------
    result : Mapping[str, Any]
        ``compare(...).to_dict()``.
    K, L, n : int
        The number of classes, of weight matrices and of samples per class.
    lam_h : float
        λ_H1.
    lams : list of float
        λ_W of every layer.

    Returns
    -------
    None
        Prints the setting, one line per solution (DNC, SRG, zero), their ratio and Theorem 5's conditions.

    Examples
    --------
    >>> from deepcollapse.theory import compare
    >>> print_compare(compare(6, 4, 1, 0.01, 0.01).to_dict(), 6, 4, 1, 0.01, [0.01] * 4)
    ... # doctest: +NORMALIZE_WHITESPACE
    L-DUFM  K = 6, L = 4, n = 1, λ_H1 = 0.01, λ_W = [0.01, 0.01, 0.01, 0.01]  (Λ = 1e-10)
    solution                   loss  rank  how           scales α_2..α_L
    DNC                     0.14813     6  closed form   [0.94979, 0.925638, 0.902101]
    SRG (def9)             0.142758     4  closed form   [2.1296, 3.00186, 1.88062]
    zero                        0.5     0  closed form   -
    L_SRG / L_DNC = 0.963732; SRG beats DNC: True
    Theorem 5 conditions (K >= 6, L >= 4 or K >= 10, L = 3) hold; DNC optimum is zero: False
    (zero threshold Λ* = 5.29819e-8)
    """
    print(
        f"L-DUFM  K = {K}, L = {L}, n = {n}, λ_H1 = {_fmt(lam_h)}, λ_W = {_fmt(lams)}  "
        f"(Λ = {_fmt(result['Lambda'])})"
    )
    rows = [
        ("DNC", result["loss_dnc"], result["scales_dnc"], result["rank_dnc"]),
        (
            f"SRG ({result['srg_construction'] or 'undefined'})",
            result["loss_srg"],
            result["scales_srg"],
            result["rank_srg"],
        ),
        ("zero", result["loss_zero"], None, 0),
    ]
    print(f"{'solution':<16} {'loss':>14}  {'rank':>4}  {'how':<12}  scales α_2..α_L")
    for name, loss, scales, rank in rows:
        how = "closed form" if loss is not None else "unavailable"
        print(f"{name:<16} {_fmt(loss):>14}  {_fmt(rank):>4}  {how:<12}  {_fmt(scales)}")
    if result["ratio"] is not None:
        print(f"L_SRG / L_DNC = {_fmt(result['ratio'])}; SRG beats DNC: {result['srg_beats_dnc']}")
    t5 = "hold" if result["theorem5"] else "do not hold"
    print(
        f"Theorem 5 conditions (K >= 6, L >= 4 or K >= 10, L = 3) {t5}; "
        f"DNC optimum is zero: {result['dnc_is_zero']} (zero threshold Λ* = {_fmt(result['zero_threshold'])})"
    )


def print_family(result: Mapping[str, Any]) -> None:
    """The readable table of :func:`deepcollapse.theory.compare_family` (one line per candidate, with how
    its loss was obtained).

    Parameters
    ----------
    result : Mapping[str, Any]
        ``compare_family(...).to_dict()``.

    Returns
    -------
    None
        Prints the setting, one line per candidate (loss, rank, how it was obtained) and the SRG / DNC ratio.

    Examples
    --------
    >>> from deepcollapse.theory import compare_family
    >>> print_family(compare_family(6, 4, 1, 0.01, 0.01, loss="ce").to_dict())  # doctest: +ELLIPSIS
    L-DUFM ce+relu  K = 6, L = 4, n = 1, λ_H1 = 0.01, λ_W = [0.01, 0.01, 0.01, 0.01]  (Λ = 1e-10)
    solution                         loss  rank  how
    DNC                          0.306...     6  numerical re-optimisation
    SRG (def9)                   0.295...     4  numerical re-optimisation
    zero                          1.79176     0  closed form — all-zero point
    L_SRG / L_DNC = 0.96...; SRG beats DNC: True
    """
    print(
        f"L-DUFM {result['family']}  K = {result['classes']}, L = {result['layers']}, n = {result['n']}, "
        f"λ_H1 = {_fmt(result['lam_h'])}, λ_W = {_fmt(result['lam_w'])}  (Λ = {_fmt(result['Lambda'])})"
    )
    print(f"{'solution':<22} {'loss':>14}  {'rank':>4}  how")
    for name, c in result["candidates"].items():
        label = name.upper() if name in ("dnc", "srg") else name
        if name == "srg" and c["construction"]:
            label += f" ({c['construction']})"
        if name == "linear":
            label = c["construction"]
        note = f" — {c['note']}" if c["note"] else ""
        print(f"{label:<22} {_fmt(c['loss']):>14}  {_fmt(c['rank']):>4}  {c['status']}{note}")
    if result["ratio"] is not None:
        print(f"L_SRG / L_DNC = {_fmt(result['ratio'])}; SRG beats DNC: {result['srg_beats_dnc']}")


GRID_COLUMNS = (
    "classes",
    "layers",
    "loss_dnc",
    "loss_srg",
    "ratio",
    "srg_construction",
    "rank_srg",
    "theorem5",
    "theorem5_strict",
    "srg_beats_dnc",
)


FAMILY_GRID_COLUMNS = (
    "classes",
    "layers",
    "family",
    "loss_dnc",
    "status_dnc",
    "loss_srg",
    "status_srg",
    "srg_construction",
    "rank_srg",
    "ratio",
    "srg_beats_dnc",
    "loss_linear",
    "status_linear",
)


#: The table formats of ``theory grid`` by the suffix of ``--out`` (the writer follows the suffix).
GRID_FORMATS = {".csv": "csv", ".md": "markdown", ".json": "json"}


def format_rows(
    rows: list[dict[str, Any]],
    fmt: str,
    columns: tuple[str, ...] = GRID_COLUMNS,
    title: str | None = None,
) -> str:
    """CSV or Markdown table (or a JSON list) of :func:`deepcollapse.theory.grid` rows; ``title`` (the
    setting) heads a Markdown table.

    Parameters
    ----------
    rows : list of dict
        The rows (:func:`deepcollapse.theory.grid` or ``grid_family``), each holding every column.
    fmt : str
        ``"csv"``, ``"markdown"`` or ``"json"``.
    columns : tuple of str, optional
        The columns, in order (default: :data:`GRID_COLUMNS`; not used for JSON).
    title : str, optional
        A heading line above a Markdown table.

    Returns
    -------
    str
        The table, ending in a newline: CSV and JSON (data) with floats at full precision, Markdown (for
        reading) with 6 significant digits; lists joined with ``;``, ``None`` empty (``-`` in Markdown).

    Examples
    --------
    >>> rows = [{"classes": 6, "layers": 4, "loss_dnc": 0.1234567890123, "ranks": [6, 4]}]
    >>> print(format_rows(rows, "csv", ("classes", "layers", "loss_dnc", "ranks")), end="")
    classes,layers,loss_dnc,ranks
    6,4,0.1234567890123,6;4
    >>> print(format_rows(rows, "markdown", ("classes", "loss_dnc")).splitlines()[-1])
    | 6 | 0.123457 |
    """
    readable = fmt == "markdown"

    def cell(v: Any) -> str:
        if v is None:
            return ""
        if isinstance(v, float):  # data keep full precision (the shortest text that reads back the float)
            return fmt_num(v, 6) if readable else repr(v)
        if isinstance(v, list):
            return ";".join(cell(x) for x in v)
        return str(v)

    if fmt == "json":
        return json.dumps(rows, indent=1) + "\n"
    if fmt == "csv":
        lines = [",".join(columns)] + [",".join(cell(r[c]) for c in columns) for r in rows]
    else:
        lines = [title, ""] if title else []
        lines += ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
        lines += ["| " + " | ".join(cell(r[c]) or "-" for c in columns) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def _grid_format(args: argparse.Namespace) -> str:
    """The table format: from ``--out``'s suffix (checked: a folder, an unknown suffix, an existing file
    without ``--force`` or a missing folder are refused), which ``--format`` must agree with; ``--format``
    (default csv) on stdout."""
    from deepcollapse._core.io import check_output_file

    if args.format is not None:
        check_choice("--format", args.format, ("csv", "markdown", "json"))
    if not args.out:
        return args.format or "csv"
    out = check_output_file(args.out, suffixes=GRID_FORMATS, force=args.force)
    fmt = GRID_FORMATS[out.suffix.lower()]
    if args.format is not None and args.format != fmt:
        raise ConfigError(
            f"--format == {args.format!r}, must be {fmt!r} for --out {args.out} (the suffix chooses the "
            "format; leave --format out, or change the suffix)."
        )
    return fmt


def _grid(args: argparse.Namespace) -> int:
    from deepcollapse.theory import grid, grid_family, parse_range

    Ks = parse_range("--classes", args.classes, 2)
    Ls = parse_range("--layers", args.layers, 1)
    n = _int("--n", args.n, 1)
    lam_h, lam_w = (check_float(*pair, gt=0.0) for pair in _lams(args))
    loss, activation, eps = _family(args)
    fmt = _grid_format(args)
    t0 = time.perf_counter()
    setting = {"n": n, "lam_h": lam_h, "lam_w": lam_w}  # every row records the setting it was computed at
    title = f"L_DNC and L_SRG of the L-DUFM at n = {n}, λ_H1 = {lam_h:g}, λ_W = {lam_w:g}"
    if (loss, activation) == ("mse", "relu"):
        rows = [{**r, **setting} for r in grid(Ks, Ls, n, lam_h, lam_w)]
        text = format_rows(rows, fmt, GRID_COLUMNS + tuple(setting), title=title)
    else:
        rows = grid_family(Ks, Ls, n, lam_h, lam_w, loss=loss, activation=activation, eps=eps)
        rows = [{**r, **setting} for r in rows]
        text = format_rows(
            rows, fmt, FAMILY_GRID_COLUMNS + tuple(setting), title=f"{title}, {rows[0]['family']}"
        )
    nrows = len(Ks) * len(Ls)
    seconds = time.perf_counter() - t0
    if args.out:
        from deepcollapse._core.io import atomic_write_text

        atomic_write_text(args.out, text)
        print(f"wrote {nrows} rows ({fmt}) to {args.out} in {fmt_time(seconds)}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def _check_figure_out(args: argparse.Namespace) -> None:
    """``--out`` of a figure command, checked before any work (the format follows the suffix)."""
    from deepcollapse._core.io import check_output_file
    from deepcollapse.analysis.figures import figure_suffixes

    check_output_file(args.out, suffixes=figure_suffixes(), force=args.force)


def _save(fig: Any, out: str) -> None:
    fig.savefig(out, dpi=150)  # checked by _check_figure_out: the format is the suffix's
    print(f"wrote {out}")


def _plot_ratio(args: argparse.Namespace) -> int:
    from deepcollapse.analysis.theory_plots import plot_ratio, ratio_data
    from deepcollapse.theory import parse_range

    rs = parse_range("--r", args.r, 4)
    Ls = parse_range("--layers", args.layers, 2)
    n = _int("--n", args.n, 1)
    lam_h, lam_w = (check_float(*pair, gt=0.0) for pair in _lams(args))
    _check_figure_out(args)
    fig, _ = plot_ratio(ratio_data(rs, Ls, n, lam_h, lam_w))
    _save(fig, args.out)
    return 0


def _plot_srg(args: argparse.Namespace) -> int:
    from deepcollapse.analysis.theory_plots import plot_srg, srg_figure_data
    from deepcollapse.theory import srg_defined

    K, L, n, lam_h, lams = _problem(args)
    if L < 3:
        raise ConfigError(f"--layers == {L}, must be >= 3 for plot srg (Figure 1 shows a middle layer).")
    if not srg_defined(K, L):
        raise ConfigError(f"--classes == {K}, must be >= 6 for an SRG solution (Definition 11).")
    _check_figure_out(args)
    fig, _ = plot_srg(srg_figure_data(K, L, n, lam_h, lams))
    _save(fig, args.out)
    return 0


def _help(parser: argparse.ArgumentParser) -> Any:
    def show(args: argparse.Namespace) -> int:
        parser.print_help()
        return 2

    return show


def _check(args: argparse.Namespace) -> int:
    from deepcollapse.landscape.solution_file import check_solution

    r = check_solution(args.file, loss=args.loss, activation=args.activation, eps=args.eps)
    if args.json:
        print(json.dumps(r.to_dict()))
        return 0
    print(
        f"L-DUFM  K = {r.classes}, L = {r.layers}, n = {r.n}, widths {r.widths}, "
        f"λ_H1 = {_fmt(r.lam_h)}, λ_W = {_fmt(r.lam_w)}, model {r.family}"
    )
    print(f"eq. (1) in float64: loss {_fmt(r.loss)}  (fit {_fmt(r.fit)}, reg {_fmt(r.reg)})")
    if r.claimed_loss is not None:
        print(
            f"claimed in the file: {_fmt(r.claimed_loss)}  (difference {fmt_num(r.difference, 3)}; "
            "--json for every digit)"
        )
    return 0


def register(subparsers: Any) -> None:
    """Add ``theory compare | grid | plot ratio | plot srg`` to the ``deepcollapse`` parser.

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
        The root parser's sub-parsers (``parser.add_subparsers()``).

    Returns
    -------
    None
        Adds the ``theory`` command group (each sub-command sets ``func``).

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser()
    >>> register(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["theory", "grid", "--classes", "2:10", "--layers", "3",
    ...                           "--format", "markdown"])
    >>> args.theory_command, args.classes, args.layers, args.format
    ('grid', '2:10', '3', 'markdown')
    """
    theory = subparsers.add_parser(
        "theory",
        help="exact optimal losses of DNC / SRG / zero solutions of the L-DUFM",
        description=(__doc__ or "").replace("``", ""),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    theory.set_defaults(func=_help(theory))
    sub = theory.add_subparsers(dest="theory_command", metavar="SUBCOMMAND")

    p = sub.add_parser("compare", help="L_DNC, L_SRG and the zero loss at one setting")
    _add_problem(p)
    p.add_argument("--construction", default="best", help="SRG construction: best, def9, def11.1 or def11.2")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    _add_family(p)
    p.set_defaults(func=_compare)

    p = sub.add_parser("grid", help="L_DNC, L_SRG and their ratio over ranges of K and L")
    p.add_argument("--classes", default="2:100", help="K values: START:STOP[:STEP] (inclusive) or a,b,c")
    p.add_argument("--layers", default="2:8", help="L values: START:STOP[:STEP] (inclusive) or a,b,c")
    _add_problem(p, classes=False, layers=False, per_layer=False)
    add_option(
        p,
        "--format",
        "csv, markdown or json; with --out the file's suffix (.csv, .md, .json) chooses it",
        shown_default="csv, or the suffix of --out",
    )
    p.add_argument(
        "--out", default=None, help="write the table to FILE (.csv, .md or .json) instead of stdout"
    )
    p.add_argument("--force", action="store_true", help="replace an existing --out file")
    _add_family(p)
    p.set_defaults(func=_grid)

    p = sub.add_parser("check", help="evaluate eq. (1) in float64 from the matrices of a solution .npz")
    p.add_argument("file", metavar="FILE.npz", help="solution file (arrays H1, W_1 .. W_L, n, lam_h, lam_w)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    from deepcollapse.cli.options import add_config_options
    from deepcollapse.dufm.config import DUFMConfig
    from deepcollapse.family.fields import FAMILY_FIELDS

    add_config_options(  # the model family: the file's own unless given (then it must agree)
        p,
        DUFMConfig,
        include=FAMILY_FIELDS,
        overrides={name: {"shown_default": "the file's"} for name in FAMILY_FIELDS},
        command="theory check",
    )
    p.set_defaults(func=_check)

    plot = sub.add_parser("plot", help="figures: ratio (Fig. 3 left), srg (Fig. 1)")
    plot.set_defaults(func=_help(plot))
    psub = plot.add_subparsers(dest="plot_command", metavar="FIGURE")
    p = psub.add_parser("ratio", help="L_SRG / L_DNC against r (K = C(r,2)) for L = 3, 4, 5")
    p.add_argument(
        "--out", required=True, help="output image; its suffix chooses the format (.png, .pdf, .svg)"
    )
    p.add_argument("--force", action="store_true", help="replace an existing --out file")
    p.add_argument("--r", default="4:14", help="r values (default 4:14)")
    p.add_argument("--layers", default="3,4,5", help="one curve per L (default 3,4,5)")
    p.add_argument("--n", default="1", help="samples per class n >= 1 (default 1)")
    _add_lams(p, "0.001")
    p.set_defaults(func=_plot_ratio)
    p = psub.add_parser("srg", help="class means and Gram matrices of SRG beside DNC (Fig. 1)")
    p.add_argument(
        "--out", required=True, help="output image; its suffix chooses the format (.png, .pdf, .svg)"
    )
    p.add_argument("--force", action="store_true", help="replace an existing --out file")
    _add_problem(p)
    p.set_defaults(func=_plot_srg)

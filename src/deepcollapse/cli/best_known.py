"""``deepcollapse best-known``: the registry of the lowest points found per cell of eq. (1) (issue 31).

Examples::

    deepcollapse best-known show                                  # shipped + user registry, cell-wise min
    deepcollapse best-known add runs/search/solutions/rank01.npz  # offer a point (kept only if lower)
    deepcollapse best-known add other_machine/best_known          # merge another registry
    deepcollapse best-known export --out registry_copy            # a folder another machine can add

``--registry DIR|off``: the user registry.  ``best-known show | add | export`` read (``add`` writes) the
default one, ``$DEEPCOLLAPSE_REGISTRY``, else ``~/.local/share/deepcollapse/best_known``, as does a full-size
``reproduce best-known`` / ``depth-bound`` (a table of best-known points); ``dufm search``, ``dufm landscape``
and ``reproduce basins`` offer their points only to a registry named with ``--registry DIR``, and a smoke run
(``reproduce ... --smoke``) to none (issue 45).  ``off``: none.  A row's command names its paths relative to
the folder it ran in (:func:`~deepcollapse.landscape.best_known_types.relative_command`).
"""

from __future__ import annotations

import argparse
import functools
import shlex
import sys
import textwrap
from pathlib import Path
from typing import Any

from deepcollapse._core.checks import ConfigError

REGISTRY_HELP = (
    "best-known registry folder that this command offers its best point to (kept only if lower than the "
    "cell's row after a float64 re-evaluation), or off"
)
REGISTRY_DEFAULT = "$DEEPCOLLAPSE_REGISTRY, else ~/.local/share/deepcollapse/best_known"
#: the longest line of the default ``best-known show`` (issue 45)
SHOW_WIDTH = 110
#: what the ratio columns of ``best-known show`` are (under its table and in its ``--help``)
RATIOS_NOTE = (
    "loss/L_DNC, loss/L_SRG: the row's loss over the DNC and the SRG construction's (the closed forms under "
    "mse+relu, the constructions re-optimised for another family, as in `reproduce best-known`); below 1: "
    "lower than the construction; -: none (SRG needs K >= 6)."
)
#: the shown default of the commands that write to a registry only when one is named (issue 45)
REGISTRY_NONE = "none, nothing is offered; `best-known add` offers a point later"


def add_registry_option(
    p: argparse.ArgumentParser, help: str = REGISTRY_HELP, shown_default: str = REGISTRY_DEFAULT
) -> None:
    """``--registry DIR|off`` (one definition for every command that offers or reads).

    Parameters
    ----------
    p : argparse.ArgumentParser
        The sub-command's parser.
    help : str, optional
        The option's description in this command (default: :data:`REGISTRY_HELP`).
    shown_default : str, optional
        What the command does without the option (default: :data:`REGISTRY_DEFAULT`, the user registry;
        :data:`REGISTRY_NONE` for a command that writes to a registry only when one is named).

    Returns
    -------
    None
        Adds the option to ``p``.

    Examples
    --------
    >>> import argparse
    >>> p = argparse.ArgumentParser()
    >>> add_registry_option(p)
    >>> p.parse_args(["--registry", "off"]).registry, p.parse_args([]).registry
    ('off', None)
    """
    from deepcollapse.cli.options import add_option

    add_option(p, "--registry", help, shown_default=shown_default, metavar="DIR|off")


def command_line(args: argparse.Namespace) -> str:
    """The command as typed (the registry rows' provenance).

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line; its ``_words`` (set by :func:`deepcollapse.cli.main`) are the words typed,
        else ``sys.argv[1:]``.

    Returns
    -------
    str
        ``deepcollapse ...``, quoted for a POSIX shell.

    Examples
    --------
    >>> import argparse
    >>> command_line(argparse.Namespace(_words=["best-known", "add", "my runs/rank01.npz"]))
    "deepcollapse best-known add 'my runs/rank01.npz'"
    """
    return shlex.join(["deepcollapse", *getattr(args, "_words", sys.argv[1:])])


def register(subparsers: Any) -> None:
    """Add ``best-known show | add | export`` to the ``deepcollapse`` parser.

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
        The root parser's sub-parsers (``parser.add_subparsers()``).

    Returns
    -------
    None
        Adds the ``best-known`` command group (each sub-command sets ``func``).

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser()
    >>> register(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["best-known", "export", "--out", "registry_copy"])
    >>> args.command, args.best_known_command, args.out, args.registry
    ('best-known', 'export', 'registry_copy', None)
    """
    from deepcollapse.landscape.verdict_classes import verdicts_legend

    legend = "\n".join(verdicts_legend(SHOW_WIDTH - 10))
    legend += "\n" + textwrap.fill(RATIOS_NOTE, SHOW_WIDTH - 10, subsequent_indent="  ")
    p = subparsers.add_parser(
        "best-known",
        help="the registry of the lowest points found per problem: show, add, export",
        description=textwrap.fill(
            "The best-known registry: one row per problem (family, K, L, n, widths, λ's) holding the lowest "
            "point found so far by any search, re-evaluated in float64 (theory check), with its verdict "
            "(dufm landscape's, below) where one was judged.",
            79,
        ),
        epilog=legend,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="best_known_command", metavar="SUBCOMMAND")
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])

    s = sub.add_parser(
        "show",
        help="the rows of the shipped and the user registry (cell-wise minimum)",
        description=textwrap.fill(
            "One row per problem (the cell-wise minimum of the shipped and the user registry): family, K, L, "
            "loss, verdict and the loss over L_DNC and L_SRG (the DNC and SRG constructions'); then what the "
            "verdicts mean, and per family how many cells are certified.  --wide adds n, width, λ, the "
            "Clarke residual, the full verdict, registry, date and the command that found the point.",
            79,
        ),
        epilog=legend,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_registry_option(s, "user registry folder shown beside the shipped one, or off (the shipped one only)")
    s.add_argument(
        "--wide",
        action="store_true",
        help="every column: n, width, λ, Clarke residual, full verdict, registry, date, command",
    )
    s.add_argument("--json", action="store_true", help="print JSON instead of a table")
    s.set_defaults(func=_show)

    a = sub.add_parser(
        "add",
        help="offer solution files (.npz) or merge registry folders into the user registry",
        description="Offer each solution file (or every row of each registry folder): it is re-evaluated "
        "(theory check, float64) and kept only if below its cell's row.  Every input is checked before "
        "anything is written.",
    )
    a.add_argument("inputs", nargs="+", metavar="FILE_OR_DIR", help="solution .npz files or registry folders")
    add_registry_option(a, "user registry folder to add to")
    a.add_argument(
        "--verdict",
        action="store_true",
        help="compute the Hessian verdict and Clarke residual of each file's point and record them",
    )
    a.add_argument("--json", action="store_true", help="print JSON instead of a table")
    a.set_defaults(func=_add)

    e = sub.add_parser(
        "export",
        help="write the shipped and user rows (cell-wise minimum) to a registry folder",
        description="Write the rows shown by `best-known show` to a registry folder (its rows and solution "
        "files), for `best-known add` on another machine; rows already there are kept where lower.",
    )
    e.add_argument("--out", required=True, help="registry folder to write")
    add_registry_option(e, "user registry folder exported beside the shipped one, or off")
    e.set_defaults(func=_export)


def named_registry(spec: str | None) -> Any:
    """The registry a command that writes only when asked offers to: ``--registry DIR``'s, else ``None``
    (the option left out, or ``off``).

    Parameters
    ----------
    spec : str or None
        The ``--registry`` value.

    Returns
    -------
    Registry or None
        The folder's registry (read and checked now), or ``None``: nothing is offered.

    Examples
    --------
    >>> named_registry(None) is None, named_registry("off") is None
    (True, True)
    """
    if spec is None:
        return None
    from deepcollapse.landscape.best_known import open_registry

    return open_registry(spec)


def _user(spec: str | None, *, writable: bool = False) -> Any:
    from deepcollapse.landscape.best_known import open_registry

    if writable and spec is not None and spec.strip().lower() == "off":
        raise ConfigError("--registry == 'off', must be a registry folder here (the one to write to).")
    return open_registry(spec)


def _show(args: argparse.Namespace) -> int:
    from deepcollapse.landscape.best_known import registry_rows, rows_json

    rows = registry_rows(_user(args.registry))
    if args.json:
        print(rows_json(rows))
        return 0
    if not rows:
        print(
            "no rows yet: a full-size `reproduce best-known`, `dufm search --registry DIR` and "
            "`best-known add FILE.npz` offer points"
        )
        return 0
    for line in _table(rows, wide=args.wide):
        print(line)
    return 0


def _table(rows: list[Any], *, wide: bool = False) -> list[str]:
    """The lines of ``best-known show``: one row per cell (family, K, L, loss, verdict class, loss over L_DNC
    and over L_SRG; ``wide``: n, width, λ, Clarke residual, full verdict, registry, date and command too),
    the legend of the verdicts and columns, then the counts per family (every line at most
    :data:`SHOW_WIDTH` characters unless ``wide``)."""
    from deepcollapse.experiments.best_known_settings import BestKnownSettings
    from deepcollapse.landscape.verdict_classes import verdict_class, verdicts_legend

    table = BestKnownSettings()
    fam = max(8, *(len(r.key.family) + 1 for r in rows))
    ratios = f"{'loss/L_DNC':>10} {'loss/L_SRG':>10}"
    if wide:
        head = (
            f"{'family':<{fam}} {'K':>3} {'L':>2} {'n':>4} {'width':>5} {'λ':>7} {'loss':>15}  "
            f"{'verdict':<20} {'Clarke':>8} {ratios}  {'registry':<8} {'date':<25} command"
        )
    else:
        head = f"{'family':<{fam}} {'K':>3} {'L':>2} {'loss':>9}  {'verdict':<18} {ratios}"
    lines, other = [head], False
    for r in rows:
        k = r.key
        dnc, srg = _references(k)
        ratio = " ".join(f"{'-' if x is None else format(r.loss / x, '.5f'):>10}" for x in (dnc, srg))
        if wide:
            width = str(k.widths[0]) if len(set(k.widths)) == 1 else ",".join(map(str, k.widths))
            lam = (
                f"{k.lam_h:g}"
                if set(k.lam_w) == {k.lam_h}
                else f"{k.lam_h:g}/" + ",".join(f"{x:g}" for x in k.lam_w)
            )
            clarke = "-" if r.clarke_residual is None else f"{r.clarke_residual:.1e}"
            lines.append(
                f"{k.family:<{fam}} {k.classes:>3} {k.layers:>2} {k.n:>4} {width:>5} {lam:>7} "
                f"{r.loss:>15.12f}  {r.verdict or '-':<20} {clarke:>8} {ratio}  {r.registry:<8} "
                f"{r.provenance.date:<25} {r.provenance.command}"
            )
            continue
        off = k not in table.cells(k.family)  # n, width or λ other than the table's: said by a mark
        other = other or off
        name = k.family + ("*" if off else "")
        lines.append(
            f"{name:<{fam}} {k.classes:>3} {k.layers:>2} {r.loss:>9.6f}  "
            f"{verdict_class(r.verdict):<18} {ratio}"
        )
    if other:
        lines.append(
            f"* n, width or λ other than the table's (n = {table.n}, width {table.width}, "
            f"λ = {table.lam:g}): --wide shows them"
        )
    lines += ["", *verdicts_legend(SHOW_WIDTH)]
    notes = [
        RATIOS_NOTE,
        *_verdict_summary(rows),
        *_table_summary(rows),
    ]
    if not wide:
        notes.append("--wide: n, width, λ, Clarke residual, the full verdict, registry, date and command")
    for note in notes:
        lines += textwrap.wrap(note, SHOW_WIDTH, subsequent_indent="  ", break_on_hyphens=False)
    return lines


def _references(key: Any) -> tuple[float | None, float | None]:
    """``(L_DNC, L_SRG)`` of a registry cell: :func:`~deepcollapse.theory.compare.compare` under MSE + ReLU,
    else the constructions re-optimised for the family
    (:func:`~deepcollapse.theory.family_compare.compare_family`, what ``reproduce best-known``'s table
    divides by); ``None`` where there is none (SRG: K < 6) or the theory refuses the cell."""
    return _references_of(key.family, key.classes, key.layers, key.n, key.lam_h, tuple(key.lam_w))


@functools.cache
def _references_of(
    family: str, classes: int, layers: int, n: int, lam_h: float, lam_w: tuple[float, ...]
) -> tuple[float | None, float | None]:
    import re

    match = re.fullmatch(r"([a-z]+)\+([a-z_]+?)(?:\((.+)\))?", family)
    try:
        if family == "mse+relu":
            from deepcollapse.theory.compare import compare

            c: Any = compare(classes, layers, n, lam_h, list(lam_w))
        elif match:
            from deepcollapse.theory.family_compare import compare_family

            loss, activation, eps = match.groups()
            c = compare_family(
                classes,
                layers,
                n,
                lam_h,
                list(lam_w),
                loss=loss,
                activation=activation,
                eps=None if eps is None else float(eps),
            )
        else:
            return None, None
    except (ConfigError, ValueError):
        return None, None
    return c.loss_dnc, c.loss_srg


def _verdict_summary(rows: list[Any]) -> list[str]:
    """One line per family: its cells, how many are certified (local minimum or critical at a kink) and the
    count of each verdict (issue 31's measure)."""
    from collections import Counter

    from deepcollapse.landscape.verdict_classes import CERTIFIED, VERDICT_CLASSES, verdict_class

    lines = []
    for family in dict.fromkeys(r.key.family for r in rows):
        counts = Counter(verdict_class(r.verdict) for r in rows if r.key.family == family)
        cells = sum(counts.values())
        certified = sum(counts[c] for c in CERTIFIED)
        each = ", ".join(f"{c} {counts[c]}" for c in (*VERDICT_CLASSES, "not judged") if counts[c])
        lines.append(
            f"{family}: {cells} cell(s), {certified} certified ({100 * certified / cells:.0f} %): {each}"
        )
    return lines


def _table_summary(rows: list[Any]) -> list[str]:
    """Per family with rows, the cells of ``reproduce best-known``'s shipped table (its default settings):
    how many hold a certified row and which hold none yet; then the sum over those families (issue 31's
    measure is the share of the MSE and CE tables' 84 cells that is certified)."""
    from deepcollapse._core.format import fmt_ranges
    from deepcollapse.experiments.best_known_settings import BestKnownSettings
    from deepcollapse.landscape.verdict_classes import is_certified

    table = BestKnownSettings()
    where = (
        f"K = {fmt_ranges(table.classes)}, L = {fmt_ranges(table.layers)}, n = {table.n}, "
        f"width {table.width}, λ = {table.lam:g}"
    )
    by_key = {r.key: r for r in rows}
    lines, total, certified_total = [], 0, 0
    for family in dict.fromkeys(r.key.family for r in rows):
        cells = table.cells(family)
        if not any(c in by_key for c in cells):
            continue
        certified = sum(c in by_key and is_certified(by_key[c].verdict) for c in cells)
        missing = [c for c in cells if c not in by_key]
        gaps = "; ".join(
            f"L = {depth}: K = {fmt_ranges([c.classes for c in missing if c.layers == depth])}"
            for depth in dict.fromkeys(c.layers for c in missing)
        )
        lines.append(
            f"{family} in the table of `reproduce best-known` ({where}): {certified} of {len(cells)} cells "
            f"certified ({100 * certified / len(cells):.0f} %); "
            + (f"no row yet: {gaps}" if missing else "every cell has a row")
        )
        total, certified_total = total + len(cells), certified_total + certified
    if len(lines) > 1:
        lines.append(
            f"the {len(lines)} tables together: {certified_total} of {total} cells certified "
            f"({100 * certified_total / total:.0f} %)"
        )
    return lines


def _add(args: argparse.Namespace) -> int:
    import json

    from deepcollapse.landscape.best_known import Provenance, Registry
    from deepcollapse.landscape.solution_file import check_solution

    user = _user(args.registry, writable=True)
    # every input checked before anything is written
    sources: list[tuple[str, Any]] = []
    for text in args.inputs:
        path = Path(text)
        if path.is_dir():
            sources.append(("registry", Registry.load(path)))
        elif path.is_file():
            check_solution(path)
            sources.append(("file", path))
        else:
            raise ConfigError(
                f"FILE_OR_DIR == {text!r} does not exist, must be a solution .npz or a registry folder."
            )
    provenance = Provenance.now(command_line(args))
    offers = []
    for (kind, src), text in zip(sources, args.inputs):
        if kind == "registry":
            offers += [(text, o) for o in user.merge_from(src)]
            continue
        verdict, clarke = _verdict(src) if args.verdict else (None, None)
        offers.append((text, user.offer(src, provenance, verdict=verdict, clarke_residual=clarke)))
    if args.json:
        out = [
            {
                "input": t,
                "kept": o.kept,
                "reason": o.reason,
                "cell": o.key.text(),
                "loss": o.loss,
                "previous": o.previous,
            }
            for t, o in offers
        ]
        print(json.dumps(out, indent=2))
        return 0
    for text, o in offers:
        print(f"{'kept   ' if o.kept else 'refused'} {o.key.text()}: {o.loss:.12f} ({o.reason})  [{text}]")
    print(f"registry: {user.path}")
    return 0


def _verdict(path: Path) -> tuple[str, float]:
    """The Hessian verdict and Clarke residual at the point of a solution file."""
    from deepcollapse.landscape.verdicts import landscape, load_point

    params, problem, _ = load_point(str(path))
    land = landscape(params, problem)
    return str(land.verdict), float(land.clarke_residual or 0.0)


def _export(args: argparse.Namespace) -> int:
    from deepcollapse.landscape.best_known import Registry, registry_rows

    out = Path(args.out)
    dest = Registry.load(out)  # checked (a file, a damaged registry) before anything is written
    rows = registry_rows(_user(args.registry))
    kept = 0
    for r in rows:
        assert r.path is not None  # rows read from a folder know their file
        kept += dest.offer(r.path, r.provenance, verdict=r.verdict, clarke_residual=r.clarke_residual).kept
    print(f"{out}: {kept} of {len(rows)} row(s) written ({len(rows) - kept} already there at least as low)")
    return 0


def offer_point(
    registry: Any,
    path: str | Path,
    args: argparse.Namespace,
    *,
    verdict: str | None = None,
    clarke_residual: float | None = None,
    after: str | None = None,
) -> None:
    """Offer a command's best point to ``registry`` (``None``: ``--registry off``) and say what happened on
    stderr (one line).

    Parameters
    ----------
    registry : Registry or None
        The user registry (:func:`deepcollapse.landscape.best_known.open_registry`); ``None``: nothing is
        offered.
    path : str or Path
        The solution file (``.npz``) of the point.
    args : argparse.Namespace
        The command's parsed command line (its words are the row's provenance, :func:`command_line`).
    verdict : str, optional
        The point's Hessian verdict, recorded with it.
    clarke_residual : float, optional
        The point's Clarke residual, recorded with it.
    after : str, optional
        The command that gave this command's input (a search folder's ``dufm search``): the provenance reads
        ``AFTER && COMMAND``, the two commands that find the point.

    Returns
    -------
    None
        Offers the point (kept only if lower than its cell's row) and prints one line on stderr.

    Examples
    --------
    >>> import argparse
    >>> offer_point(None, "rank01.npz", argparse.Namespace())  # --registry off: nothing offered, nothing said
    """
    if registry is None:
        return
    from deepcollapse.landscape.best_known import Provenance

    command = command_line(args) if after is None else f"{after} && {command_line(args)}"
    offer = registry.offer(path, Provenance.now(command), verdict=verdict, clarke_residual=clarke_residual)
    what = "kept" if offer.kept else "not kept"
    print(f"deepcollapse: best-known registry {registry.path}: {what} ({offer.reason})", file=sys.stderr)

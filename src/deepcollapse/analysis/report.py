"""Self-contained HTML reports: figures embedded as base64 PNG, tables, the exact config, versions, git hash.

One file, no external resources (no scripts, fonts or style sheets fetched), so a report can be mailed,
archived next to its run folders, or opened offline.  Build one with :class:`Report`::

    rep = Report("2024 Fig. 2 top", description="...")
    rep.add_figure(Path("fig2_loss.png"), "Loss against L_DNC and L_SRG")
    rep.add_table(df, "Final losses per seed")
    rep.set_config({...})
    rep.write(out_dir / "report.html")
"""

from __future__ import annotations

import base64
import datetime as _dt
import html
import importlib.metadata
import platform
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from deepcollapse.analysis.fields import explanations

__all__ = ["Report", "environment_info", "git_hash"]

_PACKAGES = ("deepcollapse", "numpy", "scipy", "torch", "pandas", "matplotlib", "pyyaml", "ray")

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;max-width:1150px;margin:2em auto;
padding:0 1em;color:#222;line-height:1.45}
h1{font-size:1.6em;border-bottom:2px solid
#446;padding-bottom:.2em}h2{font-size:1.25em;margin-top:1.6em;color:#335}
figure{display:inline-block;margin:.5em;vertical-align:top;width:calc(50% - 1.2em)}
figure.wide{display:block;width:auto;max-width:100%}
figure img{width:100%;height:auto;border:1px solid #ddd}figcaption{font-size:.85em;color:#444}
table{border-collapse:collapse;font-size:.82em;margin:.6em 0;display:block;max-width:100%;overflow-x:auto}
th,td{border:1px solid #ccc;padding:2px 6px;text-align:right}th{background:#eef}
pre{background:#f6f6f8;padding:.6em;overflow-x:auto;font-size:.8em}
ul.columns{font-size:.8em;color:#444;margin:.2em 0 1em;padding-left:1.4em}
.note{background:#fffbe6;border-left:4px solid #e5c100;padding:.4em .8em}.meta td{text-align:left}
"""


def git_hash(path: str | Path | None = None) -> str:
    """The commit of the source tree (``+dirty`` if tracked files differ from it), or ``'unknown'``.

    Read-only plumbing (``git rev-parse``, ``git diff-index``): never writes the index or any git state.

    Parameters
    ----------
    path : str or Path, optional
        A folder inside the work tree (default: this package's folder).

    Returns
    -------
    str
        The commit hash, with ``+dirty`` when tracked files changed; ``'unknown'`` outside a git work tree
        or without git.

    Examples
    --------
    >>> import tempfile
    >>> git_hash(tempfile.mkdtemp())
    'unknown'
    """
    cwd = Path(path) if path else Path(__file__).resolve().parent
    try:
        rev = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "diff-index", "--quiet", "HEAD", "--"], cwd=cwd, capture_output=True, timeout=10
        ).returncode
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return rev + ("+dirty" if dirty else "")


def environment_info() -> dict[str, str]:
    """Python, platform, versions of the relevant packages (``'not installed'`` when absent), git hash.

    Returns
    -------
    dict of str to str
        ``python``, ``platform``, ``git`` and one entry per package (``deepcollapse``, ``numpy``, ...).

    Examples
    --------
    >>> info = environment_info()
    >>> list(info)[:4], info["numpy"] != "not installed"
    (['python', 'platform', 'git', 'deepcollapse'], True)
    """
    info = {"python": sys.version.split()[0], "platform": platform.platform(), "git": git_hash()}
    for pkg in _PACKAGES:
        try:
            info[pkg] = importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            info[pkg] = "not installed"
    return info


@dataclass
class _Section:
    heading: str
    text: str = ""
    figures: list[tuple[str, str, bool]] = field(default_factory=list)  # (base64 png, caption, wide)
    tables: list[tuple[str, str, list[tuple[str, str]]]] = field(default_factory=list)  # html, caption, notes
    notes: list[str] = field(default_factory=list)


class Report:
    """An HTML report assembled section by section (figures, tables, notes), written as one file."""

    def __init__(self, title: str, description: str = "", command: str | None = None) -> None:
        self.title = title
        self.description = description
        self.command = command
        self.sections: list[_Section] = []
        self.config: Any = None
        self.created = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")

    def section(self, heading: str, text: str = "") -> Report:
        """Start a new section; following ``add_*`` calls go into it.

        Parameters
        ----------
        heading : str
            The section's heading.
        text : str, default ""
            A paragraph under it.

        Returns
        -------
        Report
            ``self``, so calls chain.

        Examples
        --------
        >>> rep = Report("demo").section("Losses", "The training loss.").section("Ranks")
        >>> [s.heading for s in rep.sections]
        ['Losses', 'Ranks']
        """
        self.sections.append(_Section(heading, text))
        return self

    def _current(self) -> _Section:
        if not self.sections:
            self.section("Results")
        return self.sections[-1]

    def add_figure(self, png: str | Path | bytes, caption: str = "") -> Report:
        """Embed a PNG (a path or its bytes) as base64.  Single panels are shown two per row; a multi-panel
        figure (wider than 1.6 × its height) gets the full page width, so its panels stay readable.

        Parameters
        ----------
        png : str, Path or bytes
            The PNG file or its bytes.
        caption : str, default ""
            The figure's caption.

        Returns
        -------
        Report
            ``self``, so calls chain.

        Examples
        --------
        >>> import io
        >>> from deepcollapse.analysis.figures import new_axes
        >>> fig, ax = new_axes(figsize=(6.0, 2.0))
        >>> buf = io.BytesIO()
        >>> fig.savefig(buf, format="png", dpi=20)
        >>> rep = Report("demo").add_figure(buf.getvalue(), "a wide figure")
        >>> _, caption, wide = rep.sections[0].figures[0]
        >>> caption, wide
        ('a wide figure', True)
        """
        data = png if isinstance(png, bytes) else Path(png).read_bytes()
        wide = False
        if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24:  # IHDR: width, height (big-endian)
            w, h = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
            wide = h > 0 and w / h > 1.6
        self._current().figures.append((base64.b64encode(data).decode("ascii"), caption, wide))
        return self

    def add_table(
        self, table: pd.DataFrame, caption: str = "", float_format: str = "{:.6g}", explain: bool = True
    ) -> Report:
        """Add a pandas table (floats formatted with ``float_format``).

        With ``explain``, every column named in the table of field names (:mod:`.fields`: ``mean_rank``,
        ``is_dnc``, ``rank_<l>``, ``<column>_mean`` …) is explained in one line under the table.

        Parameters
        ----------
        table : DataFrame
            The table (its index is left out).
        caption : str, default ""
            A bold line above it.
        float_format : str, default "{:.6g}"
            The format of floats.
        explain : bool, default True
            Explain the known columns under the table.

        Returns
        -------
        Report
            ``self``, so calls chain.

        Examples
        --------
        >>> import pandas as pd
        >>> rep = Report("demo").add_table(pd.DataFrame({"width": [4, 8], "final_loss": [0.5, 0.25]}))
        >>> html_table, caption, notes = rep.sections[0].tables[0]
        >>> [column for column, _ in notes]
        ['width', 'final_loss']
        """
        html_table = table.to_html(index=False, border=0, na_rep="–", float_format=float_format.format)
        notes = explanations(str(c) for c in table.columns) if explain else []
        self._current().tables.append((html_table, caption, notes))
        return self

    def add_note(self, text: str) -> Report:
        """Add a highlighted note to the current section.

        Parameters
        ----------
        text : str
            The note (plain text, escaped).

        Returns
        -------
        Report
            ``self``, so calls chain.

        Examples
        --------
        >>> rep = Report("demo").add_note("smoke run: reduced settings")
        >>> '<p class="note">smoke run: reduced settings</p>' in rep.to_html()
        True
        """
        self._current().notes.append(text)
        return self

    def set_config(self, config: Any) -> Report:
        """The exact configuration (a mapping, dumped as YAML, or a string).

        Parameters
        ----------
        config : mapping or str
            The configuration shown under "Configuration".

        Returns
        -------
        Report
            ``self``, so calls chain.

        Examples
        --------
        >>> "<pre>lr: 0.1\\n</pre>" in Report("demo").set_config({"lr": 0.1}).to_html()
        True
        """
        self.config = config
        return self

    def to_html(self) -> str:
        """The report as one self-contained HTML page.

        Returns
        -------
        str
            The title, the description and the command, every section, the configuration and the
            environment (:func:`environment_info`).

        Examples
        --------
        >>> page = Report("A <demo>", description="What it shows.").to_html()
        >>> page.startswith("<!DOCTYPE html>"), "<h1>A &lt;demo&gt;</h1>" in page
        (True, True)
        """
        e = html.escape
        parts = [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            f"<title>{e(self.title)}</title><style>{_CSS}</style></head><body>",
            f"<h1>{e(self.title)}</h1>",
        ]
        if self.description:
            parts.append(f"<p>{e(self.description)}</p>")
        if self.command:
            parts.append(f"<p>Reproduce with: <code>{e(self.command)}</code></p>")
        for sec in self.sections:
            parts.append(f"<h2>{e(sec.heading)}</h2>")
            if sec.text:
                parts.append(f"<p>{e(sec.text)}</p>")
            for note in sec.notes:
                parts.append(f'<p class="note">{e(note)}</p>')
            for b64, caption, wide in sec.figures:
                cls = ' class="wide"' if wide else ""
                parts.append(
                    f'<figure{cls}><img alt="{e(caption)}" '
                    f'src="data:image/png;base64,{b64}">'
                    f"<figcaption>{e(caption)}</figcaption></figure>"
                )
            for table_html, caption, notes in sec.tables:
                if caption:
                    parts.append(f"<p><b>{e(caption)}</b></p>")
                parts.append(table_html)
                if notes:
                    items = "".join(f"<li><code>{e(c)}</code>: {e(m)}</li>" for c, m in notes)
                    parts.append(f'<ul class="columns">{items}</ul>')
        parts.append("<h2>Configuration</h2>")
        cfg = self.config if isinstance(self.config, str) else yaml.safe_dump(self.config, sort_keys=False)
        parts.append(f"<pre>{e(cfg or '')}</pre>")
        parts.append('<h2>Environment</h2><table class="meta">')
        info = {"created": self.created, **environment_info()}
        parts += [f"<tr><th>{e(k)}</th><td>{e(str(v))}</td></tr>" for k, v in info.items()]
        parts.append("</table></body></html>")
        return "\n".join(parts)

    def write(self, path: str | Path) -> Path:
        """Write the report (atomically: a temporary file renamed into place).

        Parameters
        ----------
        path : str or Path
            The HTML file (its folder is made if missing).

        Returns
        -------
        Path
            ``path``.

        Examples
        --------
        >>> import tempfile
        >>> from pathlib import Path
        >>> path = Report("demo").write(Path(tempfile.mkdtemp()) / "out" / "report.html")
        >>> path.name, path.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
        ('report.html', True)
        """
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_suffix(p.suffix + ".tmp")
        tmp.write_text(self.to_html(), encoding="utf-8")
        tmp.replace(p)
        return p

"""The anchors' results as a table (:func:`table`) and a self-contained HTML report
(:func:`report_html`), and the report's path checked before any anchor runs.

The last stage of ``powermodel reproduce``: it reads what :func:`powermodel.reproduce.run_anchors`
returns.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from powermodel._version import __version__
from powermodel.analysis import offline_page
from powermodel.errors import PowerModelError
from powermodel.output import check_folder
from powermodel.reproduce.anchor import KINDS, Anchor
from powermodel.reproduce.runner import MISSES, NOT_USED

COLUMNS = (
    "anchor", "source", "published", "model", "tolerance (why)", "kind", "fitted on", "result",
    "s",
)  # fmt: skip


def table(anchors: Sequence[Anchor]) -> pd.DataFrame:
    """One row an anchor: the columns of :data:`COLUMNS`."""
    rows = [
        (a.name, a.source, a.published, a.model, a.tolerance, a.kind, a.fitted,
         "pass" if a.passed else "FAIL", round(a.seconds, 2))
        for a in anchors
    ]  # fmt: skip
    return pd.DataFrame(rows, columns=list(COLUMNS))


def check_report_path(path: str | Path) -> Path:
    """The report's path: an ``.html`` file in a folder that exists and can be written
    (:func:`powermodel.output.check_folder`)."""
    path = Path(path)
    if path.suffix.lower() not in (".html", ".htm"):
        raise PowerModelError(f"the report is HTML: name it .html, not {path.name!r}")
    return check_folder(path)


STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; max-width: 80em; }
table { border-collapse: collapse; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.5em; vertical-align: top; text-align: left; }
.pass { color: #1a7f37; font-weight: bold; } .fail { color: #cf222e; font-weight: bold; }
.prediction { background: #f0f7ff; } .calibration { background: #f6f0ff; }
.identity, .formula { background: #f6f6f6; }
section { margin-top: 2em; border-top: 1px solid #ddd; }
"""


def report_html(anchors: Sequence[Anchor]) -> str:
    """A self-contained HTML report: the table, then each anchor with its figure; plotly.js is
    embedded once, so it opens offline."""
    esc = html.escape
    passed = sum(a.passed for a in anchors)
    rows = "".join(
        f'<tr class="{a.kind}"><td><a href="#anchor-{i}">{esc(a.name)}</a></td>'
        f"<td>{esc(a.source)}</td><td>{esc(a.published)}</td><td>{esc(a.model)}</td>"
        f"<td>{esc(a.tolerance)}</td><td>{a.kind}</td><td>{esc(a.fitted)}</td>"
        f'<td class="{"pass" if a.passed else "fail"}">{"pass" if a.passed else "FAIL"}</td>'
        f"<td>{a.seconds:.2f}</td></tr>"
        for i, a in enumerate(anchors)
    )
    head = "".join(f"<th>{esc(c)}</th>" for c in COLUMNS)
    sections = []
    for kind, meaning in KINDS.items():
        parts = [f"<h2>{kind.capitalize()} anchors</h2><p>{esc(meaning.capitalize())}.</p>"]
        for i, a in enumerate(anchors):
            if a.kind != kind:
                continue
            div = a.figure.to_html(full_html=False, include_plotlyjs=False, div_id=f"figure-{i}")
            verdict = "pass" if a.passed else "FAIL"
            parts.append(
                f'<section id="anchor-{i}" class="{kind}"><h3>{esc(a.name)} '
                f'<span class="{verdict.lower()}">{verdict}</span></h3><p>'
                f"<b>{kind}</b> · source [{esc(a.source)}] · published {esc(a.published)} · "
                f"model {esc(a.model)}<br>tolerance: {esc(a.tolerance)}<br>fitted on: "
                f"{esc(a.fitted)} · {a.seconds:.2f} s</p>"
                f"{div}</section>"
            )
        sections.append("".join(parts))
    unused = "".join(f"<li>{esc(what)}: {esc(why)}</li>" for what, why in NOT_USED)
    missed = "".join(
        f"<li>{esc(a.name)}: {esc(MISSES.get(a.name, 'not a known miss: a regression'))}</li>"
        for a in anchors
        if not a.passed
    )
    counts = ", ".join(f"{sum(a.kind == k for a in anchors)} {k}" for k in KINDS)
    return offline_page(
        "powermodel reproduce",
        STYLE,
        f"<h1>powermodel {esc(__version__)} against published figures</h1>"
        f"<p>{passed} of {len(anchors)} anchors pass in "
        f"{sum(a.seconds for a in anchors):.1f} s ({counts}). Sources are keys of "
        "docs/references.toml; P: primary text read, S: quoted by a secondary source, D: derived "
        f"from the source's numbers.</p><table><tr>{head}</tr>{rows}</table>"
        f"<h2>Anchors the model misses</h2><ul>{missed or '<li>none</li>'}</ul>"
        f"{''.join(sections)}"
        "<footer><h2>Published measurements not used</h2>"
        f"<ul>{unused}</ul></footer>",
    )

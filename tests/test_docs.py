"""The documentation builds without a warning, and its generated pages cover the code: every
scenario key, Dataset variable and shipped rule, every citation resolved, every example's figures
on its page."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from docutils.nodes import make_id

from powermodel.reference import keys
from powermodel.rules import load_rules, rule_names
from powermodel.variables import VARIABLES

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
FIGURES = DOCS / "_generated" / "figures"
CITATION = re.compile(  # what the {cite} and {citekey} roles render: [llama3] or llama3
    r'<a class="reference internal" href="((?:[^"]*bibliography\.html)?#[^"]*)">'
    r'<span class="std std-ref">\[?([a-z][a-z0-9_]*)\]?</span></a>'
)


@pytest.fixture(scope="module")
def html(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The docs built once, as docs/README.md says, into a temporary folder."""
    out = tmp_path_factory.mktemp("docs")
    build = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html"]
        + ["-d", str(out / "doctrees"), str(DOCS), str(out / "html")],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert build.returncode == 0, build.stderr[-5000:]
    return out / "html"


def page(html: Path, name: str) -> str:
    return (html / f"{name}.html").read_text("utf-8")


def literals(text: str) -> set[str]:
    """Inline code on a page: ``<span class="pre">…</span>`` (docutils splits at spaces)."""
    return set(re.findall(r'<span class="pre">([^<]*)</span>', text))


def test_every_scenario_key_is_on_its_page(html: Path) -> None:
    shown = literals(page(html, "reference/scenario-keys"))
    missing = [k.key for k in keys() if k.key not in shown]
    assert not missing, missing


def test_every_variable_and_rule_is_on_its_page(html: Path) -> None:
    variables = literals(page(html, "reference/variables"))
    assert not [name for name in VARIABLES if name not in variables]
    rules = page(html, "reference/rules")
    shipped = [r.name for r in load_rules(rule_names())]
    assert len(shipped) >= 11  # presets/rules.toml holds eleven rules
    assert not [name for name in shipped if f'id="{name}"' not in rules]


def test_every_citation_links_a_bibliography_entry(html: Path) -> None:
    with (DOCS / "references.toml").open("rb") as f:
        entries = tomllib.load(f)
    bibliography = page(html, "reference/bibliography")
    # docutils makes an HTML id of a label: nerc_lltf is id="nerc-lltf"
    assert all(f'id="{make_id(key)}"' in bibliography for key in entries)
    cited = set()
    for path in html.rglob("*.html"):
        for href, key in CITATION.findall(path.read_text("utf-8")):
            assert key in entries, (path, key)
            assert href.split("#")[0].endswith("bibliography.html") or path.name == (
                "bibliography.html"
            ), (path, href)
            assert href.endswith(f"#{make_id(key)}"), (path, href)
            cited.add(key)
    assert {"llama3", "choukse", "nerc_lltf", "caiso_straw"} <= cited


def test_pages_cite_no_internal_notes(html: Path) -> None:
    """The project's internal notes are not published: pages cite the bibliography instead."""
    for path in html.rglob("*.html"):
        text = path.read_text("utf-8")
        # spelled in pieces, so that tests/test_bibliography.py's grep does not find this file
        for note in ("REFERENCES" + " §", "REFERENCES" + ".md", "DESIGN" + ".md", "../" + "shared"):
            assert note not in text, (path, note)


def embedded(figure: Path, built: str) -> bool:
    """Whether a page's built HTML holds the plotly figure of a fragment (its div's id)."""
    div = re.search(r'<div id="([^"]+)" class="plotly-graph-div"', figure.read_text("utf-8"))
    return bool(div) and f'id="{div[1]}"' in built


def test_every_example_shows_its_figures(html: Path) -> None:
    scripts = (ROOT / "examples").glob("*.py")
    examples = sorted(p.stem for p in scripts if not p.stem.startswith("_"))
    assert "first_run" in examples
    for name in examples:
        built = page(html, f"examples/{name}")
        figures = sorted(FIGURES.glob(f"{name}-*.html"))
        assert figures, f"examples/{name}.py wrote no figure"
        assert "plotly.min.js" in built
        for figure in figures:
            assert embedded(figure, built), (name, figure.name)
    assert (html / "_static" / "plotly.min.js").stat().st_size > 1_000_000


MODEL_PAGES = ("workload", "timeline", "thermal", "cooling", "electrical", "grid")


def test_every_model_figure_is_on_its_page(html: Path) -> None:
    """docs/_ext/model_figures.py writes model-<page>-<what>.html: each is on its model page,
    and each page from the iteration waveform to the grid shows at least one."""
    figures = sorted(FIGURES.glob("model-*.html"))
    for figure in figures:
        name = figure.stem.split("-")[1]
        assert name in MODEL_PAGES, figure.name
        assert embedded(figure, page(html, f"model/{name}")), figure.name
        assert figure.stat().st_size < 300_000, (figure.name, figure.stat().st_size)
    for name in MODEL_PAGES:
        built = page(html, f"model/{name}")
        assert any(embedded(f, built) for f in figures if f.stem.startswith(f"model-{name}-")), name
        assert "plotly.min.js" in built, name
    assert "plotly.min.js" not in page(html, "model/limits")  # no figure, no 4 MB script


def test_the_site_works_offline(html: Path) -> None:
    """Nothing a page needs comes from the network: MathJax and plotly.js are served from the
    built site, so equations and figures show on a machine without internet."""
    remote = re.compile(r'<(?:script|link)[^>]+(?:src|href)="(?:https?:)?//[^"]+"')
    for path in html.rglob("*.html"):
        found = remote.findall(path.read_text("utf-8"))
        assert not found, (path, found[:3])
    workload = page(html, "model/workload")
    assert 'src="../_static/mathjax/tex-chtml.js"' in workload
    assert (html / "_static" / "mathjax" / "tex-chtml.js").stat().st_size > 100_000


def test_citations_are_linked_in_prose_only() -> None:
    """[key] in prose becomes a link; in code, fences, autolinks and Markdown links it stays."""
    sys.path.insert(0, str(DOCS / "_ext"))
    from pm_docs import link_citations

    keys = {"llama3", "ko_zhu", "young", "daly"}
    prose = "a [llama3] b [P, ko_zhu Table I] c [P, young; daly]."
    assert link_citations(prose, keys) == (
        "a {cite}`llama3` b \\[P, {citekey}`ko_zhu` Table I\\] c "
        "\\[P, {citekey}`young`; {citekey}`daly`\\]."
    )
    for literal in (
        "write `[llama3]` in code",
        "see [llama3](https://example.org/x)",
        "<https://example.org/a[llama3]>",
        "[text][llama3]",
        "- item\n  ```toml\n  [llama3]\n  ```\n",
        "~~~\n[llama3]\n~~~\n",
        "[units] and [s] are no keys",
    ):
        assert link_citations(literal, keys) == literal, literal

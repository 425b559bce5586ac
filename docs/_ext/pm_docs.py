"""Sphinx extension of powermodel's docs: pages generated from the code, worked examples, citations.

At ``builder-inited`` it writes into ``docs/_generated/`` (git-ignored):

- ``include/scenario-keys.md`` from :mod:`powermodel.reference` (every key of the schema),
- ``include/rules.md`` from the shipped rule file (``powermodel/presets/rules.toml``),
- ``include/variables.md`` from :data:`powermodel.variables.VARIABLES`,
- ``include/bibliography.md`` from ``docs/references.toml``,
- ``include/cli.md``: ``--help`` of every subcommand, from the argparse parser itself,
- ``figures/``: what each ``examples/*.py`` ``main(out=...)`` writes, then the model pages'
  figures, ``model-<page>-<what>.html``, from ``model_figures.main`` (whatever raises fails
  the build),
- ``static/plotly.min.js`` from the installed plotly, so the figures render offline.

The role ``{cite}`llama3``` writes ``[llama3]`` linked to the bibliography entry; a key the
bibliography does not hold is an undefined label, which ``-W`` turns into a failed build.
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import os
import re
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.util import logging

DOCS = Path(__file__).resolve().parents[1]
ROOT = DOCS.parent
GENERATED = DOCS / "_generated"
INCLUDE = GENERATED / "include"
FIGURES = GENERATED / "figures"
STATIC = GENERATED / "static"
EXAMPLES = ROOT / "examples"
REFERENCES = DOCS / "references.toml"
PLOTLY_JS = "plotly.min.js"
# A figure is drawn before the theme lays out its columns: fit each to its column once it has.
FIT_FIGURES = "fit-figures.js"
FIT_FIGURES_JS = """window.addEventListener("load", function () {
  document.querySelectorAll(".plotly-graph-div").forEach(function (div) {
    Plotly.Plots.resize(div);
  });
});
"""

KEY = re.compile(r"[a-z][a-z0-9_]*")
# A citation as the code, presets and rule files write it: [llama3], [P, llama3 Table 4],
# [S, young; daly]. The grade (P primary, S secondary, D derived, A assumed, C calibrated) is kept.
CITATION = re.compile(r"\[(?:(?P<grade>[PSDAC](?: spec)?), )?(?P<body>[a-z][^\]\n]*)\]")
BIB_FIELDS = {"authors", "title", "venue", "year", "url", "doi", "used", "note"}

logger = logging.getLogger(__name__)


# --- helpers ----------------------------------------------------------------------------------


def write_if_changed(path: Path, text: str) -> None:
    """Write ``text``, leaving an unchanged file alone so Sphinx does not rebuild its readers."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text("utf-8") != text:
        path.write_text(text, "utf-8")


def plain(text: object) -> str:
    """``text`` with MyST markup characters escaped, spacing kept."""
    return re.sub(r"([\\`*_{}\[\]<>()#+!|$~])", r"\\\1", str(text)).replace("\n", " ")


def escape(text: object) -> str:
    """Plain text for a MyST table cell or paragraph: markup characters escaped, no newlines."""
    return " ".join(plain(text).split())


def cite(key: str) -> str:
    return f"{{cite}}`{key}`"


def cited(text: str, keys: set[str]) -> list[str]:
    """The bibliography keys ``text`` cites, in order."""
    found = []
    for match in CITATION.finditer(text):
        for part in re.split(r"[;,]", match["body"]):
            word = part.split()[0] if part.split() else ""
            if word in keys and word not in found:
                found.append(word)
    return found


def with_citations(text: str, keys: set[str]) -> str:
    """Escaped ``text`` (a description, a rule's source) for a generated table, with its
    citations linked to the bibliography."""
    out, end = [], 0
    for match in CITATION.finditer(text):
        out += [plain(text[end : match.start()]), _linked(match, keys, plain)]
        end = match.end()
    out.append(plain(text[end:]))
    return " ".join("".join(out).split())


# What a citation is never linked inside: fenced blocks (``` or ~~~, indented in a list too),
# inline code, and autolinks <https://…>
_LITERAL = re.compile(
    r"(^[ \t]*(`{3,}|~{3,}).*?^[ \t]*\2[ \t]*$|(`+).+?\3|<[a-z]+://[^>\s]*>)",
    flags=re.MULTILINE | re.DOTALL,
)


def link_citations(markdown: str, keys: set[str]) -> str:
    """A hand-written page with its citations (``[llama3]``, ``[P, ko_zhu Table I]``) linked to
    the bibliography: pages cite the way the code does. Code, autolinks and Markdown links
    (``[text](url)``, ``[text][ref]``) are left alone."""

    def link(match: re.Match, piece: str) -> str:
        after, before = piece[match.end() : match.end() + 1], piece[: match.start()]
        if after in ("(", "[") or before.endswith("]"):
            return match.group()  # the text or the label of a Markdown link
        return _linked(match, keys, str)

    out, end = [], 0
    for literal in _LITERAL.finditer(markdown):
        piece = markdown[end : literal.start()]
        out += [CITATION.sub(lambda m, p=piece: link(m, p), piece), literal.group()]
        end = literal.end()
    piece = markdown[end:]
    out.append(CITATION.sub(lambda m: link(m, piece), piece))
    return "".join(out)


def _linked(match: re.Match, keys: set[str], text: Callable[[str], str]) -> str:
    """One bracketed citation with its keys as links; ``text`` escapes the words around them."""
    parts = re.split(r"([;,])", match["body"])
    if not any(p.split() and p.split()[0] in keys for p in parts[::2]):
        return text(match.group())  # brackets that cite nothing, e.g. a unit
    if not match["grade"] and len(parts) == 1 and parts[0].strip() in keys:
        return cite(parts[0].strip())
    linked = []
    for part in parts:
        words = part.split()
        if words and words[0] in keys:
            at = part.index(words[0])
            linked.append(text(part[:at]) + f"{{citekey}}`{words[0]}`")
            linked.append(text(part[at + len(words[0]) :]))
        else:
            linked.append(text(part))
    grade = f"{match['grade']}, " if match["grade"] else ""
    return f"\\[{grade}{''.join(linked)}\\]"


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell or " " for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


# --- bibliography -----------------------------------------------------------------------------


def read_references(path: Path = REFERENCES) -> dict[str, dict]:
    """The bibliography, checked: one table per key, the fields the page prints."""
    with path.open("rb") as f:
        entries = tomllib.load(f)
    for key, entry in entries.items():
        if not KEY.fullmatch(key) or not isinstance(entry, dict):
            raise ValueError(f"{path.name}: [{key}] must be a table named [a-z][a-z0-9-]*")
        missing = {"authors", "title", "venue", "year", "used"} - entry.keys()
        unknown = entry.keys() - BIB_FIELDS
        if missing or unknown or not ({"url", "doi", "note"} & entry.keys()):
            raise ValueError(
                f"{path.name}: [{key}] needs authors, title, venue, year, used and a url, doi "
                f"or a note saying why it has none (missing {sorted(missing)}, "
                f"unknown {sorted(unknown)})"
            )
    return dict(sorted(entries.items()))


def bibliography_page(entries: dict[str, dict]) -> str:
    parts = []
    for key, e in entries.items():
        # a DOI may hold characters a URL may not (<, >, ;): quote them
        link = f"https://doi.org/{quote(e['doi'], safe='/')}" if "doi" in e else e.get("url")
        authors = escape(e["authors"]).removesuffix(".")  # "Eskridge, R. E." ends its own
        parts.append(
            f"({key})=\n"
            f"**\\[{key}\\]** {authors}. *{escape(e['title'])}*. "
            f"{escape(e['venue'])}, {e['year']}." + (f" <{link}>" if link else "") + "\n\n"
            f"Used for: {escape(e['used'])}\n"
            + (f"\nNote: {escape(e['note'])}\n" if e.get("note") else "")
        )
    return "\n".join(parts)


# --- scenario keys, rules, variables, CLI -----------------------------------------------------


def scenario_keys_page(citable: set[str]) -> str:
    from powermodel.reference import keys

    sections: dict[str, list] = {}
    for k in keys():
        section = k.key.split(".")[0] if "." in k.key else "(top level)"
        sections.setdefault(section, []).append(k)
    out = []
    for section, found in sections.items():
        out.append(f"## {section}\n")
        rows = [
            [
                f"`{k.key}`",
                escape(k.kind),
                escape(k.unit),
                escape(k.default),
                escape(k.bounds),
                with_citations(f"[{k.source}]", citable) if k.source else "",
                with_citations(k.description, citable),
            ]
            for k in found
        ]
        header = ["key", "type", "unit", "default", "bounds", "source", "description"]
        out.append(table(header, rows))
    return "\n".join(out)


def shipped_rules() -> list:
    from powermodel.rules import load_rules, rule_names

    return load_rules(rule_names())


def rules_page(citable: set[str]) -> str:
    from powermodel.durations import format_duration
    from powermodel.rules import describe

    out = []
    for rule in shipped_rules():
        if not cited(rule.source, citable):  # a rule cannot go out without its publication
            raise ValueError(f"rule {rule.name}: its source cites no bibliography key")
        limits = [f"{rule.limit:g} {rule.unit}"] if rule.limit is not None else []
        if rule.limit_fraction is not None:
            limits.append(f"{rule.limit_fraction:.2%} of {rule.reference} ({rule.unit})")
        measurement = [
            f"window {format_duration(rule.window)}",
            f"statistic `{rule.statistic}`",
            f"direction {rule.direction}",
        ]
        if rule.averaging:
            measurement.insert(0, f"averaged over {format_duration(rule.averaging)}")
        if rule.band:
            measurement.insert(0, f"band {rule.band[0]:g}–{rule.band[1]:g} Hz")
        rows = [
            ["title", escape(rule.title)],
            ["status", escape(rule.status)],
            ["groups", ", ".join(f"`{g}`" for g in rule.groups) or "—"],
            ["signal", f"`{rule.signal}`"],
            ["measurement", ", ".join(measurement)],  # durations, numbers and names: no markup
            [
                "limit",
                escape(" or ".join(limits) + (", the lesser" if len(limits) > 1 else "")),
            ],
            ["in words", escape(describe(rule))],
            ["source", with_citations(rule.source, citable)],
            ["choices made", escape(rule.choices) or "—"],
        ]
        out.append(f"## {rule.name}\n\n" + table(["field", "value"], rows))
    return "\n".join(out)


def variables_page() -> str:
    from powermodel.variables import VARIABLES

    rows = [
        [f"`{name}`", escape(v["units"]) or "—", escape(v["long_name"]), escape(v["description"])]
        for name, v in VARIABLES.items()
    ]
    return table(["name", "units", "long name", "description"], rows)


def cli_page() -> str:
    import argparse

    from powermodel.cli.parser import _parser

    with _columns(90):
        parser = _parser()
        commands = next(
            a for a in parser._actions if isinstance(a, argparse._SubParsersAction)
        ).choices
        out = ["## powermodel\n", "```text", parser.format_help().rstrip(), "```\n"]
        for name, sub in commands.items():
            out += [f"## powermodel {name}\n", "```text", sub.format_help().rstrip(), "```\n"]
    return "\n".join(out)


@contextlib.contextmanager
def _columns(width: int):
    """argparse wraps help to the terminal width: fix it, so the page does not depend on it."""
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(width)
    try:
        yield
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old


# --- worked examples --------------------------------------------------------------------------


def example_scripts() -> list[Path]:
    """The worked examples: ``examples/*.py`` not starting with an underscore."""
    return sorted(p for p in EXAMPLES.glob("*.py") if not p.name.startswith("_"))


def run_example(path: Path, out: Path) -> dict:
    """Import ``path`` by its path and run its ``main(out)``; whatever it raises fails the build."""
    spec = importlib.util.spec_from_file_location(f"powermodel_example_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.main(out=out)


def write_plotly_js() -> None:
    from plotly.offline import get_plotlyjs

    write_if_changed(STATIC / PLOTLY_JS, get_plotlyjs())
    write_if_changed(STATIC / FIT_FIGURES, FIT_FIGURES_JS)


# --- Sphinx hooks -----------------------------------------------------------------------------


# --- architecture ---------------------------------------------------------------------------


def module_summary(path: Path) -> str:
    """The first sentence of a module's docstring, its roles as the names they link."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    first = " ".join(doc.split("\n\n")[0].split())
    first = re.sub(r":[a-z]+:`~?([^`]+)`", lambda m: m.group(1).split(".")[-1], first)
    first = first.replace("``", "")
    return re.split(r"(?<=\.)\s", first, maxsplit=1)[0]


def _module_rows(paths: list[Path]) -> list[list[str]]:
    package = ROOT / "powermodel"
    return [
        [
            f"`{p.relative_to(package.parent).as_posix()}`",
            str(len(p.read_text(encoding="utf-8").splitlines())),
            escape(module_summary(p)),
        ]
        for p in paths
    ]


def architecture_page() -> str:
    """The engine's stages in order, then every other module by package, with its size and
    what its docstring says it is: the page cannot drift from the tree."""
    from powermodel.engine import STAGES

    package = ROOT / "powermodel"
    engine = [package / "simulate.py"] + [package / "engine" / f"{s}.py" for s in STAGES]
    rest = sorted(
        p
        for p in package.rglob("*.py")
        if p.parent.name != "engine" and p.name != "simulate.py" and "__pycache__" not in p.parts
    )
    header = ["module", "lines", "what it is"]
    return (
        "### The engine, in the order of its stages\n\n"
        + table(header, _module_rows(engine))
        + "\n### Everything else, by package\n\n"
        + table(header, _module_rows(rest))
    )


def generate(app: Sphinx) -> None:
    sys.path.insert(0, str(ROOT))  # the powermodel beside the docs, not another installed one
    entries = read_references()
    citable = set(entries)
    pages = {
        "bibliography.md": bibliography_page(entries),
        "scenario-keys.md": scenario_keys_page(citable),
        "rules.md": rules_page(citable),
        "variables.md": variables_page(),
        "cli.md": cli_page(),
        "architecture.md": architecture_page(),
    }
    for name, text in pages.items():
        write_if_changed(INCLUDE / name, text)
    write_plotly_js()
    FIGURES.mkdir(parents=True, exist_ok=True)
    for script in example_scripts():
        logger.info(f"running example {script.name}")
        run_example(script, FIGURES)
    logger.info("computing the model pages' figures")
    import model_figures  # beside this file: conf.py puts docs/_ext on the path

    model_figures.main(FIGURES)


def cite_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    """``{cite}`llama3``` (or ``llama3,patel``): ``[llama3]`` linked to its bibliography entry;
    ``{citekey}`llama3``` the bare key, inside a graded citation like ``[P, llama3 Table 4]``."""
    out = []
    for i, key in enumerate(k.strip() for k in text.split(",")):
        ref = addnodes.pending_xref(
            rawtext, refdomain="std", reftype="ref", reftarget=key, refexplicit=True, refwarn=True
        )
        ref += nodes.inline(text=key if name == "citekey" else f"[{key}]")
        out += ([nodes.Text(" ")] if i else []) + [ref]
    return out, []


def source_citations(app: Sphinx, docname: str, source: list[str]) -> None:
    """Link the citations of hand-written pages (the generated ones already are)."""
    if not docname.startswith("_generated/"):
        source[0] = link_citations(source[0], set(read_references()))


def embeds_figure(doctree: nodes.document | None) -> bool:
    """Whether a page embeds a plotly figure (a ``{raw} html`` fragment of one)."""
    if doctree is None:
        return False
    return any("plotly-graph-div" in raw.astext() for raw in doctree.findall(nodes.raw))


def page_scripts(app: Sphinx, pagename: str, templatename, context, doctree) -> None:
    """plotly.js on the pages that embed figures only (it is 4 MB): the worked examples, and
    the model pages that show one."""
    example = pagename.startswith("examples/") and pagename != "examples/index"
    if example or (pagename.startswith("model/") and embeds_figure(doctree)):
        app.add_js_file(PLOTLY_JS)
        app.add_js_file(FIT_FIGURES)


def setup(app: Sphinx) -> dict:
    app.connect("builder-inited", generate)
    app.connect("html-page-context", page_scripts)
    app.connect("source-read", source_citations)
    app.add_role("cite", cite_role)
    app.add_role("citekey", cite_role)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

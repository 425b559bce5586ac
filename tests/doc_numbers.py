"""The documentation's numbers, from runs: run the commands and snippets the pages mark, compare
every figure the pages show with what the run printed, and rewrite the pages from the runs.

The pages (``docs/*.md``, ``docs/guides/*.md``, ``docs/examples/*.md``, ``README.md``) mark what
is checked with HTML comments on a line of their own, which neither GitHub nor Sphinx shows:

``<!-- doc-file NAME -->``
    before a fenced block: the block's text is the file ``NAME`` of the page's runs (a scenario,
    a sweep or a rule file the page's commands read). Every run of a page works in one fresh
    folder that holds the page's files.
``<!-- doc-run ID -->``
    before a fenced ``sh`` or ``python`` block: run it, in page order. A ``sh`` block's every
    command (``\\`` continues a line; ``#`` starts a comment) must be ``powermodel ...``, run in
    this process through :func:`powermodel.cli.main`, which must exit 0 or 3 (a rule violated),
    or ``python examples/NAME.py ARGS``, a worked example run as from the repository root. A
    ``python`` block is executed as a script. The run's output is its stdout.
``<!-- doc-output ID -->``
    before a fenced block: the block is an excerpt of the output of run ``ID``. Its lines are
    consecutive lines of the output; a line ``...`` stands for any lines left out, and ``...``
    within a line for any text left out of that line; spaces between words may differ in
    number. Every number on the page must be the printed number, character for character.
``<!-- doc-figure ID "FIGURE" LINE #K -->``, with ``x100`` after ``#K`` to scale
    before a paragraph (or a table): ``FIGURE`` (say ``15.9 MW``, or ``| 21 | 7 |`` in a table)
    appears in it, and its number (the last in ``FIGURE``) is the ``K``-th number printed after
    the start ``LINE`` of a line of run ``ID``'s output (``IT power mean / peak / min #1``; a
    ``LINE`` ending in a letter or digit is a whole word), times 100 with ``x100`` (a fraction
    printed, a percentage written), rounded half up to the figure's decimals (a sign the figure
    leaves out, and thousands separators, aside).
``<!-- doc-not-run: WHY -->``
    before a fenced ``text`` block, or a ``python`` block that prints, that no run gives (an
    input format, a snippet that needs a cluster): every other such block must be a
    ``doc-output`` or a ``doc-run``, so that no shown output escapes the check.

``python tests/doc_numbers.py`` checks every page and prints what differs (exit 1 if any);
``python tests/doc_numbers.py --write [PAGE ...]`` rewrites the pages' output blocks and figures
from the runs (a line whose words no longer match any printed line is left as it is and
reported, to be edited by hand). ``tests/test_doc_numbers.py`` runs the check.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import os
import re
import runpy
import shlex
import sys
import tempfile
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE_GLOBS = ("docs/*.md", "docs/guides/*.md", "docs/examples/*.md", "README.md")
FENCE = re.compile(r"^(`{3,})([^`\n]*)$")
MARKER = re.compile(r"^<!--\s*doc-(file|run|output|figure|not-run)\b(.*?)-->\s*$")
FIGURE = re.compile(r'^\s*(\S+)\s+"([^"]+)"\s+(.+?)\s+#(\d+)(?:\s+x(\d+))?\s*$')
# A number as printed: not part of a word (the 15 of ieso-15s, the 3 of llama3), an optional
# sign, thousands separators, decimals and an exponent
NUMBER = r"(?<![\w.])[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w])"
NUMBER_RE = re.compile(NUMBER)
ELLIPSIS = re.compile(r"\.\.\.|…")
EXAMPLE_SCRIPT = re.compile(r"examples/[A-Za-z0-9_]+\.py")  # the worked examples' scripts
EXIT_CODES = (0, 3)  # the commands' success, and "a rule is violated" (check, size, screen)


@dataclass
class Block:
    """A fenced block of a page: its language, lines (between the fences) and where it is."""

    lang: str
    lines: list[str]
    start: int  # index of the first line inside the fences
    marker: tuple[str, str] | None = None  # (kind, argument) of the marker before the fence


@dataclass
class Figure:
    """A ``doc-figure`` marker and the paragraph after it."""

    run: str
    text: str
    line: str
    index: int
    marker_line: int
    paragraph: range
    scale: int = 1


@dataclass
class Page:
    path: Path
    lines: list[str]
    blocks: list[Block] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)

    @property
    def name(self) -> str:
        return (
            str(self.path.relative_to(ROOT)) if self.path.is_relative_to(ROOT) else str(self.path)
        )


class DocError(Exception):
    """A page's marker that cannot be followed (a run that fails, an unknown run)."""


def pages() -> list[Path]:
    """Every page the check reads."""
    return sorted({p for pattern in PAGE_GLOBS for p in ROOT.glob(pattern)})


def parse(path: Path, text: str | None = None) -> Page:
    """A page's fenced blocks with their markers, and its figure markers."""
    lines = (path.read_text("utf-8") if text is None else text).split("\n")
    page = Page(path, lines)
    pending: tuple[str, str] | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        marker = MARKER.match(line)
        fence = FENCE.match(line)
        if marker:
            kind, argument = marker.group(1), marker.group(2).strip().lstrip(":").strip()
            if kind == "figure":
                found = FIGURE.match(argument)
                if not found:
                    raise DocError(f'{page.name}:{i + 1}: a doc-figure is ID "FIGURE" LINE #K')
                end = i + 1
                while end < len(lines) and MARKER.match(lines[end]):
                    end += 1
                para = end
                while para < len(lines) and lines[para].strip():
                    para += 1
                page.figures.append(
                    Figure(
                        found.group(1),
                        found.group(2),
                        found.group(3),
                        int(found.group(4)),
                        i,
                        range(end, para),
                        int(found.group(5) or 1),
                    )
                )
            else:
                if kind != "not-run" and not re.fullmatch(r"[\w.\-/]+", argument):
                    raise DocError(f"{page.name}:{i + 1}: a doc-{kind} marker names one ID or file")
                if kind == "file" and (argument.startswith("/") or ".." in argument.split("/")):
                    raise DocError(
                        f"{page.name}:{i + 1}: a doc-file is a path inside the runs' folder"
                    )
                pending = (kind, argument)
        elif fence:
            ticks, lang = fence.group(1), fence.group(2).strip()
            end = i + 1
            while end < len(lines) and lines[end].rstrip() != ticks:
                end += 1
            page.blocks.append(Block(lang, lines[i + 1 : end], i + 1, pending))
            pending = None
            i = end
        elif line.strip():
            if pending is not None:
                raise DocError(f"{page.name}:{i + 1}: a doc-{pending[0]} marker not before a block")
        i += 1
    return page


# --- running ---------------------------------------------------------------------------------


def commands(block: Block) -> list[str]:
    """A ``sh`` block's commands: ``\\`` continues a line, ``#`` comments left out."""
    text = "\n".join(block.lines).replace("\\\n", " ")
    out = []
    for line in text.split("\n"):
        line = line.split(" #", 1)[0].strip() if not line.lstrip().startswith("#") else ""
        if line:
            out.append(" ".join(line.split()))
    return out


def _run_command(command: str) -> str:
    from powermodel.cli import main  # noqa: PLC0415 - the check alone imports the package

    words = shlex.split(command)
    if len(words) >= 2 and words[0] == "python" and EXAMPLE_SCRIPT.fullmatch(words[1]):
        return _run_example(words[1], words[2:])
    if not words or words[0] != "powermodel":
        raise DocError(
            f"cannot run {command!r}: a doc-run block holds powermodel commands and "
            "python examples/NAME.py only"
        )
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = main(words[1:])
    if code not in EXIT_CODES:
        raise DocError(f"{command!r} exited {code}: {stderr.getvalue().strip()[-2000:]}")
    return stdout.getvalue()


def _run_example(script: str, arguments: list[str]) -> str:
    """A worked example as ``python examples/NAME.py ARGS`` runs it from the repository root
    (its outputs in the page's folder): what it prints."""
    path = ROOT / script
    if not path.is_file():
        raise DocError(f"no such example {script}")
    stdout, argv = io.StringIO(), sys.argv
    sys.argv = [str(path), *arguments]
    try:
        with contextlib.redirect_stdout(stdout):
            runpy.run_path(str(path), run_name="__main__")
    finally:
        sys.argv = argv
    return stdout.getvalue()


def _run_python(source: str) -> str:
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        exec(compile(source, "<doc snippet>", "exec"), {"__name__": "__doc_snippet__"})  # noqa: S102
    return stdout.getvalue()


def run_page(page: Page, folder: Path) -> dict[str, str]:
    """Every ``doc-run`` of a page, in order, in ``folder`` (its files written first): each
    run's stdout by its ID."""
    for block in page.blocks:
        if block.marker and block.marker[0] == "file":
            target = folder / block.marker[1]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("\n".join(block.lines) + "\n", "utf-8")
    outputs: dict[str, str] = {}
    here = Path.cwd()
    os.chdir(folder)
    try:
        for block in page.blocks:
            if not block.marker or block.marker[0] != "run":
                continue
            ident = block.marker[1]
            where = f"{page.name}:{block.start}"
            if ident in outputs:
                raise DocError(f"{where}: run {ident!r} twice")
            try:
                if block.lang == "python":
                    outputs[ident] = _run_python("\n".join(block.lines))
                elif block.lang in ("sh", "bash", "console", ""):
                    outputs[ident] = "".join(_run_command(c) for c in commands(block))
                else:
                    raise DocError(f"a {block.lang!r} block cannot be run")
            except DocError as exc:
                raise DocError(f"{where}: {exc}") from None
            except Exception as exc:  # a snippet's or an example's own error, at its block
                why = f"{type(exc).__name__}: {exc}"
                raise DocError(f"{where}: run {ident!r} raised {why}") from exc
    finally:
        os.chdir(here)
    return outputs


# --- comparing -------------------------------------------------------------------------------


@dataclass
class Difference:
    """A figure on a page that is not the run's, or a line the run no longer prints."""

    where: str
    shown: str
    printed: str | None  # None: no printed line matches

    def __str__(self) -> str:
        if self.printed is None:
            return f"{self.where}: the run prints no line like {self.shown.strip()!r}"
        return f"{self.where}: the page shows {self.shown!r}, the run prints {self.printed!r}"


@functools.cache
def skeleton(line: str) -> tuple[re.Pattern[str], tuple[str, ...]]:
    """A regular expression matching a page's line with any numbers in its numbers' places, any
    text at each ``...`` and any run of spaces where it has spaces; and what each of its groups
    captures, ``number`` or ``elided``."""
    parts, kinds = [], []
    for k, piece in enumerate(ELLIPSIS.split(line)):
        if k:
            parts.append(r"(.*?)")
            kinds.append("elided")
        pos = 0
        for m in NUMBER_RE.finditer(piece):
            parts += [_text(piece[pos : m.start()]), f"({NUMBER})"]
            kinds.append("number")
            pos = m.end()
        parts.append(_text(piece[pos:]))
    return re.compile(r"^\s*" + "".join(parts) + r"\s*$"), tuple(kinds)


def _text(text: str) -> str:
    return "".join(r"\s+" if t.isspace() else re.escape(t) for t in re.split(r"(\s+)", text) if t)


def _is_elision(line: str) -> bool:
    return ELLIPSIS.fullmatch(line.strip()) is not None


def align(shown: list[str], printed: list[str]) -> list[int | None] | None:
    """For each line of a page's block, the index of the printed line it shows (None for a
    ``...`` line), or None when the block cannot be placed in the output: its lines are
    consecutive printed lines but where a ``...`` line leaves some out."""
    patterns = [None if _is_elision(s) else skeleton(s)[0] for s in shown]
    for start in range(len(printed)):
        out: list[int | None] = []
        at, skipping, ok = start, False, True
        for pattern in patterns:
            if pattern is None:
                out.append(None)
                skipping = True
                continue
            if skipping:
                found = next(
                    (j for j in range(at, len(printed)) if pattern.match(printed[j])), None
                )
            else:
                found = at if at < len(printed) and pattern.match(printed[at]) else None
            if found is None:
                ok = False
                break
            out.append(found)
            at, skipping = found + 1, False
        if ok:
            return out
    return None


def compare_block(shown: list[str], printed_text: str, where: str, first: int) -> list[Difference]:
    """Every figure of a page's output block against the run's output, at its printed
    precision; ``first`` is the page's line number of the block's first line."""
    printed = printed_text.rstrip("\n").split("\n")
    placed = align(shown, printed)
    if placed is None:
        return _unplaced(shown, printed, where, first)
    out = []
    for k, (line, j) in enumerate(zip(shown, placed, strict=True)):
        if j is None:
            continue
        pattern, kinds = skeleton(line)
        page_numbers = pattern.match(line)
        run_numbers = pattern.match(printed[j])
        assert page_numbers and run_numbers  # align matched both
        for a, b, group in zip(page_numbers.groups(), run_numbers.groups(), kinds, strict=True):
            if group == "number" and a != b:
                out.append(Difference(f"{where}:{first + k}", line.strip(), printed[j].strip()))
                break
    return out


def _unplaced(shown: list[str], printed: list[str], where: str, first: int) -> list[Difference]:
    """The lines of a block no printed line matches (or the first, if each matches alone)."""
    out = []
    for k, line in enumerate(shown):
        if _is_elision(line) or not line.strip():
            continue
        if not any(skeleton(line)[0].match(p) for p in printed):
            out.append(Difference(f"{where}:{first + k}", line, None))
    if not out:
        out.append(
            Difference(
                f"{where}:{first}", "the block's lines in this order (a '...' line missing?)", None
            )
        )
    return out


def figure_value(fig: Figure, printed_text: str) -> str | None:
    """The printed number a ``doc-figure`` names, rounded as its figure is written; None when
    no printed line starts with its line or the line has too few numbers."""
    start = " ".join(fig.line.split())
    for line in printed_text.split("\n"):
        flat = " ".join(line.split())
        rest = flat[len(start) :]
        if flat.startswith(start) and not (start[-1].isalnum() and rest[:1].isalnum()):
            numbers = NUMBER_RE.findall(rest)
            if len(numbers) >= fig.index:
                value = Decimal(numbers[fig.index - 1].replace(",", "")) * fig.scale
                return rounded(str(value), figure_number(fig.text))
    return None


def _last_number(text: str) -> re.Match[str]:
    found = list(NUMBER_RE.finditer(text))
    if not found:
        raise DocError(f"the figure {text!r} holds no number")
    return found[-1]


def figure_number(text: str) -> str:
    """The number a figure's text gives: its last (``| 21 | 7 |`` gives 7)."""
    return _last_number(text).group(0)


def with_number(text: str, value: str) -> str:
    """A figure's text with its number (the last) replaced by ``value``."""
    found = _last_number(text)
    return text[: found.start()] + value + text[found.end() :]


def rounded(printed: str, like: str) -> str:
    """``printed`` rounded half up to the decimals of ``like``, written as ``like`` is: its
    sign only if ``like`` has one, thousands separators if ``like`` has them."""
    value = Decimal(printed.replace(",", ""))
    exponent = Decimal(1).scaleb(-len(like.split(".")[1])) if "." in like else Decimal(1)
    value = value.quantize(exponent, rounding=ROUND_HALF_UP)
    if like[0] not in "+-":
        value = abs(value)
    digits = len(like.split(".")[1]) if "." in like else 0
    text = f"{value:,.{digits}f}" if "," in like else f"{value:.{digits}f}"
    return ("+" + text) if like[0] == "+" and value >= 0 else text


def _spaced(text: str) -> re.Pattern[str]:
    """A figure's text as a pattern whose spaces match any run of spaces or a line break (a
    figure in a paragraph may break across lines)."""
    return re.compile(_text(text))


def _respaced(new: str, found: str) -> str:
    """``new`` (a figure's text with its number replaced) with the spaces and line breaks of
    ``found``, the text it replaces."""
    spaces = re.findall(r"\s+", found)
    pieces = re.split(r"\s+", new)
    if len(pieces) != len(spaces) + 1:
        return new
    return "".join(p + s for p, s in zip(pieces, [*spaces, ""], strict=True))


def check_figure(fig: Figure, page: Page, printed_text: str) -> list[Difference]:
    where = f"{page.name}:{fig.marker_line + 1}"
    paragraph = "\n".join(page.lines[i] for i in fig.paragraph)
    if not _spaced(fig.text).search(paragraph):
        return [Difference(where, f"{fig.text} (in the paragraph after the marker)", None)]
    value = figure_value(fig, printed_text)
    if value is None:
        return [Difference(where, f"{fig.line} #{fig.index}", None)]
    number = figure_number(fig.text)
    if value != number:
        return [Difference(where, fig.text, with_number(fig.text, value))]
    return []


def check_coverage(page: Page) -> list[str]:
    """Blocks that show output no run checks: every ``text`` block, and every ``python`` block
    that prints, must be a ``doc-output``, a ``doc-run`` or a ``doc-not-run``; and every
    ``doc-output`` or ``doc-figure`` must name a ``doc-run`` of its page."""
    problems = []
    runs = {b.marker[1] for b in page.blocks if b.marker and b.marker[0] == "run"}
    for block in page.blocks:
        kind = block.marker[0] if block.marker else None
        prints = block.lang == "python" and "print(" in "\n".join(block.lines)
        if (block.lang == "text" or prints) and kind not in ("output", "run", "not-run"):
            problems.append(
                f"{page.name}:{block.start}: a {block.lang} block with no doc-output, doc-run "
                "or doc-not-run marker"
            )
        if kind == "output" and block.marker[1] not in runs:
            problems.append(f"{page.name}:{block.start}: doc-output of no run {block.marker[1]!r}")
    problems += [
        f"{page.name}:{f.marker_line + 1}: doc-figure of no run {f.run!r}"
        for f in page.figures
        if f.run not in runs
    ]
    return problems


def check_page(page: Page, outputs: dict[str, str]) -> list[Difference]:
    """Every output block and figure of a page against its runs' outputs."""
    out = []
    for block in page.blocks:
        if block.marker and block.marker[0] == "output":
            ident = block.marker[1]
            if ident not in outputs:
                out.append(Difference(f"{page.name}:{block.start}", f"the run {ident}", None))
                continue
            out += compare_block(block.lines, outputs[ident], f"{page.name}", block.start + 1)
    for fig in page.figures:
        if fig.run not in outputs:
            out.append(Difference(f"{page.name}:{fig.marker_line + 1}", f"the run {fig.run}", None))
            continue
        out += check_figure(fig, page, outputs[fig.run])
    return out


# --- rewriting -------------------------------------------------------------------------------


def rewrite(page: Page, outputs: dict[str, str]) -> tuple[str, list[str]]:
    """The page's text with each output block's lines and each figure from the runs, and the
    lines that could not be placed (left as they are)."""
    lines = list(page.lines)
    left: list[str] = []
    for block in page.blocks:
        if not (block.marker and block.marker[0] == "output"):
            continue
        printed = outputs[block.marker[1]].rstrip("\n").split("\n")
        placed = align(block.lines, printed)
        if placed is None:
            unplaced = _unplaced(block.lines, printed, page.name, block.start + 1)
            left += [f"{d} (run {block.marker[1]})" for d in unplaced]
            continue
        for k, (line, j) in enumerate(zip(block.lines, placed, strict=True)):
            if j is not None:
                lines[block.start + k] = _rewritten(line, printed[j])
    texts = [fig.text for fig in page.figures]  # as rewritten so far
    for k, fig in enumerate(page.figures):
        value = figure_value(fig, outputs[fig.run])
        if value is None:
            where = f"{page.name}:{fig.marker_line + 1}"
            left.append(f"{where}: no printed {fig.line} #{fig.index} (run {fig.run})")
            continue
        old = texts[k]
        new = with_number(old, value)
        if fig.paragraph:
            paragraph = "\n".join(lines[i] for i in fig.paragraph)
            paragraph = _spaced(old).sub(lambda m, new=new: _respaced(new, m.group(0)), paragraph)
            lines[fig.paragraph.start : fig.paragraph.stop] = paragraph.split("\n")
        # a figure's text may hold another's ("12,412 MWh | 12,111" after "IT energy | 12,412")
        for j, other in enumerate(page.figures):
            if old in texts[j]:
                changed = texts[j].replace(old, new)
                marker = lines[other.marker_line]
                lines[other.marker_line] = marker.replace(f'"{texts[j]}"', f'"{changed}"')
                texts[j] = changed
    return "\n".join(lines), left


def _rewritten(shown: str, printed: str) -> str:
    """The printed line, with what the shown line leaves out as `` ...``: each left-out span
    with the spaces before it, so that the rows of a table, whose columns have one width, stay
    aligned."""
    pattern, kinds = skeleton(shown)
    match = pattern.match(printed)
    assert match
    out, pos = [], 0
    for group, kind in enumerate(kinds, start=1):
        if kind == "elided":
            start = match.start(group)
            while start > pos and printed[start - 1].isspace():
                start -= 1
            out.append(printed[pos:start] + (" ..." if start else "..."))
            pos = match.end(group)
    out.append(printed[pos:])
    return "".join(out).rstrip()


# --- the command -----------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pages", nargs="*", type=Path, help="pages (default: every page)")
    parser.add_argument("--write", action="store_true", help="rewrite the pages from the runs")
    args = parser.parse_args(argv)
    chosen = [p.resolve() for p in args.pages] or pages()
    status = 0
    for path in chosen:
        try:
            status |= _one(path, args.write)
        except DocError as exc:
            print(exc)
            status = 1
    return status


def _one(path: Path, write: bool) -> int:
    """Check or rewrite one page; 1 where something differs or is left to edit by hand."""
    page = parse(path)
    problems = check_coverage(page)
    for problem in problems:
        print(problem)
    status = int(bool(problems))
    if not any(b.marker and b.marker[0] == "run" for b in page.blocks):
        return status
    with tempfile.TemporaryDirectory() as folder:
        outputs = run_page(page, Path(folder))
    if write:
        text, left = rewrite(page, outputs)
        if text != "\n".join(page.lines):
            path.write_text(text, "utf-8")
            print(f"rewrote {page.name}")
        for line in left:
            print(f"edit by hand: {line}")
        for ident in dict.fromkeys(re.findall(r"\(run (\S+)\)$", "\n".join(left), re.M)):
            print(f"\nrun {ident} of {page.name} printed:\n{outputs[ident]}")
        return status | int(bool(left))
    differences = check_page(page, outputs)
    for difference in differences:
        print(difference)
    return status | int(bool(differences))


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())

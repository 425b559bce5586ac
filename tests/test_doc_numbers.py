"""Every number the documentation shows from a run is the program's (issue 28): the commands
and snippets the pages mark are run, and each figure of their output blocks and of the prose
linked to them is compared with what they printed, character for character
(tests/doc_numbers.py holds the convention; ``python tests/doc_numbers.py --write`` rewrites the
pages from the runs)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from doc_numbers import (
    DocError,
    check_coverage,
    check_page,
    compare_block,
    pages,
    parse,
    rewrite,
    rounded,
    run_page,
)

ROOT = Path(__file__).resolve().parents[1]
RUN_PAGES = [p for p in pages() if any(b.marker and b.marker[0] == "run" for b in parse(p).blocks)]


def test_the_check_reads_every_page_and_the_pages_that_show_runs():
    names = {str(p.relative_to(ROOT)) for p in pages()}
    assert {"README.md", "docs/getting-started.md", "docs/guides/rules.md"} <= names
    assert {"docs/examples/first_run.md", "docs/guides/sweeps.md"} <= names
    shown = {str(p.relative_to(ROOT)) for p in RUN_PAGES}
    # the pages issue 28 found wrong are all checked
    assert {
        "docs/getting-started.md",
        "docs/guides/rules.md",
        "docs/guides/campus.md",
        "docs/guides/sweeps.md",
        "docs/examples/first_run.md",
        "docs/examples/llama3_reference.md",
        "docs/examples/gb200_ercot_battery.md",
        "docs/examples/tampa_vs_chicago.md",
    } <= shown


@pytest.mark.parametrize("path", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_page_shows_an_output_no_run_checks(path):
    assert check_coverage(parse(path)) == []


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    """Each page's runs, once: their printed output by run ID, by page."""
    cache: dict[Path, dict[str, str]] = {}

    def of(path: Path) -> dict[str, str]:
        if path not in cache:
            cache[path] = run_page(parse(path), tmp_path_factory.mktemp(path.stem))
        return cache[path]

    return of


@pytest.mark.parametrize("path", RUN_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_figure_a_page_shows_is_the_one_its_run_prints(path, outputs):
    differences = check_page(parse(path), outputs(path))
    assert not differences, "\n".join(map(str, differences)) + (
        "\nrewrite the page from its runs: python tests/doc_numbers.py --write " + str(path)
    )


def test_a_doctored_number_on_a_real_page_fails(outputs):
    # the getting-started page with one figure of its output moved by its last printed digit
    path = ROOT / "docs" / "getting-started.md"
    text = path.read_text("utf-8")
    line = next(ln for ln in text.splitlines() if ln.startswith("PUE / WUE"))
    wue = line.split("/ ")[-1].split()[0]  # as printed, e.g. 0.057
    doctored = line.replace(wue, f"{float(wue) + 0.001:.3f}")
    page = parse(path, text.replace(line, doctored))
    (difference,) = check_page(page, outputs(path))
    assert difference.shown == doctored.strip() and difference.printed == line.strip()
    assert difference.where == f"docs/getting-started.md:{text.splitlines().index(line) + 1}"
    # rewriting the doctored page gives the page back
    assert rewrite(page, outputs(path)) == (text, [])


# --- the comparer on pages made up here ---------------------------------------------------------

SNIPPET = """# A page

<!-- doc-run demo -->
```python
print("IT energy                766.0 MWh")
print("PUE / WUE                1.085 / 0.057 L/kWh")
print("rule   lever  setting unit  worst  limit  note")
print("ieso   cap      231.2    W  4.992      5  ok")
print("ieso   ramp    +0.55%    -  1,234      5  also")
```

<!-- doc-output demo -->
```text
IT energy                766.0 MWh
PUE / WUE                1.085 / 0.057 L/kWh
...
ieso   cap ...  4.992      5 ...
```

<!-- doc-figure demo "1.1" PUE / WUE #1 -->
<!-- doc-figure demo "0.6 %" ieso ramp #1 -->
<!-- doc-figure demo "1,234" ieso ramp #2 -->
A PUE of 1.1 and a battery costing 0.6 % more energy, 1,234 of them.
"""


def _in_output(old: str, new: str) -> str:
    """SNIPPET with ``old`` replaced by ``new`` in its output block only."""
    at = SNIPPET.index("<!-- doc-output demo -->")
    assert old in SNIPPET[at:]
    return SNIPPET[:at] + SNIPPET[at:].replace(old, new, 1)


def _checked(text: str, tmp_path: Path) -> list[str]:
    page = parse(tmp_path / "page.md", text)
    return [str(d) for d in check_page(page, run_page(page, tmp_path))]


def test_a_page_that_matches_its_run_passes(tmp_path):
    assert _checked(SNIPPET, tmp_path) == []


@pytest.mark.parametrize(
    "line, doctored",
    [
        ("766.0 MWh", "766.01 MWh"),  # one digit more
        ("766.0 MWh", "766.1 MWh"),  # the last digit
        ("766.0 MWh", "766 MWh"),  # the same value at another precision is another figure
        ("0.057 L/kWh", "0.058 L/kWh"),
        ("4.992      5 ...", "4.993      5 ..."),  # a number beside an elision
    ],
)
def test_any_number_changed_in_an_output_block_is_reported(tmp_path, line, doctored):
    (difference,) = _checked(_in_output(line, doctored), tmp_path)
    shown, printed = difference.split(": the page shows ", 1)[1].split(", the run prints ")
    assert doctored.split()[0] in shown and line.split()[0] in printed
    assert difference.startswith(f"{tmp_path / 'page.md'}:")


def test_a_line_the_run_no_longer_prints_is_reported(tmp_path):
    text = _in_output("PUE / WUE                1.085", "PUE only                 1.085")
    (difference,) = _checked(text, tmp_path)
    assert "the run prints no line like 'PUE only" in difference


def test_lines_shown_as_consecutive_must_be_so(tmp_path):
    # without its '...' line the block claims the PUE line is followed by the 'cap' row
    text = _in_output("L/kWh\n...\n", "L/kWh\n")
    (difference,) = _checked(text, tmp_path)
    assert "a '...' line missing?" in difference


def test_a_prose_figure_is_the_printed_one_rounded_as_written(tmp_path):
    text = SNIPPET.replace("A PUE of 1.1", "A PUE of 1.2").replace('"1.1"', '"1.2"')
    (difference,) = _checked(text, tmp_path)
    assert difference.endswith("the page shows '1.2', the run prints '1.1'")
    missing = SNIPPET.replace("A PUE of 1.1", "A PUE of 1.09")  # the marker's figure not there
    (difference,) = _checked(missing, tmp_path)
    assert "1.1 (in the paragraph after the marker)" in difference


def test_a_figure_may_be_scaled_and_break_across_lines(tmp_path):
    text = (
        '<!-- doc-run r -->\n```python\nprint("share 0.917683")\nprint("share_x 1")\n```\n\n'
        '<!-- doc-figure r "at **91.8 %**" share #1 x100 -->\ntraining time comes out at\n'
        "**91.8 %**, as the paper says\n"
    )
    assert _checked(text, tmp_path) == []  # 'share' is a whole word: not the share_x line
    drifted = text.replace("0.917683", "0.91649")
    page = parse(tmp_path / "p.md", drifted)
    outputs = run_page(page, tmp_path)
    (difference,) = check_page(page, outputs)
    assert str(difference).endswith("the run prints 'at **91.6 %**'")
    fixed, left = rewrite(page, outputs)
    assert left == [] and "comes out at\n**91.6 %**, as" in fixed and '"at **91.6 %**"' in fixed


def test_rounding_a_printed_figure():
    assert rounded("8.494", "8.9") == "8.5"
    assert rounded("0.4987", "0.50") == "0.50"
    assert rounded("1.247", "1.25") == "1.25"
    assert rounded("10.55", "10.4") == "10.6"  # half up, from the printed digits
    assert rounded("+0.55", "0.56") == "0.55" and rounded("-39.97", "40") == "40"
    assert rounded("+0.55", "+0.5") == "+0.6" and rounded("-39.97", "-40.0") == "-40.0"
    assert rounded("21844", "21,000") == "21,844" and rounded("1,234.5", "1,234") == "1,235"


def test_the_rewrite_puts_the_printed_figures_back_and_keeps_the_elisions(tmp_path):
    text = (
        _in_output("766.0 MWh", "762.4 MWh")
        .replace("4.992      5 ...", "4.983      5 ...")
        .replace("of 1.1", "of 1.0")
        .replace('"1.1"', '"1.0"')
    )
    page = parse(tmp_path / "page.md", text)
    assert len(check_page(page, run_page(page, tmp_path))) == 3
    assert rewrite(page, run_page(page, tmp_path)) == (SNIPPET, [])


def test_rewriting_a_table_keeps_its_columns_aligned(tmp_path):
    printed = (
        "   rule lever  setting  worst   note\n"
        "   ieso   cap    231.2  4.992   okay\n"
        "  other  ramp   12,345   13.4   also\n"
    )
    shown = [
        "   rule ...  worst   note",
        "   ieso ...  4.983   okay",
        "  other ...   13.3   also",
    ]
    assert len(compare_block(shown, printed, "page", 1)) == 2
    page = parse(
        tmp_path / "t.md",
        f"<!-- doc-run t -->\n```python\nprint({printed!r}, end='')\n```\n\n"
        "<!-- doc-output t -->\n```text\n" + "\n".join(shown) + "\n```\n",
    )
    text, left = rewrite(page, run_page(page, tmp_path))
    block = text.split("```text\n")[1].split("\n```")[0].split("\n")
    assert block == [
        "   rule ...  worst   note",
        "   ieso ...  4.992   okay",
        "  other ...   13.4   also",
    ]
    assert left == [] and len({len(line) for line in block}) == 1


def test_a_command_that_fails_or_is_not_powermodel_is_an_error(tmp_path):
    bad = "<!-- doc-run x -->\n```sh\npowermodel run no-such-preset\n```\n"
    with pytest.raises(DocError, match="exited 1: .*no-such-preset"):
        run_page(parse(tmp_path / "p.md", bad), tmp_path)
    other = "<!-- doc-run x -->\n```sh\nrm -rf out/\n```\n"
    with pytest.raises(DocError, match="holds powermodel commands and python examples/NAME.py"):
        run_page(parse(tmp_path / "p.md", other), tmp_path)
    raising = '<!-- doc-run x -->\n```python\nraise ValueError("boom")\n```\n'
    with pytest.raises(DocError, match=r"p\.md:2: run 'x' raised ValueError: boom"):
        run_page(parse(tmp_path / "p.md", raising), tmp_path)
    script = "<!-- doc-run x -->\n```sh\npython /tmp/anything.py\n```\n"  # not an example
    with pytest.raises(DocError, match="holds powermodel commands and python examples/NAME.py"):
        run_page(parse(tmp_path / "p.md", script), tmp_path)


@pytest.mark.parametrize(
    "text, match",
    [
        ("<!-- doc-output -->\n```text\n1\n```\n", "p.md:1: a doc-output marker names one ID"),
        ('<!-- doc-figure x "1 MW" -->\nit is 1 MW\n', 'p.md:1: a doc-figure is ID "FIGURE"'),
        ("<!-- doc-run x -->\n\nSome prose.\n", "p.md:3: a doc-run marker not before a block"),
        ("<!-- doc-file ../../etc/x -->\n```\n1\n```\n", "p.md:1: a doc-file is a path inside"),
    ],
)
def test_a_malformed_marker_is_one_line_naming_where(tmp_path, text, match):
    with pytest.raises(DocError, match=re.escape(match)):
        parse(tmp_path / "p.md", text)


def test_an_unmarked_output_and_a_marker_of_no_run_are_reported(tmp_path):
    text = (
        "```text\nIT energy 766.0 MWh\n```\n\n<!-- doc-output gone -->\n```text\n1\n```\n\n"
        '<!-- doc-figure gone "1 MW" x #1 -->\nit is 1 MW\n'
    )
    problems = check_coverage(parse(tmp_path / "p.md", text))
    assert [p.split(": ", 1)[1] for p in problems] == [
        "a text block with no doc-output, doc-run or doc-not-run marker",
        "doc-output of no run 'gone'",
        "doc-figure of no run 'gone'",
    ]

"""The repository carries its own sources: one bibliography (docs/references.toml) that every
citation in the code, presets, rule files, tests, examples and docs resolves to, model docstrings
with their References in full, and no file outside the repository cited anywhere."""

from __future__ import annotations

import ast
import difflib
import re
import subprocess
import tomllib
from pathlib import Path

import pytest

from powermodel import scenario
from powermodel.scenario.base import packaged

ROOT = Path(__file__).resolve().parents[1]
BIBLIOGRAPHY = ROOT / "docs" / "references.toml"
REQUIRED = ("authors", "title", "venue", "year", "used")
KEY = re.compile(r"^[a-z][a-z0-9_]*$")
CANDIDATE = re.compile(r"^[a-z][a-z0-9_-]*$")  # what a citation looks like, valid key or not
TEXT_SUFFIXES = {".py", ".toml", ".md", ".txt", ".cff", ".cfg", ".ini", ".yml", ".yaml", ".rst"}
# A graded citation: [P, llama3], [S, ko_zhu Table I], [P, young; daly], [D, llama3].
GRADED = re.compile(r"\[(?:P|S|D|A|C)(?: spec)?, ([^\]\n]+)\]")
# A bare citation is a bracket after a space or an opening parenthesis, as prose writes it (code
# indexes after a name or a closing bracket): [llama3], [energyplus].
BARE = re.compile(r"(?:^|(?<=[\s(]))\[([a-z][a-z0-9_-]*)\]", re.MULTILINE)
CITE_ROLE = re.compile(r"\{cite(?:key)?\}`([^`]+)`")  # the docs' role: {cite}`llama3,patel`
NUMPYDOC_ENTRY = re.compile(r"^\s*\.\. \[([^\]]+)\]\s*(.*)$")


def bibliography() -> dict[str, dict]:
    return tomllib.loads(BIBLIOGRAPHY.read_text(encoding="utf-8"))


def project_files() -> list[Path]:
    """Every text file of the project: tracked or new, not ignored (so not .venv or builds)."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\n")
    paths = [ROOT / name for name in listed if name]
    return [p for p in paths if p.suffix in TEXT_SUFFIXES and p.is_file()]


def full_citation(entry: dict) -> str:
    """The full form a numpydoc References entry starts with: authors, "title", venue (year)."""
    return f'{entry["authors"]}, "{entry["title"]}", {entry["venue"]} ({entry["year"]})'


def _squash(text: str) -> str:
    return " ".join(text.split())


def test_every_entry_has_author_title_venue_year_link_and_what_is_used():
    entries = bibliography()
    assert len(entries) >= 30
    for key, entry in entries.items():
        assert KEY.match(key), key
        missing = [field for field in REQUIRED if not entry.get(field)]
        assert not missing, f"[{key}] lacks {missing}"
        assert isinstance(entry["year"], int) and 1900 <= entry["year"] <= 2027, key
        # a link, or a note saying why there is none (a printed handbook, an unlocated primary)
        assert entry.get("url") or entry.get("doi") or entry.get("note"), key
        if entry.get("doi"):
            assert re.match(r"^10\.\d{4,}/\S+$", entry["doi"]), key


def test_no_file_outside_the_repository_is_cited():
    # Spelled in pieces so that this file does not match itself.
    outside = [
        "REFERENCES" + ".md",
        "REFERENCES" + " §",
        "DESIGN" + ".md",
        "DESIGN" + " principle",
        "../" + "shared",
        "/work" + "/",
    ]
    relative = re.compile(r"(?:\.\./)+[\w./-]+")
    found = []
    for path in project_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        # the hostile-input tests send traversal paths on purpose: they cite nothing
        hostile = path.parent == ROOT / "tests"
        for line_no, line in enumerate(text.splitlines(), 1):
            found += [f"{path.relative_to(ROOT)}:{line_no}: {s}" for s in outside if s in line]
            for match in [] if hostile else relative.finditer(line):
                target = (path.parent / match.group()).resolve()
                if not target.is_relative_to(ROOT):
                    found.append(f"{path.relative_to(ROOT)}:{line_no}: {match.group()}")
    assert not found, "paths outside the repository:\n" + "\n".join(found)


def cited_keys() -> dict[str, list[str]]:
    """Every key cited in the project, with where: graded and bare citations in any text file,
    the presets' [sources] tables and numpydoc References entries."""
    keys: dict[str, list[str]] = {}
    known = set(bibliography())
    for path in project_files():
        if path in (BIBLIOGRAPHY, Path(__file__).resolve()):  # this file tests the checker
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        where = str(path.relative_to(ROOT))
        for match in GRADED.finditer(text):
            for part in re.split(r"[;,]", match.group(1)):
                token = part.split()[0] if part.split() else ""
                if CANDIDATE.match(token):
                    keys.setdefault(token, []).append(where)
        for match in BARE.finditer(text):
            token = match.group(1)
            line = text[text.rfind("\n", 0, match.start()) + 1 : text.find("\n", match.end())]
            if path.suffix == ".toml" and line.strip() == match.group():
                continue  # a TOML table header, such as a rule's name
            # a bare word is a citation if it is a key or one typo away from one
            if token in known or difflib.get_close_matches(token, known, n=1, cutoff=0.8):
                keys.setdefault(token, []).append(where)
        for match in CITE_ROLE.finditer(text):
            for token in match.group(1).split(","):
                keys.setdefault(token.strip(), []).append(where)
        for line in text.splitlines():
            entry = NUMPYDOC_ENTRY.match(line)
            if entry:
                keys.setdefault(entry.group(1), []).append(where)
    for name in scenario.presets():
        raw = tomllib.loads(packaged(f"{name}.toml").read_text(encoding="utf-8"))
        for key in raw.get("sources", {}):
            keys.setdefault(key, []).append(f"preset {name} [sources]")
    return keys


def test_every_citation_resolves_to_the_bibliography():
    known = set(bibliography())
    keys = cited_keys()
    unresolved = {key: where for key, where in keys.items() if key not in known}
    assert not unresolved, f"citations with no bibliography entry: {unresolved}"
    # the checker sees citations where they are: code, presets, rule files
    for key in ("llama3", "ko_zhu", "nprr1191", "caiso_straw", "nvidia_nvml", "young"):
        assert key in keys, key


def test_the_checker_catches_a_typo_and_an_unknown_graded_key(tmp_path):
    known = set(bibliography())
    assert difflib.get_close_matches("lama3", known, n=1, cutoff=0.8) == ["llama3"]
    graded = GRADED.findall("a 6.2 s step [D, llama4 Table 4] and (see [P, young; dalyy])")
    tokens = [part.split()[0] for g in graded for part in re.split(r"[;,]", g)]
    assert tokens == ["llama4", "young", "dalyy"]
    assert not {"llama4", "dalyy"} <= known


def test_every_bibliography_entry_is_cited_somewhere():
    unused = set(bibliography()) - set(cited_keys())
    assert not unused, f"entries nobody cites: {sorted(unused)}"


MODEL_MODULES = sorted((ROOT / "powermodel" / "models").glob("*.py"))


@pytest.mark.parametrize("path", MODEL_MODULES, ids=lambda p: p.name)
def test_model_docstrings_carry_their_references_in_full(path):
    """A model docstring that cites a source has a References section, whose entries are numpydoc
    citations (``.. [key] ...``) beginning with the bibliography's full form of the entry."""
    entries = bibliography()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.Module)):
            continue
        doc = ast.get_docstring(node) or ""
        body = doc.split("References\n----------")[0]
        cited = {
            words[0]
            for match in re.finditer(r"\[(?:[PSDAC], )?([^\]]+)\]", body)
            for part in re.split(r"[;,]", match.group(1))
            if (words := part.split()) and words[0] in entries
        }
        listed = set(re.findall(r"^\s*\.\. \[([^\]]+)\]", doc, flags=re.MULTILINE))
        where = f"{path.name}:{getattr(node, 'name', 'module')}"
        assert cited <= listed, f"{where} cites {sorted(cited - listed)} without References"
        if "References\n----------" not in doc:
            continue
        section = doc.split("References\n----------", 1)[1]
        section = re.split(r"\n\S[^\n]*\n-{3,}", section)[0]  # up to the next section
        cited = re.split(r"^\.\. ", section.strip(), flags=re.MULTILINE)
        cited = [c for c in cited if c.strip()]
        assert cited, f"{path.name}:{getattr(node, 'name', 'module')}: empty References"
        for item in cited:
            match = re.match(r"\[([^\]]+)\]\s*(.*)", _squash(item))
            assert match, f"{path.name}:{node.name}: not a numpydoc entry: {item[:60]!r}"
            key, text = match.groups()
            assert key in entries, f"{path.name}:{node.name}: [{key}] not in the bibliography"
            assert text.startswith(_squash(full_citation(entries[key]))), (
                f"{path.name}:{node.name}: [{key}] should begin "
                f"{full_citation(entries[key])!r}, not {text[:80]!r}"
            )

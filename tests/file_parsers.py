"""Strict parsers of the file formats powermodel writes for grid tools, for tests:
``from file_parsers import parse_dyr, parse_aux``. Each follows the syntax its source documents
(PSS/E dynamic data as RATLLE's Load_FO_Model.dyr shows it [P, ratlle]; PowerWorld's auxiliary
DATA sections [P, powerworld_aux]) and fails on anything else."""

from __future__ import annotations

import re
import shlex

NUMBER = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")


def parse_dyr(text: str) -> list[dict]:
    """PSS/E dynamic data: records of whitespace- or comma-separated fields, bus number first,
    the model name quoted, each closed by ``/`` (text after it on the line ignored); ``//`` lines
    between records are comments, as in RATLLE's Load_FO_Model.dyr."""
    records, pending = [], []
    for line in text.splitlines():
        if line.lstrip().startswith("//") or not line.strip():
            assert not pending, "a comment inside an open record"
            continue
        body, closed, _ = line.partition("/")
        pending += shlex.split(body.replace(",", " "), posix=True)
        if closed:
            assert NUMBER.match(pending[0]) and int(pending[0]) > 0, pending[0]
            records.append({"bus": int(pending[0]), "model": pending[1], "rest": pending[2:]})
            pending = []
    assert not pending, "a record not closed by '/'"
    return records


def parse_aux(text: str) -> list[dict]:
    """PowerWorld auxiliary DATA sections: ``DATA (type, [fields])``, ``{`` , one object per line
    of values (strings in double quotes), ``}`` alone on its line; ``//`` comments."""
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("//")]
    objects, i = [], 0
    while i < len(lines):
        head = re.fullmatch(r"DATA \((\w+), \[([\w, ]+)\]\)", lines[i].strip())
        assert head, lines[i]
        names = [n.strip() for n in head.group(2).split(",")]
        assert lines[i + 1].strip() == "{"
        i += 2
        while lines[i].strip() != "}":
            values = shlex.split(lines[i], posix=True)
            assert len(values) == len(names), (names, values)
            objects.append({"type": head.group(1), **dict(zip(names, values, strict=True))})
            i += 1
        i += 1
    return objects

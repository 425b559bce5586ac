"""The worked examples in examples/: each runs, asserts its own headline numbers against their
sources, returns them and writes its figures as plotly HTML fragments."""

from __future__ import annotations

import importlib.util
import math
import pathlib

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"
FIGURES = {
    "llama3_reference": ("waveform", "day", "diurnal"),
    "gb200_ercot_battery": ("failure", "costs"),
    "tampa_vs_chicago": ("weather", "throughput"),
    "first_run": ("power",),
}


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_example_is_tested():
    assert {p.stem for p in EXAMPLES.glob("*.py")} == set(FIGURES)


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_example_runs_and_writes_its_figures(name, tmp_path):
    numbers = _load(name).main(tmp_path)
    assert numbers and all(isinstance(v, float) and math.isfinite(v) for v in numbers.values())
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == sorted(f"{name}-{figure}.html" for figure in FIGURES[name])
    for path in tmp_path.iterdir():
        html = path.read_text(encoding="utf-8")
        assert 'class="plotly-graph-div"' in html and "<html" not in html

"""The package's layering (CONTRIBUTING.md: pure models -> scenario -> simulate ->
analysis/export -> CLI/app) holds for every import: no module imports one of a layer above it,
nor the package face (``powermodel/__init__.py``, which offers them all). Issue 11, repair 3."""

from __future__ import annotations

import ast
from pathlib import Path

from powermodel.engine import STAGES

PACKAGE = Path(__file__).parents[1] / "powermodel"
# lowest first; a module may import its own layer and those below
LAYERS = (
    (
        "powermodel.errors",
        "powermodel.durations",
        "powermodel._version",
        "powermodel.allocator",
        "powermodel.output",
        "powermodel._csvtext",  # the CSV writer's compiled text (numpy and numba alone)
        "powermodel.deadline",
    ),
    ("powermodel.models",),
    # the power-flow networks read files as the readers do (their shipped data): numbers, no
    # xarray, below the scenario and the engine that a co-simulation drives them from
    ("powermodel.iotools", "powermodel.variables", "powermodel.network"),
    ("powermodel.scenario", "powermodel.reference"),
    ("powermodel.engine",),  # its stages in order: ENGINE below
    ("powermodel.simulate",),  # the driver: the engine's stages in order
    (
        "powermodel.piecewise",
        "powermodel.analysis",
        "powermodel.rules",
        "powermodel.export",
        "powermodel.stream",
        "powermodel.sensitivity",
        "powermodel.sizing",
        "powermodel.design",
        "powermodel.calibration",
        "powermodel.fit",
        "powermodel.fit_report",
        "powermodel.reproduce",
        "powermodel.oscillation",
        "powermodel.dynamic_model",
        "powermodel.ride_through",
        "powermodel.template",
    ),
    # the co-simulation steps the engine's runs and a network together
    ("powermodel.cosim",),
    ("powermodel.sweep",),  # maps runs of the layer below over dask
    ("powermodel.cli", "powermodel.webapp"),
)
FACE = len(LAYERS)  # the package face: above every module


def _layer(module: str) -> int:
    if module == "powermodel":
        return FACE
    for i, prefixes in enumerate(LAYERS):
        if any(module == p or module.startswith(f"{p}.") for p in prefixes):
            return i
    raise AssertionError(f"{module} has no layer: add it to LAYERS")


def _name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(module: str) -> bool:
    """Whether a dotted name is a module or package of the source tree."""
    path = PACKAGE.parent.joinpath(*module.split("."))
    return path.with_suffix(".py").exists() or path.is_dir()


def _imported(node: ast.AST) -> list[str]:
    """The powermodel modules an import statement reaches: a name imported from a package is
    that package (its face), unless the name is a module of it (``from powermodel.engine import
    facility`` reaches ``powermodel.engine.facility``)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.split(".")[0] == "powermodel"]
    if not isinstance(node, ast.ImportFrom) or not (node.module or "").startswith("powermodel"):
        return []
    return [
        f"{node.module}.{a.name}" if _is_module(f"{node.module}.{a.name}") else node.module
        for a in node.names
    ]


def test_no_import_runs_up_the_layers():
    upward = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _name(path)
        if module == "powermodel":
            continue  # the face imports everything it offers
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            # the checks here read absolute names: a relative import would slip past them
            if isinstance(node, ast.ImportFrom) and node.level:
                upward.append(f"{module} imports relatively (from {'.' * node.level}…)")
            for target in _imported(node):
                if _layer(target) > _layer(module):
                    upward.append(f"{module} imports {target}")
    assert upward == []


def test_the_layer_check_sees_an_upward_import():
    # the check cannot pass by seeing nothing: a model importing the scenario is caught
    node = ast.parse("from powermodel.scenario import Scenario").body[0]
    (target,) = _imported(node)
    assert _layer(target) > _layer("powermodel.models.thermal")
    assert _imported(ast.parse("from powermodel import metrics").body[0]) == ["powermodel"]


# The package's public surface: the face (``powermodel.__all__``) for users, and these modules'
# ``__all__`` for the package's own front ends. The dashboard calls nothing else (the fit's
# modules are the analysis layer's: its compare view fits an uploaded trace through them).
PUBLIC = (
    "powermodel",
    "powermodel.allocator",
    "powermodel.analysis",
    "powermodel.deadline",
    "powermodel.design",
    "powermodel.errors",
    "powermodel.export",
    "powermodel.fit",
    "powermodel.fit_report",
    "powermodel.iotools",
    "powermodel.iotools.netcdf",
    "powermodel.output",  # the server's signals (powermodel.webapp.serve, once app.py's)
    "powermodel.reference",  # the keys' units, for the sweep's axes
    "powermodel.ride_through",
    "powermodel.rules",
    "powermodel.scenario",
    "powermodel.simulate",
    "powermodel.sizing",
    "powermodel.sweep",
)


def _reached(tree: ast.AST) -> list[tuple[str, str]]:
    """(module, name) of every powermodel name a file imports or reads off an imported
    powermodel module, outside the dashboard's own package."""
    modules, out = {}, []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, "") for a in node.names if a.name.startswith("powermodel")]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("powermodel"):
            if node.module.startswith("powermodel.webapp"):
                continue
            for a in node.names:
                if f"{node.module}.{a.name}" in PUBLIC:
                    modules[a.asname or a.name] = f"{node.module}.{a.name}"
                else:
                    out.append((node.module, a.name))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id in modules:
                out.append((modules[node.value.id], node.attr))
    return out


def _outside_the_public_surface(reached: list[tuple[str, str]]) -> list[str]:
    import importlib

    return [
        f"{module}.{name}" if name else module
        for module, name in reached
        if module not in PUBLIC or name not in importlib.import_module(module).__all__
    ]


def test_the_dashboard_calls_only_the_public_api():
    found = []
    for path in sorted((PACKAGE / "webapp").glob("*.py")):
        reached = _reached(ast.parse(path.read_text(encoding="utf-8")))
        found += [f"{path.name}: {n}" for n in _outside_the_public_surface(reached)]
    assert found == []


def test_the_public_check_sees_an_internal_name_and_every_public_name_exists():
    import importlib

    code = (
        "from powermodel.models import signal\nfrom powermodel import rules\n"
        "from powermodel.sizing import STORAGE_HOURS, _lever\nrules.check_each\nrules._cached\n"
        "import powermodel.models.events\nfrom powermodel import metrics, _version\n"
    )
    assert sorted(_outside_the_public_surface(_reached(ast.parse(code)))) == [
        "powermodel._version",
        "powermodel.models.events",
        "powermodel.models.signal",
        "powermodel.rules._cached",
        "powermodel.sizing._lever",
    ]
    for module in PUBLIC:
        exported = importlib.import_module(module)
        assert all(hasattr(exported, name) for name in exported.__all__), module


def test_the_scenario_fitting_arithmetic_is_pure():
    # what the scenario derives (the job a hall holds, its layout's step) is computed by pure
    # functions: the fitting module reads numbers and layouts, not the scenario's tables
    path = PACKAGE / "scenario" / "fitting.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    reached = [target for node in ast.walk(tree) for target in _imported(node)]
    assert reached and not [t for t in reached if _layer(t) >= _layer("powermodel.scenario")]


# The engine's stages in import order, as the package declares them (its face reads no stage):
# each module imports only those before it, so that a reader can follow the model stage by stage.
ENGINE = STAGES


def _stages_imported(source: str) -> set[str]:
    """The engine's modules a file imports (``from powermodel.engine import facility`` too)."""
    return {
        target.split(".")[2]
        for node in ast.walk(ast.parse(source))
        for target in _imported(node)
        if target.startswith("powermodel.engine.")
    }


def _out_of_order(sources: dict[str, str]) -> list[str]:
    """``stage imports later`` for each import of a stage not before it in :data:`ENGINE`."""
    return [
        f"{stage} imports {other}"
        for stage, source in sources.items()
        for other in sorted(_stages_imported(source))
        if ENGINE.index(other) >= ENGINE.index(stage)
    ]


def test_the_engine_imports_its_stages_in_order():
    engine = PACKAGE / "engine"
    stages = {p.stem: p.read_text(encoding="utf-8") for p in engine.glob("*.py")}
    face = stages.pop("__init__")
    assert sorted(stages) == sorted(ENGINE)  # every stage is placed, none is missing
    assert _stages_imported(face) == set()  # the face imports no stage: importing one is cheap
    assert _out_of_order(stages) == []


def test_the_stage_order_check_sees_a_later_stage():
    sources = {
        "derive": "from powermodel.engine.run import Run\n",
        "timeline": "from powermodel.engine import timeline, waveform\n",
        "run": "from powermodel.engine import derive\nfrom powermodel.engine.flex import x\n",
    }
    assert _out_of_order(sources) == [
        "derive imports run",
        "timeline imports timeline",
        "timeline imports waveform",
    ]

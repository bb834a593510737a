"""The import structure of the installed package: one direction of arrows, no circle.

The layers are the picture in docs/architecture.md, bottom first. A module may
import from its own layer or any layer below, at the top of the file or inside a
function (a lazy import is an arrow too); the graph has no cycle. Every module
of the installed package, the built-in passes (``car_verify.analyses``) included,
must be placed in a layer, so a new module is placed on purpose.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import networkx as nx
import pytest

LAYERS: list[tuple[str, set[str]]] = [
    ("base: values and records", {"base", "_version"}),
    ("ir: the Agent IR and its reader", {"ir"}),
    ("semantics: the profiles, the DAG, the walk", {"semantics"}),
    ("rules: policies, trace rules (and their grammar), the tool registry", {"rules", "grammars"}),
    ("plan: what one plan does", {"plan"}),
    ("passes", {"passes", "analyses"}),
    ("api", {"api"}),
    ("deciders", {"deciders"}),
    ("executor", {"executor"}),
    ("reporters", {"reporters"}),
    ("corpora", {"importers", "corpora"}),
    ("the command line and the package's faces", {
        "cli", "integrations", "hook", "runtime", "testing", "pytest_plugin", "_launch", "__main__",
        "__init__",
    }),
]  # fmt: skip
"""Bottom first, one folder each (``grammars``, ``analyses`` and ``importers`` share
a layer with another folder); the package root holds only the faces a user imports
or runs by its path."""

INSIDE: dict[str, list[set[str]]] = {
    "semantics": [
        {"semantics.value_domain", "semantics.solving"},
        {"semantics._reach"},
        {"semantics.dag"},
        {"semantics", "semantics.profiles", "semantics.base", "semantics.strict", "semantics.car"},
        {"semantics.walk", "semantics.symbolic"},
    ],
    "passes": [{"passes"}, {"passes.car", "analyses.*"}, {"passes.registry"}, {"passes.fused"}],
}
"""The order inside a layer where it matters: model -> DAG -> semantics -> walk; the
pass framework, the passes, the registry that finds them. Each module is named
(``name.*``: a package and everything in it), so a new one is placed on purpose."""
LAYER = {name: rank for rank, (_, names) in enumerate(LAYERS) for name in names}


def _package_files() -> dict[str, Path]:
    """``car_verify.x.y`` -> its file, for every module of the installed package."""
    files: dict[str, Path] = {}
    for package in ("car_verify", "car_verify.analyses", "car_verify.grammars"):
        spec = importlib.util.find_spec(package)
        assert spec is not None and spec.submodule_search_locations, package
        for folder in spec.submodule_search_locations:
            for path in Path(folder).rglob("*.py"):
                parts = list(path.relative_to(folder).with_suffix("").parts)
                if package == "car_verify" and parts[0] in ("analyses", "grammars"):
                    continue  # mapped from the top-level folders, found above
                if parts[-1] == "__init__":
                    parts.pop()
                files[".".join([package, *parts])] = path
    return files


def _imports(module: str, path: Path, files: dict[str, Path]) -> set[str]:
    """The package modules ``module`` imports, lazily or not."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = module if is_package else module.rpartition(".")[0]
                for _ in range(node.level - 1):
                    base = base.rpartition(".")[0]
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            names = [f"{target}.{a.name}" for a in node.names]
            found.update(n if n in files else target for n in names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif (dynamic := _import_module_call(node, module, is_package)) is not None:
            found.add(dynamic)  # importlib.import_module("...") is an arrow too
    resolved = set()
    for name in found:
        while name not in files and "." in name:
            name = name.rpartition(".")[0]
        if name in files and name != module:
            resolved.add(name)
    return resolved


def _import_module_call(node: ast.AST, module: str, is_package: bool) -> str | None:
    """The module an ``importlib.import_module(...)`` call names, when its name is
    a constant (relative names resolved against the ``package`` argument, which is
    ``__name__`` or ``__package__`` here); None for any other node."""
    if not (isinstance(node, ast.Call) and node.args):
        return None
    func = node.func
    named = (isinstance(func, ast.Attribute) and func.attr == "import_module") or (
        isinstance(func, ast.Name) and func.id == "import_module"
    )
    first = node.args[0]
    if not named or not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
        return None
    name: str = first.value
    if not name.startswith("."):
        return name
    base = module if is_package else module.rpartition(".")[0]
    dots = len(name) - len(name.lstrip("."))
    for _ in range(dots - 1):
        base = base.rpartition(".")[0]
    rest = name.lstrip(".")
    return f"{base}.{rest}" if rest else base


def test_importlib_calls_are_read_as_arrows() -> None:
    tree = ast.parse('importlib.import_module("car_verify.reporters.html")')
    call = next(n for n in ast.walk(tree) if isinstance(n, ast.Call))
    assert (
        _import_module_call(call, "car_verify.base.display", False) == "car_verify.reporters.html"
    )
    tree = ast.parse('import_module(".semantics.walk", __name__)')
    call = next(n for n in ast.walk(tree) if isinstance(n, ast.Call))
    assert _import_module_call(call, "car_verify", True) == "car_verify.semantics.walk"


def _top(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _layer_of(module: str) -> int:
    name = _top(module)
    assert name in LAYER, f"{module} is in no layer: place it in LAYERS and docs/architecture.md"
    return LAYER[name]


INSIDE_OF = {top: groups for key, groups in INSIDE.items() for top in LAYERS[LAYER[key]][1]}


def _rank_inside(module: str) -> int | None:
    """The module's place inside its layer (None where the layer has no inner order)."""
    groups = INSIDE_OF.get(_top(module))
    if groups is None:
        return None
    relative = module.partition(".")[2] or "__init__"
    for rank, group in enumerate(groups):
        for name in group:
            whole = name.endswith(".*") and (relative + ".").startswith(name[:-1])
            if relative == name or whole:
                return rank
    raise AssertionError(f"{module} has no place inside its layer: add it to INSIDE")


def _graph() -> nx.DiGraph:
    files = _package_files()
    graph = nx.DiGraph()
    graph.add_nodes_from(files)
    for module, path in files.items():
        for target in _imports(module, path, files):
            graph.add_edge(module, target)
    return graph


def test_the_installed_package_has_no_import_cycle() -> None:
    graph = _graph()
    assert "car_verify.analyses.strips" in graph and "car_verify.reporters.sarif" in graph
    cycles = list(nx.simple_cycles(graph, length_bound=len(graph)))
    assert not cycles, f"import cycles: {cycles[:3]}"


def test_every_import_points_down_the_layers() -> None:
    upward = [
        f"{a} ({LAYERS[_layer_of(a)][0]}) imports {b} ({LAYERS[_layer_of(b)][0]})"
        for a, b in _graph().edges
        if _layer_of(a) < _layer_of(b)
    ]
    assert not upward, "\n".join(upward)


def test_inside_a_layer_imports_point_down_its_order() -> None:
    upward = []
    for a, b in _graph().edges:
        if _layer_of(a) != _layer_of(b):
            continue
        inner_a, inner_b = _rank_inside(a), _rank_inside(b)
        if inner_a is not None and inner_b is not None and inner_a < inner_b:
            upward.append(f"{a} imports {b}")
    assert not upward, "\n".join(upward)


FACES = {
    "__init__", "__main__", "_launch", "_version",
    "api", "executor", "hook", "runtime", "testing", "pytest_plugin",
}  # fmt: skip
"""The modules at the package's root: what a user imports or runs by its path."""


def test_the_folders_are_the_layers() -> None:
    """Every module but the faces lives in a folder, and a folder is in one layer."""
    files = _package_files()
    at_root = {
        _top(module) for module, path in files.items() if path.parent.name == "car_verify"
    } - {_top(m) for m, p in files.items() if p.name == "__init__.py" and m != "car_verify"}
    assert at_root == FACES
    folders = {_top(m) for m in files} - FACES
    assert all(sum(name in names for _, names in LAYERS) == 1 for name in folders)


def test_no_module_mounts_modules_or_reads_files_by_path_beside_the_package() -> None:
    """The built-in passes and the grammar are installed by packaging configuration."""
    for module, path in _package_files().items():
        text = path.read_text(encoding="utf-8")
        for trick in ('sys.modules["car_verify', '/ "analyses"', '/ "grammars"', "parent.parent /"):
            assert trick not in text, f"{module} uses {trick!r}"


def test_the_import_graph_sees_a_lazy_import(tmp_path: Path) -> None:
    """The check can fail: an import inside a function is an arrow."""
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from ..cli import main\n")
    files = {"car_verify.ir.model": module, "car_verify.cli": module}
    assert _imports("car_verify.ir.model", module, files) == {"car_verify.cli"}


def test_each_output_format_is_written_in_one_reporters_module() -> None:
    """One findings stack: the SARIF log and the GitHub annotations are made in one
    place each, which verify, lint and policy check all call."""
    marks = {
        '"version": "2.1.0"': "car_verify.reporters.sarif",
        '"notice"': "car_verify.reporters.github",
    }
    for mark, home in marks.items():
        writers = [
            m for m, path in _package_files().items() if mark in path.read_text(encoding="utf-8")
        ]
        assert writers == [home], (mark, writers)


def test_one_code_table() -> None:
    """Every finding code, lint's own and the executor's blocking ones, is in codes.py."""
    from car_verify.base.codes import BLOCKING, CODES
    from car_verify.executor import DEFAULT_BLOCKING

    assert {"invalid-file", "not-a-proposal"} <= set(CODES)
    assert set(BLOCKING) <= set(CODES)
    assert set(DEFAULT_BLOCKING - BLOCKING) == {"budget-exceeded"}
    assert all(CODES[name].blocks for name in BLOCKING)


def test_the_reachability_engine_is_private_to_the_dag() -> None:
    """Callers ask the Dag; only dag.py imports the engine behind it."""
    graph = _graph()
    assert set(graph.predecessors("car_verify.semantics._reach")) == {"car_verify.semantics.dag"}


def test_the_package_names_agree_in_its_three_lists() -> None:
    """``car_verify/__init__.py`` names its public API three times, each for a
    reader that cannot use the others: the ``TYPE_CHECKING`` imports (for type
    checkers), ``_LAZY`` (for the first-use loader) and the literal ``__all__``
    (a derived one hides every name from ``mypy --strict`` users). They agree."""
    import car_verify

    path = Path(car_verify.__file__)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typed: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom) and imp.module is not None
                typed.update((alias.name, imp.module) for alias in imp.names)
    lazy = vars(car_verify)["_LAZY"]
    assert typed == lazy
    assert sorted(car_verify.__all__) == sorted(["__version__", *lazy])
    for name, module in lazy.items():
        loaded = importlib.import_module(f"car_verify.{module}")
        assert getattr(car_verify, name) is getattr(loaded, name), name


def test_every_subpackage_of_the_source_tree_is_installed() -> None:
    """A folder of car_verify/ with an ``__init__.py`` that pyproject.toml does not
    list is left out of the wheel: the command line split into car_verify/cli/
    would import in the checkout and fail in a regular install."""
    import tomllib

    root = Path(__file__).resolve().parents[1]
    listed = set(
        tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    for init in (root / "car_verify").rglob("__init__.py"):
        name = ".".join(init.parent.relative_to(root).parts)
        assert name in listed, f"{name} is not in [tool.setuptools] packages"


def test_the_checkout_links_the_folders_the_install_maps() -> None:
    """pyproject.toml's package-dir installs the top-level analyses/ and grammars/ as
    car_verify.analyses and car_verify.grammars; in the checkout car_verify/analyses
    and car_verify/grammars are relative links to them, so that mypy --strict on
    the source tree (``mypy`` in the checkout: [tool.mypy] files, run by .ci/run),
    ruff and a ``python`` started in the checkout see the package the install has."""
    import os
    import tomllib

    root = Path(__file__).resolve().parents[1]
    config = tomllib.loads((root / "pyproject.toml").read_text())
    mapped = dict(config["tool"]["setuptools"]["package-dir"])
    assert mapped.pop("car_verify") == "car_verify"
    assert mapped == {"car_verify.analyses": "analyses", "car_verify.grammars": "grammars"}
    for name, folder in mapped.items():
        link = root.joinpath(*name.split("."))
        assert link.is_symlink(), f"{link} is not a link to {folder}/"
        assert os.readlink(link) == f"../{folder}"  # relative: a clone anywhere works
        assert (link / "__init__.py").samefile(root / folder / "__init__.py")
    assert config["tool"]["mypy"]["files"] == ["car_verify"]


def test_a_module_new_to_an_ordered_layer_must_be_placed() -> None:
    with pytest.raises(AssertionError, match="no place inside its layer"):
        _rank_inside("car_verify.semantics.newcomer")
    assert _rank_inside("car_verify.analyses.strips") == _rank_inside("car_verify.analyses") == 1

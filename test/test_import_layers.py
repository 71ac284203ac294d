"""The package never reaches up into the project's top-level files, keeps the layers written in
pyproject.toml (`[tool.importlinter]`), has no import cycle and no empty shells.

`config.py`, `main.py` and the other top-level files build on `citerag`; if `citerag` imported
them, a LlamaIndex app importing the package would pull in the CLI and the user's config. Inside
the package, imports follow the data flow: a layer imports only from the layers below it.
"""

from __future__ import annotations

import ast
import json
import pkgutil
import subprocess
import sys
import tomllib
from pathlib import Path

import grimp
import pytest
from helpers import PROJECT_DIR

import citerag

PACKAGE_DIR = PROJECT_DIR / "citerag"
TOP_LEVEL = frozenset(
    {
        "config",
        "queries",
        "rag_factory",
        "mineru_wrapper",
        "extraction_schemas",
        "main",
        "devservers",
    }
)


def package_modules() -> list[Path]:
    return sorted(PACKAGE_DIR.rglob("*.py"))


def imported_top_names(path: Path) -> list[tuple[int, str]]:
    """(line, top-level module name) of every absolute import in the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name.split(".")[0]) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module.split(".")[0]))
    return found


def test_the_scan_sees_the_whole_package() -> None:
    names = {p.relative_to(PACKAGE_DIR).as_posix() for p in package_modules()}
    assert {"engine.py", "query/query_factory.py", "retrieve/hybrid.py", "nodes.py"} <= names


def top_level_imports() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in package_modules():
        for line, name in imported_top_names(path):
            if name in TOP_LEVEL:
                where = path.relative_to(PROJECT_DIR).as_posix()
                found.setdefault(where, []).append(f"{where}:{line} imports {name}")
    return found


def test_no_package_module_imports_a_top_level_file() -> None:
    offending = [line for lines in top_level_imports().values() for line in lines]
    assert not offending, "citerag must not import the top-level files:\n" + "\n".join(offending)


def test_the_scan_catches_a_top_level_import(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("import os\nfrom config import X\nimport main.sub as m\nfrom . import y\n")
    assert [name for _, name in imported_top_names(sample) if name in TOP_LEVEL] == [
        "config",
        "main",
    ]


@pytest.mark.slow  # a fresh interpreter importing torch, pymilvus and llama_index: seconds
def test_importing_every_package_module_loads_no_top_level_file() -> None:
    script = f"""
import importlib, json, pkgutil, sys
import citerag
names = [m.name for m in pkgutil.walk_packages(citerag.__path__, "citerag.")]
for name in names:
    importlib.import_module(name)
loaded = sorted(set(sys.modules) & set({sorted(TOP_LEVEL)!r}))
print(json.dumps({{"imported": names, "loaded": loaded}}))
"""
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=PROJECT_DIR,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert "citerag.engine" in report["imported"]
    assert "citerag.query.query_factory" in report["imported"]
    assert report["loaded"] == []


def sub_packages() -> list[str]:
    return [m.name for m in pkgutil.walk_packages(citerag.__path__, "citerag.") if m.ispkg]


def has_code(init: Path) -> bool:
    """True when the __init__.py holds more than a docstring (or nothing)."""
    body = ast.parse(init.read_text(encoding="utf-8")).body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    return bool(body)


def package_params() -> list[object]:
    return list(sub_packages())


@pytest.mark.parametrize("package", package_params())
def test_no_sub_package_is_an_empty_placeholder(package: str) -> None:
    folder = PACKAGE_DIR.joinpath(*package.split(".")[1:])
    others = [p for p in folder.iterdir() if p.suffix == ".py" and p.name != "__init__.py"]
    subfolders = [p for p in folder.iterdir() if (p / "__init__.py").is_file()]
    assert has_code(folder / "__init__.py") or others or subfolders, (
        f"{package} is an empty placeholder: remove it or give it code"
    )


# `lint-imports` run by this interpreter, from the folder whose package and pyproject it checks.
LINT_IMPORTS = "from importlinter.cli import lint_imports_command; lint_imports_command()"


def lint_imports(folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", LINT_IMPORTS, "--no-cache"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_package_keeps_every_import_contract() -> None:
    done = lint_imports(PROJECT_DIR)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout


def test_the_layer_contract_must_name_every_sub_package() -> None:
    config = tomllib.loads((PROJECT_DIR / "pyproject.toml").read_text(encoding="utf-8"))
    layers = config["tool"]["importlinter"]["contracts"][0]
    assert layers["type"] == "layers" and layers["containers"] == ["citerag"]
    assert layers["exhaustive"] is True  # a new sub-package fails until it is given a layer


def write_package(root: Path, name: str, modules: dict[str, str]) -> None:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text("")
    for module, text in modules.items():
        (folder / f"{module}.py").write_text(text)


def test_the_linter_catches_an_upward_import(tmp_path: Path) -> None:
    write_package(
        tmp_path, "layered", {"high": "", "low": "def f():\n    from layered import high\n"}
    )
    (tmp_path / "pyproject.toml").write_text(
        '[tool.importlinter]\nroot_package = "layered"\n\n[[tool.importlinter.contracts]]\n'
        'name = "high above low"\ntype = "layers"\nlayers = ["layered.high", "layered.low"]\n'
    )
    done = lint_imports(tmp_path)
    assert done.returncode != 0 and "BROKEN" in done.stdout


def import_cycles(package: str) -> list[list[str]]:
    """Groups of modules that import each other in a circle (imports inside functions and under
    TYPE_CHECKING count: grimp reads every import statement)."""
    graph = grimp.build_graph(package, cache_dir=None)
    imports = {m: graph.find_modules_directly_imported_by(m) for m in graph.modules}
    reaches = {m: _reachable(m, imports) for m in imports}
    cycles = {
        frozenset(n for n in reaches[m] if m in reaches[n]) for m in imports if m in reaches[m]
    }
    return sorted(sorted(cycle) for cycle in cycles)


def _reachable(start: str, imports: dict[str, set[str]]) -> set[str]:
    seen: set[str] = set()
    todo = list(imports[start])
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo.extend(imports.get(module, ()))
    return seen


def test_no_import_cycle_in_the_package() -> None:
    assert import_cycles("citerag") == []


def test_the_cycle_scan_sees_a_cycle_through_a_function_level_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_package(
        tmp_path, "circle", {"a": "from circle import b\n", "b": "def f():\n    import circle.a\n"}
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert import_cycles("circle") == [["circle.a", "circle.b"]]

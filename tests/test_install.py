"""The repository installs as a package (pyproject.toml [project]): every first-party package that
what it ships imports, or names as a module to import (a profile's search provider), is shipped.
Read statically: nothing is installed here (tests/full/test_install.py installs it)."""
from __future__ import annotations

import ast
import tomllib
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def first_party_names(root: Path) -> set[str]:
    """The repository's top-level packages and modules."""
    packages = {p.parent.name for p in root.glob("*/__init__.py")}
    return packages | {p.stem for p in root.glob("*.py")}


def shipped(project: dict, root: Path) -> tuple[set[str], list[Path]]:
    """The top-level names pyproject ships, and the .py files under them."""
    setuptools = project["tool"]["setuptools"]
    modules = set(setuptools.get("py-modules", []))
    packages = {name for name in setuptools["packages"]["find"]["include"] if "*" not in name and "." not in name}
    files = [root / f"{m}.py" for m in modules] + [p for pkg in packages for p in (root / pkg).rglob("*.py")]
    return modules | packages, files


def imported_first_party(files: list[Path], first_party: set[str], root: Path) -> dict[str, str]:
    """Each first-party top-level name the files import -> one file that does."""
    found = {}
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module]
            for name in names:
                top = name.partition(".")[0]
                if top in first_party:
                    found.setdefault(top, str(path.relative_to(root)))
    return found


def unshipped_imports(root: Path) -> dict[str, str]:
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    names, files = shipped(project, root)
    return {name: where for name, where in imported_first_party(files, first_party_names(root), root).items()
            if name not in names}


def test_pyproject_ships_every_first_party_package_its_modules_import():
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["name"] == "cruise-agent"
    assert project["project"]["scripts"]["crag-mm-eval"] == "local_evaluation:main"
    assert unshipped_imports(REPO_ROOT) == {}
    names, _ = shipped(project, REPO_ROOT)
    # a module a profile names by string is imported at run time too
    from agents.profiles import PROFILES

    providers = {p.search.provider.partition(":")[0].partition(".")[0] for p in PROFILES.values() if p.search.provider}
    assert providers <= names


def test_an_import_of_a_package_pyproject_leaves_out_is_found(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.setuptools]\npy-modules = ["main_entry"]\n'
                                             '[tool.setuptools.packages.find]\ninclude = ["core", "core.*"]\n')
    for package in ("core", "helpers"):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "main_entry.py").write_text("import core\nfrom helpers.x import y\nimport json\n")
    assert unshipped_imports(tmp_path) == {"helpers": "main_entry.py"}

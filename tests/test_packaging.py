"""What a packager or a software centre gets: the sdist, the wheel, the floors, the desktop metadata.

The sdist and the wheel are built with the build backend itself (setuptools, from the test
extra) from a copy of the tracked files, as from a fresh clone; the desktop files are checked
with the freedesktop tools where they are installed (skipped, saying so, where they are not).
"""

from __future__ import annotations

import email
import importlib.machinery
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
import xml.etree.ElementTree as ET
import zipfile
from configparser import ConfigParser
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGING = ROOT / "packaging"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PROJECT = PYPROJECT["project"]
APP_ID = "org.priveletstudio.studio"
METAINFO = PACKAGING / f"{APP_ID}.metainfo.xml"
DESKTOP = PACKAGING / f"{APP_ID}.desktop"
MIME = PACKAGING / f"{APP_ID}.mime.xml"
PROJECT_MIME_TYPE = "application/x-privelet-project"
#: Tracked files a source distribution leaves out: the CI harness and git's own files.
NOT_IN_SDIST = (".ci/", ".gitignore")
#: The freedesktop main categories (Desktop Menu Specification, "Main Categories").
MAIN_CATEGORIES = {"AudioVideo", "Audio", "Video", "Development", "Education", "Game", "Graphics", "Network",
                   "Office", "Science", "Settings", "System", "Utility"}


def tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} is not installed (Debian: apt-get install desktop-file-utils appstream shared-mime-info)")
    return path


def tracked_files() -> list[str]:
    try:
        listing = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=60)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("needs a git checkout: the sdist is compared with the tracked files (an unpacked sdist has none)")
    return [name for name in listing.stdout.decode().split("\0") if name]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The sdist built from a copy of the tracked files, and the wheel built from that sdist (as pip does)."""
    files = tracked_files()
    work = tmp_path_factory.mktemp("build")
    source = work / "source"
    for name in files:
        if (ROOT / name).is_file():  # a file deleted but not yet staged is not there to copy
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    backend = "import sys; from setuptools import build_meta as b; print(getattr(b, sys.argv[1])(sys.argv[2]))"
    sdist_name = subprocess.run([sys.executable, "-c", backend, "build_sdist", str(work / "dist")], cwd=source,
                                capture_output=True, text=True, check=True, timeout=300).stdout.split()[-1]
    sdist = work / "dist" / sdist_name
    with tarfile.open(sdist) as archive:
        archive.extractall(work / "unpacked", filter="data")
        members = [m.name for m in archive.getmembers() if m.isfile()]
    unpacked = next((work / "unpacked").iterdir())
    wheel_name = subprocess.run([sys.executable, "-c", backend, "build_wheel", str(work / "dist")], cwd=unpacked,
                                capture_output=True, text=True, check=True, timeout=300).stdout.split()[-1]
    return {"files": files, "sdist": sdist, "members": members, "wheel": work / "dist" / wheel_name}


def test_the_sdist_holds_every_tracked_file_but_the_ci_harness(built):
    top = built["sdist"].name.removesuffix(".tar.gz")
    inside = {name.removeprefix(top + "/") for name in built["members"]}
    wanted = {name for name in built["files"] if not name.startswith(NOT_IN_SDIST) and (ROOT / name).is_file()}
    assert wanted - inside == set()  # tests (conftest.py, every folder), packaging/, resources, docs
    generated = {name for name in inside - wanted if not name.startswith("privelet_gui.egg-info/")}
    assert generated == {"PKG-INFO", "setup.cfg"}  # nothing else: no caches, no build output
    assert {"tests/conftest.py", "tests/gui/conftest.py", "packaging/check-floors", "CHANGELOG.md"} <= inside


def test_the_wheel_declares_every_licence_and_ships_their_texts(built):
    with zipfile.ZipFile(built["wheel"]) as wheel:
        names = wheel.namelist()
        info = next(n for n in names if n.endswith(".dist-info/METADATA"))
        metadata = email.message_from_bytes(wheel.read(info))
    assert metadata["License-Expression"] == "MIT AND CC-BY-4.0 AND Apache-2.0"
    licences = {Path(n).name for n in names if ".dist-info/licenses/" in n}
    assert {"LICENSE.txt", "LICENSE.CC-BY-4.0.txt", "LICENSE.ARX.txt", "LICENSES.md"} <= licences
    # the files each licence covers are in the wheel
    assert "privelet_gui/resources/adult/adult.csv.gz" in names  # CC BY 4.0
    assert "privelet_gui/resources/adult/adult_hierarchy_occupation.csv" in names  # Apache-2.0
    assert not any(n.startswith("tests/") for n in names)
    urls = dict(entry.split(", ", 1) for entry in metadata.get_all("Project-URL"))
    assert urls == PROJECT["urls"]
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    with zipfile.ZipFile(built["wheel"]) as wheel:
        scripts = wheel.read(entry_points).decode()
    assert "privelet = privelet_gui.cli:main" in scripts and "privelet-gui = privelet_gui.gui.app:main" in scripts


def _floors_script() -> ModuleType:
    loader = importlib.machinery.SourceFileLoader("check_floors", str(PACKAGING / "check-floors"))
    spec = importlib.util.spec_from_loader("check_floors", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def test_every_dependency_has_a_tested_floor():
    """check-floors pins each ``>=`` floor exactly; a dependency without one would go untested."""
    from pip._vendor.packaging.requirements import Requirement

    lines = PROJECT["dependencies"] + PROJECT["optional-dependencies"]["test"] + PROJECT["optional-dependencies"]["dask"]
    requirements = [Requirement(line) for line in lines]
    for requirement in requirements:
        if requirement.name != PROJECT["name"]:
            assert any(spec.operator == ">=" for spec in requirement.specifier), f"{requirement} has no floor"
    pins = _floors_script().floor_pins(ROOT / "pyproject.toml", "3.11")
    names = {pin.split("==")[0] for pin in pins}
    assert names == {r.name for r in requirements if r.name != PROJECT["name"]}
    assert "PySide6-Essentials==6.6.3.1" in pins and "numpy==1.26.4" in pins


# -- the bundle (packaging/privelet-studio.spec; packaging/build-and-smoke builds and runs it) -----------

SPEC = PACKAGING / "privelet-studio.spec"
KERNEL_CACHE_HOOK = PACKAGING / "pyi_rth_kernel_cache.py"
#: Runs the spec with PyInstaller's build steps replaced by stubs that record what they are given.
SPEC_STUB = r"""
import json, sys, types
hooks = types.ModuleType("PyInstaller.utils.hooks")
hooks.copy_metadata = lambda name: []
for name in ("PyInstaller", "PyInstaller.utils"):
    sys.modules[name] = types.ModuleType(name)
sys.modules["PyInstaller.utils.hooks"] = hooks
analyses = []

class Analysis:
    def __init__(self, scripts, **options):
        analyses.append({"scripts": scripts, **options})
        self.binaries, self.datas, self.pure, self.scripts = [], list(options["datas"]), [], []

PYZ = EXE = COLLECT = lambda *arguments, **options: None
spec = sys.argv[1]
exec(compile(open(spec, encoding="utf-8").read(), spec, "exec"),
     {"Analysis": Analysis, "PYZ": PYZ, "EXE": EXE, "COLLECT": COLLECT, "SPECPATH": sys.argv[2]})
print(json.dumps(analyses))
"""


def _kernel_cache_settings(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The environment the runtime hook sets, where the environment sets none of it."""
    import runpy

    names = ("NUMBA_CACHE_DIR", "NUMBA_CACHE_LOCATOR_CLASSES")
    for name in names:
        monkeypatch.setenv(name, "")  # restored (removed) after the test
        monkeypatch.delenv(name)
    runpy.run_path(str(KERNEL_CACHE_HOOK))
    return {name: os.environ[name] for name in names}


def test_the_bundle_carries_numba_its_kernel_sources_and_the_cache_hook(built, tmp_path, monkeypatch):
    """The spec bundles numba (the engine's one implementation of every loop), ships the kernels'
    sources where the frozen modules say they are, and runs the hook that points numba's cache at
    the user's cache folder; randomgen is gone."""
    site = tmp_path / "site"
    with zipfile.ZipFile(built["wheel"]) as wheel:
        wheel.extractall(site)
    result = subprocess.run([sys.executable, "-c", SPEC_STUB, str(SPEC), str(PACKAGING)], cwd=tmp_path,
                            env={**os.environ, "PRIVELET_BUNDLE_SITE": str(site)},
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    analyses = json.loads(result.stdout.splitlines()[-1])
    assert [a["scripts"] for a in analyses] == [["launch.py"], ["launch_cli.py"]]
    locator = _kernel_cache_settings(monkeypatch)["NUMBA_CACHE_LOCATOR_CLASSES"].split(",")[0]
    locator_module = locator.rsplit(".", 1)[0]
    kernels = sorted(path.name for path in (ROOT / "privelet_gui" / "engine" / "kernels").glob("*.py")
                     if "\n@njit(cache=True" in path.read_text(encoding="utf-8"))
    assert kernels == ["counts.py", "noise.py", "transforms.py"]
    for analysis in analyses:
        excluded = set(analysis["excludes"])
        assert not {"numba", "llvmlite"} & excluded and not any(name.startswith("numba.") for name in excluded)
        assert not any("randomgen" in name for name in analysis["hiddenimports"] + analysis["excludes"])
        assert locator_module in analysis["hiddenimports"]  # imported by name only, by numba
        assert [Path(hook) for hook in analysis["runtime_hooks"]] == [KERNEL_CACHE_HOOK]
        shipped = {(Path(source).name, target) for source, target in analysis["datas"]
                   if target == "privelet_gui/engine/kernels"}
        assert {(name, "privelet_gui/engine/kernels") for name in kernels} <= shipped
        for source, _target in analysis["datas"]:
            assert Path(source).is_relative_to(site), source  # the wheel's files, not the checkout's
    assert "randomgen" not in SPEC.read_text(encoding="utf-8")
    # the spec refuses a numba older than the packaging extra's, which ignores the hook's locator
    from pip._vendor.packaging.requirements import Requirement

    floors = {Requirement(line).name: Requirement(line).specifier for line in PROJECT["optional-dependencies"]["packaging"]}
    floor = next(spec.version for spec in floors["numba"] if spec.operator == ">=")
    spec_floor = re.search(r"^NUMBA_FLOOR = \((\d+), (\d+)\)", SPEC.read_text(encoding="utf-8"), re.M)
    assert spec_floor is not None and f"{spec_floor[1]}.{spec_floor[2]}.0" == floor == "0.62.0"


#: A frozen app as PyInstaller makes one, in miniature: the runtime hook runs first, then a module
#: whose code says it comes from a path relative to the bundle (as PyInstaller's modules do), with a
#: numba function cached on disk; its source is shipped in the bundle.
FROZEN_APP = r"""
import os, runpy, sys, types
bundle, hook, executable = sys.argv[1:4]
sys.frozen, sys._MEIPASS, sys.executable = True, bundle, executable
runpy.run_path(hook)
name = "kernelpkg/twice.py"
with open(os.path.join(bundle, name), encoding="utf-8") as source:
    code = compile(source.read(), name, "exec")
module = sys.modules["kernelpkg.twice"] = types.ModuleType("kernelpkg.twice")
exec(code, module.__dict__)
print("result", module.twice(21))
"""
FROZEN_KERNEL = """
from numba import njit


@njit(cache=True)
def twice(x):
    return 2 * x
"""


def test_frozen_kernels_compile_once_then_load_from_the_users_cache(tmp_path):
    """Both commands of the bundle, started from any folder, share the kernels numba compiled
    (its own locators would cache by the current folder, and stamp by the executable)."""
    bundle = tmp_path / "bundle"
    (bundle / "kernelpkg").mkdir(parents=True)
    (bundle / "kernelpkg" / "twice.py").write_text(FROZEN_KERNEL, encoding="utf-8")
    for command in ("privelet-gui", "privelet"):
        (bundle / command).write_text(f"the {command} executable", encoding="utf-8")
    environment = {**os.environ, "HOME": str(tmp_path / "home"), "XDG_CACHE_HOME": str(tmp_path / "cache"),
                   "NUMBA_DEBUG_CACHE": "1"}
    for name in ("NUMBA_CACHE_DIR", "NUMBA_CACHE_LOCATOR_CLASSES", "NUMBA_DISABLE_JIT"):
        environment.pop(name, None)
    logs = []
    for command, folder in (("privelet-gui", "first"), ("privelet", "second")):
        (tmp_path / folder).mkdir()
        result = subprocess.run([sys.executable, "-c", FROZEN_APP, str(bundle), str(KERNEL_CACHE_HOOK),
                                 str(bundle / command)], cwd=tmp_path / folder, env=environment,
                                capture_output=True, text=True, timeout=240)
        assert result.returncode == 0 and "result 42" in result.stdout, result.stdout + result.stderr
        logs.append(result.stdout)
    first, second = logs
    cache = tmp_path / "cache" / "privelet-studio" / "numba"
    assert "[cache] data saved" in first and str(cache) in first, first
    assert "[cache] data loaded" in second and "[cache] data saved" not in second, second
    assert [path.name for path in cache.rglob("*.nbi")] == [f"twice.twice-5.py{sys.version_info[0]}{sys.version_info[1]}.nbi"]
    assert not list((tmp_path / "home").rglob("*.nbi")) and not list(bundle.rglob("*.nbi"))


def test_the_bundle_cache_locator_declines_outside_a_frozen_app():
    from privelet_gui.engine.kernels import bundle_cache

    def kernel() -> None: ...

    assert bundle_cache.BundleCacheLocator.from_function(kernel, bundle_cache.__file__) is None


# -- desktop metadata ----------------------------------------------------------------------------------


def _desktop_entry() -> Any:
    parser = ConfigParser(interpolation=None)
    parser.optionxform = str  # keys are case-sensitive
    parser.read(DESKTOP, encoding="utf-8")
    return parser["Desktop Entry"]


def test_the_desktop_entry_is_valid_with_one_main_category():
    entry = _desktop_entry()
    categories = [c for c in entry["Categories"].split(";") if c]
    assert len(MAIN_CATEGORIES.intersection(categories)) == 1, categories
    assert PROJECT_MIME_TYPE in entry["MimeType"].split(";")
    assert entry["Exec"].split()[0] in PROJECT["gui-scripts"]
    assert entry["Icon"] == APP_ID
    result = subprocess.run([tool("desktop-file-validate"), str(DESKTOP)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and result.stdout + result.stderr == "", result.stdout + result.stderr


def test_the_appstream_metadata_passes_the_pedantic_validator():
    result = subprocess.run([tool("appstreamcli"), "validate", "--pedantic", "--no-net", "--explain", str(METAINFO)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    issues = [line for line in result.stdout.splitlines() if re.match(r"^[EWIP]: ", line)]
    assert issues == [], result.stdout


def test_the_appstream_metadata_agrees_with_the_project():
    from privelet_gui.gui.app import DESKTOP_ID

    root = ET.parse(METAINFO).getroot()
    assert root.findtext("id") == APP_ID == DESKTOP_ID == DESKTOP.stem
    assert root.findtext("launchable") == f"{APP_ID}.desktop"
    assert root.findtext("project_license") == PROJECT["license"]
    assert {b.text for b in root.iter("binary")} == set(PROJECT["scripts"]) | set(PROJECT["gui-scripts"])
    assert {m.text for m in root.iter("mediatype")} == {PROJECT_MIME_TYPE}
    urls = {u.get("type"): u.text for u in root.findall("url")}
    assert urls["homepage"] == PROJECT["urls"]["Homepage"] and urls["bugtracker"] == PROJECT["urls"]["Issues"]
    assert root.findtext("developer_name")
    # every screenshot is a file of the repository, at the address its source lives at
    images = [i.text or "" for i in root.iter("image")]
    assert images
    raw = PROJECT["urls"]["Source"].replace("https://github.com/", "https://raw.githubusercontent.com/") + "/main/"
    for image in images:
        assert image.startswith(raw) and (ROOT / image.removeprefix(raw)).is_file(), image
    # the newest release is this version, and every release has its section in the change log
    releases = [r.get("version") for r in root.iter("release")]
    assert releases[0] == PROJECT["version"]
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    for version in releases:
        assert re.search(rf"^## \[{re.escape(version or '')}\] - \d{{4}}-\d{{2}}-\d{{2}}$", changelog, re.M), version
    assert "## [Unreleased]" in changelog


def _install(prefix: Path) -> None:
    environment = {"PATH": "/usr/bin:/bin", "XDG_DATA_DIRS": f"{prefix / 'share'}:/usr/share", "HOME": str(prefix)}
    result = subprocess.run(["bash", str(PACKAGING / "install-desktop-files"), str(prefix)], env=environment,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


def test_installed_desktop_files_validate_together(tmp_path):
    tool("appstreamcli")
    _install(tmp_path)
    share = tmp_path / "share"
    assert (share / "applications" / f"{APP_ID}.desktop").is_file()
    assert (share / "icons" / "hicolor" / "scalable" / "apps" / f"{APP_ID}.svg").is_file()
    result = subprocess.run(["appstreamcli", "validate-tree", "--pedantic", "--no-net", str(tmp_path)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and not re.search(r"^[EWIP]: ", result.stdout, re.M), result.stdout


def test_project_files_get_their_mime_type_and_icon(tmp_path):
    from privelet_gui.io.project import PROJECT_FORMAT, PROJECT_SUFFIX, Project, save_project

    tool("update-mime-database")
    _install(tmp_path)
    mime = tmp_path / "share" / "mime"
    assert f"50:{PROJECT_MIME_TYPE}:*{PROJECT_SUFFIX}" in (mime / "globs2").read_text().splitlines()
    assert f"{PROJECT_MIME_TYPE}:{APP_ID}" in (mime / "icons").read_text().splitlines()
    assert f"{PROJECT_MIME_TYPE} application/json" in (mime / "subclasses").read_text().splitlines()
    # The magic, for a project saved under another name, matches the start of what the app writes.
    magic = ET.parse(MIME).getroot().find(".//{*}match")
    assert magic is not None and magic.get("value") == f'"{PROJECT_FORMAT}"'
    assert magic.get("value", "").encode() in (mime / "magic").read_bytes()
    start, end = (int(n) for n in (magic.get("offset") or "").split(":"))
    save_project(Project(table_path=tmp_path / "t.csv", epsilon=0.5), tmp_path / f"p{PROJECT_SUFFIX}")
    written = (tmp_path / f"p{PROJECT_SUFFIX}").read_bytes()
    assert start <= written.index(f'"{PROJECT_FORMAT}"'.encode()) <= end

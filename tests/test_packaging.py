"""What a packager or a software centre gets: the sdist, the wheel, the floors, the desktop metadata.

The sdist and the wheel are built with the build backend itself (setuptools, from the test
extra) from a copy of the tracked files, as from a fresh clone; the desktop files are checked
with the freedesktop tools where they are installed (skipped, saying so, where they are not).
"""

from __future__ import annotations

import email
import importlib.machinery
import importlib.util
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

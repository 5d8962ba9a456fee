"""The documents keep their shape: every test docs/privacy.md names exists, the README's first
screen gives exactly two commands (the second after the marker .ci/run reads), the change log's
Unreleased section is one line per change, and no measurement lives in the prose."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PRIVACY = ROOT / "docs" / "privacy.md"
CHANGELOG = ROOT / "CHANGELOG.md"

TESTS_COMMENT = re.compile(r"<!--\s*tests:(.*?)-->", re.S)
#: A timing or speed-up figure: "1.2 s", "30 ms", "4.6 ns", "2 minutes", "3.4x" (not "1024 x 1024").
TIMING = re.compile(
    r"\b\d+(?:[.,]\d+)?\s?(?:s|ms|us|µs|ns|sec|secs|seconds?|minutes?|min)\b|\b\d+(?:\.\d+)?x\b",
    re.I,
)
SHELL_FENCE = re.compile(r"^```(?:bash|sh|shell|console)?\s*$")


def named_tests() -> list[str]:
    """Every ``path::name`` in a ``<!-- tests: ... -->`` comment of docs/privacy.md."""
    text = PRIVACY.read_text(encoding="utf-8")
    return [name.strip() for comment in TESTS_COMMENT.findall(text) for name in comment.split(",") if name.strip()]


@cache
def functions_of(path: Path) -> frozenset[str]:
    """The test functions of a module: ``name`` at the top level, ``Class::name`` in a class."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            names.add(node.name)
        elif isinstance(node, ast.ClassDef):
            names.update(f"{node.name}::{item.name}" for item in node.body
                         if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name.startswith("test"))
    return frozenset(names)


def first_screen() -> str:
    """The README up to its first ``##`` heading."""
    return README.read_text(encoding="utf-8").split("\n## ", 1)[0]


def shell_commands(text: str) -> list[str]:
    """The command lines of the fenced shell blocks of ``text`` (comments and blank lines aside)."""
    commands: list[str] = []
    inside = False
    for line in text.splitlines():
        if line.startswith("```"):
            inside = not inside and bool(SHELL_FENCE.match(line))
            continue
        if inside and line.strip() and not line.lstrip().startswith("#"):
            commands.append(line.strip())
    return commands


def unreleased() -> str:
    text = CHANGELOG.read_text(encoding="utf-8")
    return text.split("## [Unreleased]", 1)[1].split("\n## [", 1)[0]


def test_privacy_md_names_tests():
    names = named_tests()
    assert len(names) >= 20
    # every bulleted statement is followed by the tests that check it
    text = PRIVACY.read_text(encoding="utf-8")
    statements = [part for part in re.split(r"\n(?=- )", text) if part.startswith("- ")]
    unchecked = [s.splitlines()[0] for s in statements if "<!-- tests:" not in s and "as above" not in s]
    assert not unchecked, unchecked


@pytest.mark.parametrize("name", sorted(set(named_tests())))
def test_every_test_named_in_privacy_md_exists(name):
    path, _, function = name.partition("::")
    assert function, f"{name}: name a test function as path::name"
    module = ROOT / path
    assert module.is_file() and path.startswith("tests/"), f"{path} is not a test file"
    assert function in functions_of(module), f"{path} has no test {function}"


def test_the_readme_first_screen_has_exactly_two_commands():
    commands = shell_commands(first_screen())
    assert len(commands) == 2, commands
    assert "privelet release --demo" in commands[0]
    assert "pytest" in commands[1]
    for link in ("docs/privacy.md", "docs/math.md", "docs/screenshot-privacy-step.png"):
        assert f"]({link})" in first_screen(), link
    assert (ROOT / "docs" / "screenshot-privacy-step.png").stat().st_size < 300_000


def test_the_test_command_marker_is_followed_by_the_command():
    """.ci/run takes the first line after the marker that is neither a fence nor blank."""
    text = README.read_text(encoding="utf-8")
    assert text.count("<!-- test-command -->") == 1
    after = text.split("<!-- test-command -->", 1)[1]
    command = next(line for line in after.splitlines() if line.strip() and not line.startswith("```"))
    assert command == shell_commands(first_screen())[1]
    assert command.startswith("python3 -m venv .venv && ") and command.endswith("-m pytest")


def test_the_unreleased_changes_are_one_line_each():
    section = unreleased()
    bullets = [line for line in section.splitlines() if line.startswith("- ")]
    assert len(bullets) >= 10
    for line in section.splitlines():
        # a line is a bullet, a heading, a comment or blank: never the continuation of a bullet
        assert not line or line.startswith(("- ", "### ", "<!--")), f"not one line per change: {line!r}"
    assert section.rstrip().endswith("<!-- more lines from the sessions' merges go here -->")


@pytest.mark.parametrize("document", [PRIVACY, CHANGELOG], ids=lambda p: p.name)
def test_no_timing_figures(document):
    found = [(number, line) for number, line in enumerate(document.read_text(encoding="utf-8").splitlines(), 1)
             if TIMING.search(line)]
    assert not found, found


def test_the_timing_pattern():
    for text in ("took 1.2 s", "3.4x faster", "4.6 ns a log", "30 ms", "2 minutes"):
        assert TIMING.search(text), text
    for text in ("1024 x 1024", "2^32 rows", "epsilon 10^-12", "version 3", "5 hierarchies", "s rho"):
        assert not TIMING.search(text), text

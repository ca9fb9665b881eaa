"""scripts/check_design.py and scripts/check_layers.py catch what they
promise: run on a copy of the source tree with one statement of
docs/design.md made false (or one include made to go up), each reports it
and exits 1; on the tree as it is, both pass.

The copy holds the sources, scripts, docs and build files, not build/,
data/ or the study's results.
"""
import os
import re
import shutil
import subprocess
import sys

import pytest

SOURCE = os.environ.get("GPT2LAB_SOURCE_DIR") or os.path.normpath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
SKIP_DIRS = {".git", "node_modules", "__pycache__"}


def ignore(folder, names):
    rel = os.path.relpath(folder, SOURCE)
    left_out = {n for n in names if n in SKIP_DIRS or (rel == "." and (n == "data" or n.startswith("build")))}
    if rel == "docs":
        left_out.add("study")
    return left_out | {n for n in names if os.path.islink(os.path.join(folder, n))}


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "src_tree"
    shutil.copytree(SOURCE, root, ignore=ignore)
    return root


def run(root, script):
    r = subprocess.run([sys.executable, str(root / "scripts" / script)], capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def edit(path, old, new):
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{path.name} no longer holds {old!r}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_both_checks_pass_on_the_tree(tree):
    assert run(tree, "check_design.py")[0] == 0
    assert run(tree, "check_layers.py")[0] == 0


def test_a_code_name_no_source_has_is_reported(tree):
    gone = "Activation" + "Layout"  # spelled apart: this file is a source the check reads
    edit(tree / "docs" / "design.md", "`Activations`", f"`{gone}`")
    rc, out = run(tree, "check_design.py")
    assert rc == 1
    assert re.search(rf"design\.md:\d+: `{gone}` is named as code, and no source file has it", out), out


def test_a_long_function_without_its_marker_is_reported(tree):
    edit(tree / "src" / "study" / "budget.cpp", "// NOLINTNEXTLINE(readability-function-size)\nBudget full_budget",
         "Budget full_budget")
    rc, out = run(tree, "check_design.py")
    assert rc == 1
    assert re.search(r"src/study/budget\.cpp:\d+: full_budget has \d+ lines; design\.md says no function", out), out


def test_a_long_function_the_page_does_not_name_is_reported(tree):
    edit(tree / "docs" / "design.md", "`quick_budget` and `tiny_budget`", "`quick_budget`")
    rc, out = run(tree, "check_design.py")
    assert rc == 1
    assert "tiny_budget has" in out, out


def test_a_named_function_that_is_short_is_reported(tree):
    edit(tree / "docs" / "design.md", "`quick_budget` and `tiny_budget`",
         "`quick_budget`, `tiny_budget` and `budget_by_name`")
    rc, out = run(tree, "check_design.py")
    assert rc == 1
    assert "design.md names budget_by_name as a function over 80 lines, and none in src/ is" in out, out


def test_the_function_limit_is_clang_tidys(tree):
    edit(tree / ".clang-tidy", "value: 80", "value: 90")
    rc, out = run(tree, "check_design.py")
    assert rc == 1
    assert "design.md's function limit (80 lines) is not .clang-tidy's LineThreshold" in out, out


def test_the_folder_table_lists_every_layer(tree):
    edit(tree / "docs" / "design.md", "| `cli` |", "| the command line |")
    rc, out = run(tree, "check_design.py")
    assert rc == 1
    assert "design.md's table of folders names" in out and "'cli'" in out, out


def test_a_folder_that_is_no_layer_is_reported(tree):
    (tree / "src" / "extra").mkdir()
    rc, out = run(tree, "check_design.py")
    assert rc == 1
    assert "src/extra/ is not a layer of scripts/check_layers.py's RANK" in out, out
    rc, out = run(tree, "check_layers.py")
    assert rc == 1
    assert "src/extra/: a folder with no layer" in out, out


@pytest.mark.parametrize("layer, include, allowed", [
    ("translation", "data/token_shard.h", True),
    ("translation", "gpt2lab/sample/inference.h", True),
    ("study", "translation/translate.h", True),
    ("cli", "translation/metrics.h", True),
    ("sample", "translation/dataset.h", False),
    ("data", "translation/pairs.h", False),
    ("translation", "study/budget.h", False),
    ("translation", "serve/server.h", False),
])
def test_translation_sits_above_data_and_sample_and_below_study(tree, layer, include, allowed):
    (tree / "src" / layer / "probe.cpp").write_text(f'#include "{include}"\n', encoding="utf-8")
    rc, out = run(tree, "check_layers.py")
    assert rc == (0 if allowed else 1), out
    if not allowed:
        assert f"src/{layer}/probe.cpp:1: {layer} includes {include.split('/')[0]}/" in out, out


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))

"""The package as users meet it: `mypy --strict` on the package, the README's examples and
examples/python/; and every example in examples/python/ runs."""

import glob
import os
import re
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PKG_ROOT = os.path.dirname(HERE)
REPO = os.path.dirname(os.path.dirname(PKG_ROOT))
EXAMPLES = sorted(glob.glob(os.path.join(REPO, "examples", "python", "*.py")))


def readme_blocks():
    with open(os.path.join(PKG_ROOT, "README.md"), encoding="utf-8") as f:
        return re.findall(r"```python\n(.*?)```", f.read(), re.S)


def test_there_are_examples():
    assert len(EXAMPLES) >= 5
    assert len(readme_blocks()) >= 8


@pytest.mark.no_instance_check
def test_mypy_strict(tmp_path):
    """The package, every ```python block of the README and the examples pass
    `mypy --strict` (`make test-python` installs mypy; run `pip install mypy` first when
    calling pytest directly)."""
    try:
        import mypy  # noqa: F401  (only: is it installed?)
    except ImportError:
        pytest.fail("mypy is not installed: pip install mypy (make test-python does)")
    files = []
    for i, block in enumerate(readme_blocks()):
        path = tmp_path / f"readme_block_{i}.py"
        path.write_text(block, encoding="utf-8")
        files.append(str(path))
    env = dict(os.environ, MYPYPATH=PKG_ROOT)
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary",
         "--cache-dir", str(tmp_path / "cache"), "cblite", *files, *EXAMPLES],
        cwd=PKG_ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.no_instance_check
@pytest.mark.parametrize("example", EXAMPLES, ids=os.path.basename)
def test_example_runs(example, tmp_path):
    env = dict(os.environ)
    env["PYTHONPATH"] = PKG_ROOT + os.pathsep + env.get("PYTHONPATH", "")
    result = subprocess.run([sys.executable, example, str(tmp_path)], env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip()


def test_reference_is_generated_from_the_current_docstrings():
    """REFERENCE.md is gen_reference.py's output for the code as it is."""
    result = subprocess.run([sys.executable, os.path.join(PKG_ROOT, "gen_reference.py"),
                             "--check"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


@pytest.mark.no_instance_check
@pytest.mark.parametrize("index", range(len(readme_blocks())))
def test_readme_block_runs(index, tmp_path):
    """Each ```python block of the README runs as written (its paths moved under a
    temporary directory)."""
    block = readme_blocks()[index]
    block = re.sub(r'"/tmp/', f'"{tmp_path}/', block).replace('"/data"', f'"{tmp_path}/data"')
    env = dict(os.environ)
    env["PYTHONPATH"] = PKG_ROOT + os.pathsep + env.get("PYTHONPATH", "")
    result = subprocess.run([sys.executable, "-c", block], env=env, cwd=str(tmp_path),
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr

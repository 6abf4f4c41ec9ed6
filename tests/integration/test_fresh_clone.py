"""The README's two commands on a fresh clone, with nothing beside it.

The repository is cloned (its committed state) into an empty folder, so there is no
``../shared`` and no ``.venv``: each script must set itself up from the package registry.
The test command is run in a bounded form: ``./scripts/test.sh`` passes its arguments to
pytest, so it runs its whole entry point (set up with the dev tools, ruff, mypy, the docs
drift check) and then pytest on the one test file that used to need ``../shared/rules``.
Running the whole suite there would run this test again inside itself.

Both run in CI: the first sets the clone up from the registry with the runtime
dependencies alone and plays a table; the second adds the dev tools. CI's own run is
``scripts/test.sh`` in a fresh clone too, but with ``../shared`` beside it, so only this
test shows the test command holding with nothing beside the clone.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# One clone for both tests: under pytest-xdist, on one worker.
pytestmark = pytest.mark.xdist_group("fresh_clone")


def _run(argv: list[str], cwd: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    # Nothing of this checkout's environment leaks in: no venv, no PYTHONPATH.
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME") and not k.startswith("PYTEST")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if not p.startswith(str(ROOT)))
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.fail("the fresh-clone test needs git and a git checkout")
    parent = tmp_path_factory.mktemp("fresh")
    target = parent / "tabled"
    proc = _run(["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(target)],
                parent, 120)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in parent.iterdir()) == ["tabled"]  # nothing beside it
    assert not (target / ".venv").exists()
    return target


@pytest.mark.soak
def test_readme_simulate_runs_on_a_fresh_clone(clone: Path) -> None:
    proc = _run(["./scripts/simulate.sh", "--rounds", "3", "--speed", "50"], clone, 600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "3 rounds published (3 valid, 0 void)" in proc.stdout, proc.stdout


@pytest.mark.soak
def test_readme_test_command_runs_on_a_fresh_clone(clone: Path) -> None:
    proc = _run(["./scripts/test.sh", "-q", "-p", "no:cacheprovider",
                 "tests/unit/games/test_documents.py"], clone, 900)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    for step in ("== ruff", "== mypy", "== docs", "== pytest"):
        assert step in out, out
    assert " passed" in out and "failed" not in out, out

"""A Python child process killed with SIGKILL, as a power cut or the OOM killer would
end the daemon: no cleanup, no atexit, no flush beyond what was already written."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def killed(script: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run ``script`` (which kills itself, or is killed from within) in a new interpreter
    at the repository's root; it must have died by SIGKILL. Returns what it printed."""
    proc = subprocess.run([sys.executable, "-c", script], check=False, timeout=timeout,
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == -signal.SIGKILL, (proc.returncode, proc.stdout, proc.stderr)
    return proc

"""Prometheus for the tests: Debian's `prometheus` package (promtool and the server),
which scripts/setup.sh dev installs; scraping and parsing /metrics."""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from hil.broker import free_port

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def binary(name: str) -> str:
    found = shutil.which(name) or shutil.which(name, path="/usr/bin:/usr/sbin")
    if found is None:
        pytest.fail(f"{name} is missing: bash scripts/setup.sh dev installs Debian's "
                    "prometheus package (or: apt-get install prometheus)")
    return found


def fetch(url: str, timeout: float = 5.0) -> str:
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return str(r.read().decode("utf-8"))


def parse(text: str) -> Samples:
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def value(samples: Samples, name: str, **labels: str) -> float:
    """The sum of the samples of ``name`` whose labels include ``labels``."""
    want = set(labels.items())
    found = [v for (n, ls), v in samples.items() if n == name and want <= set(ls)]
    if not found:
        raise KeyError(f"{name}{labels or ''} is not in the scrape")
    return sum(found)


def check_metrics(text: str) -> subprocess.CompletedProcess[str]:
    """promtool's lint of an exposition (names, units, help text, counters' _total)."""
    return subprocess.run([binary("promtool"), "check", "metrics"], input=text,
                          capture_output=True, text=True, timeout=30, check=False)


class Prometheus:
    """A real Prometheus server on loopback, scraping ``targets`` (job -> host:port)
    every second, with its data in ``work``."""

    def __init__(self, work: Path, targets: dict[str, str]) -> None:
        self.work = work
        self.port = free_port()
        jobs = "".join(f"""
  - job_name: {job}
    static_configs:
      - targets: ["{target}"]
""" for job, target in targets.items())
        self.config = work / "prometheus.yml"
        self.config.write_text(f"""global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:{jobs}""", encoding="utf-8")
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = work / "prometheus.log"

    def start(self) -> None:
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(
                [binary("prometheus"), f"--config.file={self.config}",
                 f"--storage.tsdb.path={self.work / 'tsdb'}",
                 f"--web.listen-address=127.0.0.1:{self.port}"],
                stdout=log, stderr=subprocess.STDOUT)

    def query(self, expr: str) -> list[dict[str, Any]]:
        url = (f"http://127.0.0.1:{self.port}/api/v1/query?"
               + urllib.parse.urlencode({"query": expr}))
        try:
            body = json.loads(fetch(url))
        except OSError:  # not up yet
            return []
        return list(body["data"]["result"]) if body.get("status") == "success" else []

    def scalar(self, expr: str) -> float | None:
        result = self.query(expr)
        return float(result[0]["value"][1]) if result else None

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)

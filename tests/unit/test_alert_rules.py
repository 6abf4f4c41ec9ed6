"""The example alerting rules (systemd/prometheus/tabled-alerts.yml, issue 29): valid for
Prometheus, and firing in ``promtool test rules`` for a held round, a lost device, a
growing backlog and a table offline, each only once its condition has held long enough."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.prom import binary

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "systemd" / "prometheus" / "tabled-alerts.yml"
RULE_TESTS = Path(__file__).with_name("tabled-alerts.test.yml")


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([binary("promtool"), *args], capture_output=True, text=True,
                          timeout=60, check=False)


def test_the_example_alert_rules_are_valid() -> None:
    run = promtool("check", "rules", str(RULES))
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_pages_fire_for_a_held_round_a_lost_device_a_growing_backlog_and_offline(
        ) -> None:
    run = promtool("test", "rules", str(RULE_TESTS))
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_rule_tests_catch_a_hold_threshold_that_is_not_the_documented_one(
        tmp_path: Path) -> None:
    """The rule tests above can fail: with a hold paged after 100 minutes, not 10, the
    held round's expected alert is missing."""
    rules = RULES.read_text(encoding="utf-8")
    assert "tabled_hold_age_seconds > 600" in rules
    (tmp_path / "rules.yml").write_text(
        rules.replace("tabled_hold_age_seconds > 600", "tabled_hold_age_seconds > 6000"),
        encoding="utf-8")
    (tmp_path / "test.yml").write_text(RULE_TESTS.read_text(encoding="utf-8").replace(
        "../../systemd/prometheus/tabled-alerts.yml", "rules.yml"), encoding="utf-8")
    run = promtool("test", "rules", str(tmp_path / "test.yml"))
    assert run.returncode != 0
    assert "TabledRoundHeldForPit" in run.stdout + run.stderr

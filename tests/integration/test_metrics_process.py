"""Prometheus metrics (issue 29, Build 1): ``tabled run`` as its own process with the
simulated shoe and shuffler, ``tabled display`` beside it, and a real Prometheus scraping
both every second, through rounds, a broker outage and a round held for the Pit."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from daemon.security.signing import public_key_text
from hil.broker import Mosquitto, free_port
from hil.dealer import SimDealer
from hil.process import DaemonProcess
from hil.rig import SimRig
from tests.prom import Prometheus, Samples, check_metrics, fetch, parse, value


async def scrape(port: int) -> Samples:
    return parse(await asyncio.to_thread(fetch, f"http://127.0.0.1:{port}/metrics"))


async def until_scraped(port: int, ok: Callable[[Samples], bool], timeout: float = 30
                        ) -> Samples:
    """The first scrape that satisfies ``ok`` (a metric not there yet counts as not)."""
    last: Samples = {}

    async def good() -> bool:
        nonlocal last
        try:
            last = await scrape(port)
            return ok(last)
        except (OSError, KeyError):
            return False

    async with asyncio.timeout(timeout):
        while not await good():
            await asyncio.sleep(0.2)
    return last


async def prometheus_says(p: Prometheus, expr: str, want: float, timeout: float = 30
                          ) -> None:
    loop = asyncio.get_running_loop()
    deadline, got = loop.time() + timeout, None
    while loop.time() < deadline:
        got = await asyncio.to_thread(p.scalar, expr)
        if got == want:
            return
        await asyncio.sleep(0.5)
    raise AssertionError(f"Prometheus: {expr} is {got}, not {want} ({p.log.read_text()[-2000:]})")


async def deal_blind_until_a_result(dealer: SimDealer, port: int, results: float) -> None:
    """The broker is down: the dealer draws from the shoe until the round's result is
    journalled (the table's own /metrics says so)."""
    async with asyncio.timeout(30):
        while value(await scrape(port), "tabled_results_total") < results:
            await dealer._draw()
            await asyncio.sleep(0.1)


async def test_prometheus_scrapes_a_table_and_a_display_through_an_outage_and_a_hold(
        tmp_path: Path) -> None:
    broker = Mosquitto(tmp_path, persistent=True)
    broker.start()
    table_port, display_port = free_port(), free_port()
    rig = SimRig(tmp_path, "tiger-buffalo", "P", 8, ("127.0.0.1", broker.port), speed=50,
                 seed=7, sections={"metrics": {"listen": f"127.0.0.1:{table_port}"}})
    await rig.start()
    key = tmp_path / "table.pub"
    key.write_text(public_key_text(rig.table_key.public_key()) + "\n", encoding="utf-8")
    daemon = DaemonProcess(rig.config(), tmp_path)
    display = subprocess.Popen(
        [sys.executable, "-m", "daemon", "display", "--broker",
         f"mqtt://127.0.0.1:{broker.port}", "--key", str(key), "--table", rig.table_id,
         "--listen", f"127.0.0.1:{display_port}"],
        stdout=subprocess.DEVNULL, stderr=(tmp_path / "display.log").open("wb"))
    prometheus = Prometheus(tmp_path, {"tabled": f"127.0.0.1:{table_port}",
                                       "tabled-display": f"127.0.0.1:{display_port}"})
    daemon.start()
    prometheus.start()
    try:
        dealer = rig.dealer(reply_timeout=5.0, betting_seconds=0.01)
        async with dealer.session():
            for _ in range(2):
                await dealer.deal_round()
        s = await until_scraped(table_port, lambda s: value(
            s, "tabled_outbox_backlog_messages") == 0 and value(
            s, "tabled_card_to_publish_seconds_count") >= 8)
        assert value(s, "tabled_results_total", game="tiger-buffalo") == 2
        assert value(s, "tabled_result_to_acknowledge_seconds_count") == 2
        assert value(s, "tabled_device_up", device="shoe") == 1
        assert value(s, "tabled_device_up", device="shuffler") == 1
        assert value(s, "tabled_device_state", device="shoe", state="ready") == 1
        assert value(s, "tabled_device_sessions_total", device="shoe") >= 1
        assert value(s, "tabled_mqtt_connected") == 1
        assert value(s, "tabled_commands_accepted_total", command="open_betting") == 2
        assert value(s, "tabled_journal_size_bytes") > 0
        assert value(s, "tabled_journal_checkpoint_age_seconds") >= 0
        text = await asyncio.to_thread(fetch, f"http://127.0.0.1:{table_port}/metrics")
        lint = check_metrics(text)
        assert lint.returncode == 0 and not lint.stdout.strip(), lint.stdout + lint.stderr
        d = await until_scraped(display_port, lambda d: value(
            d, "tabled_display_payloads_verified_total") > 0)
        assert value(d, "tabled_display_payloads_refused_total") == 0
        dtext = await asyncio.to_thread(fetch, f"http://127.0.0.1:{display_port}/metrics")
        lint = check_metrics(dtext)
        assert lint.returncode == 0 and not lint.stdout.strip(), lint.stdout + lint.stderr

        # A broker outage mid-round: the result waits in the outbox, and /metrics says so.
        async with dealer.session():
            for name in ("open_betting", "close_betting"):
                assert (await dealer.command(name))["ok"]
        broker.stop()
        await deal_blind_until_a_result(dealer, table_port, 3)
        s = await until_scraped(table_port, lambda s: value(s, "tabled_mqtt_connected") == 0
                                and value(s, "tabled_outbox_oldest_age_seconds") >= 2)
        assert value(s, "tabled_outbox_backlog_messages") >= 1
        await asyncio.sleep(2)  # Prometheus scrapes the outage at least once more
        broker.start()
        s = await until_scraped(table_port, lambda s: value(
            s, "tabled_outbox_backlog_messages") == 0 and value(
            s, "tabled_mqtt_sessions_total") >= 2)
        # The result dealt blind waited out the outage before the broker had it.
        assert value(s, "tabled_result_to_acknowledge_seconds_count") == 3
        assert value(s, "tabled_result_to_acknowledge_seconds_bucket", le="1.0") <= 2

        # A round held for the Pit: waiting, and for how long.
        dealer.forget()
        async with dealer.session():
            for name in ("open_betting", "close_betting"):
                assert (await dealer.command(name))["ok"]
            await dealer._draw()
            await dealer.hold_round("a card fell face up")
        s = await until_scraped(table_port, lambda s: value(
            s, "tabled_hold_age_seconds") >= 1)
        assert value(s, "tabled_holds_waiting") == 1

        # What the real Prometheus made of it all.
        checks = {
            'up{job="tabled"}': 1, 'up{job="tabled-display"}': 1,
            "sum(tabled_results_total)": 3, "tabled_holds_waiting": 1,
            "min_over_time(tabled_mqtt_connected[5m])": 0,
            "max_over_time(tabled_outbox_backlog_messages[5m]) >= bool 1": 1,
            "min_over_time(tabled_display_broker_connected[5m])": 0,
            "tabled_display_payloads_verified_total > bool 0": 1,
        }
        for expr, want in checks.items():
            await prometheus_says(prometheus, expr, want)
    finally:
        prometheus.stop()
        display.terminate()
        display.wait(10)
        daemon.stop()
        await rig.stop()
        broker.cleanup()

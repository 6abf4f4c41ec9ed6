"""Issue 28: the Pit acts from the page, each action signed by a security key (Chromium's
DevTools WebAuthn virtual authenticator), against a real daemon, simulated devices and a
broker; the table verifies every assertion itself.

The supervisor enrols on the page; `tabled principals add` puts the credential in the
table's config; the daemon starts with it. A scenario's round is dealt up to its hold,
the page shows the hold from the table's own messages, and the supervisor answers it
there; the dealer's round then finishes with the table's result. Refused, each with the
table's own reply on the page: a second answer to the same hold, a command altered on
its way, a replayed assertion, a credential the table does not list (another table's),
and a revoked one.

TABLED_SCREENSHOTS=docs writes the page's screenshots there (docs/pit-*.png are made so).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from daemon.security.signing import public_key_text
from hil.broker import Mosquitto
from hil.process import DaemonProcess
from hil.report import Report, settle_alert_windows
from hil.rig import SimRig
from hil.runner import (
    RunContext,
    ScriptedDealer,
    _scripted_dealer,
    _scripted_round,
    _set_up_devices,
)
from hil.scenario import Fault, Scenario, load_scenario
from tests.browser.cdp import Browser, chromium
from tests.browser.display_process import DisplayProcess

SHOTS = os.environ.get("TABLED_SCREENSHOTS")
SCENARIOS = Path(__file__).resolve().parents[2] / "hil" / "scenarios"
AUTHENTICATOR = {"protocol": "ctap2", "transport": "usb", "hasResidentKey": True,
                 "hasUserVerification": True, "isUserVerified": True,
                 "automaticPresenceSimulation": True}


# The Pit's word a scenario gives as a command, and the table's event once it is taken.
PIT_EVENTS = {"confirm_order": "order_confirmed", "throw_again": "throw_again",
              "confirm_result": "result_confirmed", "squeeze": "squeeze_declared"}


class PageDealer(ScriptedDealer):
    """The scenario's dealer, who leaves the Pit's word to the page: where the scenario
    has the Pit answer, the dealer waits for the table to say the page's answer was
    taken, then deals on as the scenario says."""

    # Set: the dealer deals on once the Pit's answer is taken. A test clears it to keep
    # the round open after the answer (a second answer to the same hold).
    deal_on: asyncio.Event

    async def held(self, body: dict[str, Any]) -> None:
        return None

    async def give(self, f: Fault) -> None:
        if f.fault in PIT_EVENTS:
            await self._expect(lambda t, b: t == "events" and
                               b.get("event") == PIT_EVENTS[f.fault], 60)
            await asyncio.wait_for(self.deal_on.wait(), 60)
        elif f.fault not in ("void", "void_settled"):  # the page voids; the runner
            await super().give(f)                      # awaits the result or correction


@dataclasses.dataclass
class Pit:
    """A table with a page: the browser, the page's URL, the daemon and its dealer."""

    browser: Browser
    url: str
    daemon: DaemonProcess
    dealer: PageDealer
    scenario: Scenario
    work: Path
    authenticator: str

    async def round(self, i: int) -> asyncio.Task[dict[str, Any] | None]:
        """The scenario's round i, dealt in the background up to the Pit's word."""
        return asyncio.create_task(self.dealer.play(self.scenario.rounds[i]))

    def scripted(self, i: int, report: Report, *, without: tuple[str, ...] = ()
                 ) -> asyncio.Task[None]:
        """The scenario's round i as the HIL runner plays it (its dispute and corrections
        too), less the faults ``without``, in the background; the Pit's word is the
        page's."""
        r = self.scenario.rounds[i]
        r = dataclasses.replace(r, faults=tuple(f for f in r.faults if f.fault not in without))
        return asyncio.create_task(_scripted_round(self.dealer, self.dealer.run_ctx.rig, i,
                                                   r, report))

    async def hold(self, kind: str) -> str:
        """The hold the page shows (its data-hold key), once it shows one of this kind."""
        return str(await self.browser.until(
            f"document.querySelector('[data-kind={kind}]')?.dataset.hold", timeout=30))

    async def act(self, hold: str, action: str) -> dict[str, Any]:
        """Click an action of a hold on the page; the table's reply as the page shows it."""
        sel = f"[data-hold=\"{hold}\"] [data-action={action}]"
        return await self.reply_to(f"document.querySelector('{sel}').click()")

    async def reply_to(self, script: str) -> dict[str, Any]:
        """Run a script that makes the page sign and send one command; the table's reply
        to that command, as the page shows it."""
        before = int(await self.browser.evaluate("window.pitSent.length"))
        await self.browser.evaluate(script)
        sent = await self.browser.until(f"window.pitSent.length > {before} && "
                                        f"window.pitSent[{before}].id")
        return await self.reply(str(sent))

    async def reply(self, cid: str) -> dict[str, Any]:
        got = await self.browser.until(
            "(() => { for (const t of Object.values(state.tables)) for (const r of "
            f"(t.pit ? t.pit.replies : [])) if (r.id === '{cid}') return r; }})()")
        assert isinstance(got, dict)
        return got

    async def shot(self, name: str) -> None:
        if SHOTS:
            await self.browser.screenshot(Path(SHOTS) / f"pit-{name}.png")


async def enrol(browser: Browser, name: str) -> dict[str, Any]:
    """The supervisor enrols on the page; what it shows for `tabled principals add`."""
    await browser.evaluate(f"document.getElementById('enrol-name').value = '{name}'")
    await browser.evaluate("delete document.getElementById('enrol-out').dataset.ready; "
                           "document.getElementById('enrol-go').click()")
    # Ready, or what went wrong (the page says it in the same box).
    await browser.until("document.getElementById('enrol-out').dataset.ready || "
                        "document.getElementById('enrol-out').value.startsWith('not')")
    text = await browser.evaluate("document.getElementById('enrol-out').value")
    assert not text.startswith("not"), text
    return dict(json.loads(text))


def tabled(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "daemon", *argv], capture_output=True,
                          text=True, timeout=60, check=False)


def add_principal(work: Path, config: Path, enrolment: dict[str, Any]) -> None:
    path = work / f"{enrolment['name']}.json"
    path.write_text(json.dumps(enrolment))
    out = tabled("principals", "add", "--config", str(config), "--enrolment", str(path))
    assert out.returncode == 0, out.stderr


@contextlib.asynccontextmanager
async def pit_table(work: Path, scenario: str) -> AsyncIterator[Pit]:
    """A scenario's table, its display and the Pit page in Chromium with a virtual
    authenticator; the supervisor "alice" enrolled and listed in the table's config."""
    s = load_scenario(SCENARIOS / f"{scenario}.json")
    broker = Mosquitto(work)
    broker.start()
    sim = SimRig(work, s.game, s.layout, s.decks, ("127.0.0.1", broker.port), speed=50,
                 seed=1, table_settings=dict(s.table_settings))
    await sim.start()
    _set_up_devices(s, sim, 1)
    key = work / "table.pub"
    key.write_text(public_key_text(sim.table_key.public_key()))
    display = DisplayProcess(work, broker.port, key, remembers=False)
    await display.start()
    url = f"http://localhost:{display.port}"
    config = sim.config()
    config["commands"]["webauthn"] = {"rp_id": "localhost", "origins": [url]}
    daemon = DaemonProcess(config, work)
    try:
        async with chromium() as browser:
            await browser.open(f"{url}/pit", width=1400, height=1000)
            await browser.send("WebAuthn.enable", {"enableUI": False})
            auth = await browser.send("WebAuthn.addVirtualAuthenticator",
                                      {"options": AUTHENTICATOR})
            await browser.until("Array.isArray(window.pitSent)")  # the page's script is running
            add_principal(work, daemon.config_path, await enrol(browser, "alice"))
            daemon.start()
            dealer = _scripted_dealer(s, sim, ("127.0.0.1", broker.port),
                                      RunContext(daemon, broker, sim), PageDealer)
            assert isinstance(dealer, PageDealer)
            dealer.deal_on = asyncio.Event()
            dealer.deal_on.set()
            async with dealer.session():
                await browser.until("document.querySelector('[data-pit-table]')")
                yield Pit(browser, url, daemon, dealer, s, work, auth["authenticatorId"])
    finally:
        display.kill()
        daemon.stop()
        await sim.stop()
        broker.cleanup()


async def fill(pit: Pit, hold: str, **fields: str) -> None:
    for name, value in fields.items():
        await pit.browser.evaluate(
            f"(() => {{ const e = document.querySelector('[data-hold=\"{hold}\"] "
            f"[data-field={name}]'); e.value = {json.dumps(value)}; "
            "e.dispatchEvent(new Event('input', {bubbles: true})); })()")


async def test_a_double_draw_is_ordered_from_the_page(tmp_path: Path) -> None:
    async with pit_table(tmp_path, "tiger-buffalo-double-draw") as pit:
        report = Report(pit.scenario)
        dealt = pit.scripted(0, report)
        hold = await pit.hold("simultaneous_draw")
        await pit.shot("double-draw")
        answer = await pit.act(hold, "confirm_order")
        assert answer["ok"], answer
        await asyncio.wait_for(dealt, 60)
        (rr,) = report.rounds
        assert not rr.mismatches, rr.mismatches  # banker 6 over player 5, as the scenario
        await pit.browser.until("document.querySelector('[data-nothing]')")


async def test_a_tai_sai_held_throw_is_thrown_again_from_the_page_and_once_only(
        tmp_path: Path) -> None:
    async with pit_table(tmp_path, "tai-sai-held-throw-restart") as pit:
        report = Report(pit.scenario)
        thrown = pit.scripted(0, report, without=("kill_daemon",))
        hold = await pit.hold("throw")
        await pit.shot("throw-held")
        await pit.browser.evaluate(
            "window.heldBefore = Object.values(state.tables)[0].pit.holds[0]")
        pit.dealer.deal_on.clear()  # the dice stay in the tumbler: the round stays open
        answer = await pit.act(hold, "throw_again")
        assert answer["ok"], answer
        # A second answer to the same hold, the round still open (awaiting its throw):
        # refused by the table's hold-id check, and changing nothing.
        table = pit.dealer.base.rsplit("/", 1)[1]
        again = await pit.reply_to(f"act('{table}', window.heldBefore, 'void_round')")
        assert not again["ok"] and again["error"]["code"] == "wrong_state", again
        assert f"hold {hold} was already answered" in again["error"]["message"], again
        assert not pit.dealer.results  # nothing settled or voided the round
        pit.dealer.deal_on.set()
        await asyncio.wait_for(thrown, 60)
        result = report.rounds[0].result
        assert result is not None and (result["status"], result["dice"]) == ("valid",
                                                                             [2, 4, 6])


async def test_tai_sai_5_14_an_unreadable_die_is_voided_from_the_page(tmp_path: Path) -> None:
    async with pit_table(tmp_path, "tai-sai-unreadable-die") as pit:
        report = Report(pit.scenario)
        thrown = pit.scripted(0, report)
        hold = await pit.hold("throw")
        await pit.shot("unreadable-die")
        await fill(pit, hold, reason="camera could not read die 1",
                   irregularity="unresolved_irregularity")
        answer = await pit.act(hold, "void_round")
        assert answer["ok"], answer
        await asyncio.wait_for(thrown, 60)
        (rr,) = report.rounds
        assert not rr.mismatches, rr.mismatches  # void, unresolved_irregularity under 5.14
        assert rr.result is not None and rr.result["void_reason"]["clause"] == "5.14"
        await pit.browser.until("document.querySelector('[data-nothing]')")


async def test_tai_sai_5_6_damaged_dice_void_settled_rounds_from_the_page(
        tmp_path: Path) -> None:
    async with pit_table(tmp_path, "tai-sai-damaged-dice-correction") as pit:
        report = Report(pit.scenario)
        await asyncio.wait_for(pit.scripted(0, report), 60)
        second = pit.scripted(1, report)  # the runner waits for both corrections
        await pit.browser.until("Object.values(state.tables)[0].last_results.filter("
                                "(r) => r.status === 'valid').length === 2", timeout=30)
        table = pit.dealer.base.rsplit("/", 1)[1]
        first = report.rounds[0].result
        assert first is not None
        sel = f"correct:{table}"
        await fill(pit, sel, reason="a chipped die found after round 2; in play from round 1")
        await fill(pit, sel, round=first["round_id"])
        await pit.shot("correction")
        assert (await pit.act(sel, "void_settled_round"))["ok"]
        # The second round: picked once the table has shown it settled.
        latest = str(await pit.browser.until(
            "Object.values(state.tables)[0].last_results.find((r) => r.status === 'valid'"
            f" && r.round_id !== '{first['round_id']}')?.round_id"))
        await fill(pit, sel, round=latest)
        assert (await pit.act(sel, "void_settled_round"))["ok"]
        await asyncio.wait_for(second, 60)
        await asyncio.sleep(0.3)  # alerts that follow the last correction, as the runner
        settle_alert_windows(report, pit.dealer.seen)
        for rr in report.rounds:
            assert not rr.mismatches, rr.mismatches  # both void under 5.6, damaged_dice
        # The page no longer offers a voided round to correct.
        await pit.browser.until(f"!document.querySelector('[data-hold=\"{sel}\"] "
                                f"option[value=\"{latest}\"]')")


async def test_disputed_results_are_corrected_or_confirmed_from_the_page(
        tmp_path: Path) -> None:
    async with pit_table(tmp_path, "tiger-buffalo-wrong-read-last-card") as pit:
        report = Report(pit.scenario)
        first = pit.scripted(0, report)
        hold = await pit.hold("disputed")
        await pit.shot("disputed")
        await fill(pit, hold, reason="draw 4 was KD on the table, not 7D",
                   irregularity="unresolved_irregularity")
        voided = await pit.act(hold, "void_settled_round")
        assert voided["ok"], voided
        await asyncio.wait_for(first, 60)
        assert not report.rounds[0].mismatches, report.rounds[0].mismatches  # corrected
        await pit.browser.until("document.querySelector('[data-nothing]')")
        second = pit.scripted(1, report)
        hold = await pit.hold("disputed")
        stands = await pit.act(hold, "confirm_result")
        assert stands["ok"], stands
        await asyncio.wait_for(second, 60)
        assert not report.rounds[1].mismatches, report.rounds[1].mismatches


async def test_ip_3_14_the_squeeze_is_declared_from_the_page(tmp_path: Path) -> None:
    async with pit_table(tmp_path, "tiger-buffalo-insurance-plus-squeeze-waiver") as pit:
        report = Report(pit.scenario)
        dealt = pit.scripted(0, report)
        hold = await pit.hold("squeeze")
        # Where the scenario declares it: the first four cards out, the third to come.
        await pit.browser.until("Object.values(state.tables)[0].round.cards.length >= 4")
        await pit.shot("squeeze")
        answer = await pit.act(hold, "declare_squeeze")
        assert answer["ok"], answer
        await asyncio.wait_for(dealt, 60)
        (rr,) = report.rounds
        # Without player_insurance: the round's right to insure after the Player Hand's
        # third card is waived (the scenario's second round, undeclared, pays it).
        assert not rr.mismatches, rr.mismatches
        await pit.browser.until("document.querySelector('[data-nothing]')")


async def tap(pit: Pit, hold: str, cards: list[str]) -> None:
    for c in cards:
        await pit.browser.evaluate(
            f"document.querySelector('[data-hold=\"{hold}\"] [data-pick=\"{c}\"]').click()")


async def test_a_baccarat_reads_hold_is_reconstructed_from_the_page_and_refusals(
        tmp_path: Path) -> None:
    async with pit_table(tmp_path, "tiger-buffalo-unreadable") as pit:
        dealt = await pit.round(0)
        hold = await pit.hold("reads")
        await pit.shot("reads-held")
        cards = list(pit.scenario.rounds[0].cards)
        # Checked in the page first: a card the reads contradict, then too few cards.
        await tap(pit, hold, ["8S"])
        assert "was read as 9S" in await pit.browser.evaluate(
            "document.querySelector('[data-check]').textContent")
        await pit.browser.evaluate(
            f"document.querySelector('[data-hold=\"{hold}\"] [data-clear]').click()")
        await tap(pit, hold, cards[:4])
        assert await pit.browser.evaluate(
            f"document.querySelector('[data-hold=\"{hold}\"] "
            "[data-action=reconstruct_deal]').disabled")
        await tap(pit, hold, cards[4:])
        assert await pit.browser.evaluate("document.querySelector('[data-check]').dataset.check"
                                          ) == "ok"
        await pit.shot("reads-reconstructed")
        # Kept for a second answer to the same hold, once the table has cleared it.
        await pit.browser.evaluate(
            "window.heldBefore = state.tables[Object.keys(state.tables)[0]].pit.holds[0]")
        answer = await pit.act(hold, "reconstruct_deal")
        assert answer["ok"], answer
        result = await asyncio.wait_for(dealt, 30)
        assert result is not None and (result["winner"], result["player_total"],
                                       result["banker_total"]) == ("tie", 9, 9)
        await pit.browser.until("document.querySelector('[data-nothing]')")
        # A second answer to the same hold, signed by the same key: refused by the table.
        table = pit.dealer.base.rsplit("/", 1)[1]
        again = await pit.reply_to(f"act('{table}', window.heldBefore, 'void_round')")
        assert not again["ok"] and again["error"]["code"] in ("wrong_state", "wrong_round")
        await refusals(pit, table)


async def try_key(pit: Pit, table: str) -> dict[str, Any]:
    """"Test my key" on the page: a status command it signs; the table's reply."""
    return await pit.reply_to(f"document.querySelector('[data-test-key=\"{table}\"]').click()")


async def refusals(pit: Pit, table: str) -> None:
    """Each a status command signed on the page: altered on its way, replayed, by a
    revoked credential, by a credential the table does not list (another table's)."""
    b = pit.browser
    # Watch what the page relays and, when told, change one byte of it on its way: what
    # a relay the server does not control, or a server that is not ours, could do.
    await b.evaluate("""(() => { const f = window.fetch; window.fetch = (u, o) => {
        if (u === '/pit/command') { const r = JSON.parse(o.body);
          window.relayedPayload = r.payload;
          if (window.tamper) { r.payload = r.payload.replace(/(\\d)Z"/,
              (m, d) => `${(Number(d) + 1) % 10}Z"`);
            o = {...o, body: JSON.stringify(r)}; } }
        return f(u, o); }; })()""")
    ok = await try_key(pit, table)
    assert ok["ok"], ok
    good = str(await b.evaluate("window.relayedPayload"))
    await b.evaluate("window.tamper = true")
    altered = await try_key(pit, table)
    await b.evaluate("window.tamper = false")
    assert altered["error"]["code"] == "denied" and "challenge" in altered["error"]["message"]
    # Replayed: the exact bytes the table accepted, relayed again; its second reply.
    cid = json.loads(good)["id"]
    status = await b.evaluate(
        "fetch('/pit/command', {method: 'POST', headers: {'Content-Type': "
        f"'application/json'}}, body: JSON.stringify({{table: '{table}', name: 'status', "
        f"payload: {json.dumps(good)}}})}}).then((r) => r.status)")
    assert status == 202
    replay = await b.until(
        "(() => { for (const t of Object.values(state.tables)) for (const r of t.pit.replies)"
        f" if (r.id === '{cid}' && !r.ok) return r; }})()")
    assert replay["error"]["code"] == "denied", replay
    # Revoked: `tabled principals revoke`, then a reload (what systemctl reload sends).
    out = tabled("principals", "revoke", "--config", str(pit.daemon.config_path), "alice")
    assert out.returncode == 0, out.stderr
    assert pit.daemon.proc is not None
    pit.daemon.proc.send_signal(signal.SIGHUP)
    for _ in range(20):
        revoked = await try_key(pit, table)
        if not revoked["ok"]:
            break
        await asyncio.sleep(0.25)
    assert revoked["error"]["code"] == "denied"
    assert "unknown credential" in revoked["error"]["message"]
    await pit.shot("refused")
    # Another table's credential: bob enrolled on this page, listed by no table here.
    await b.evaluate("localStorage.setItem('tabled.pit.credentials', '[]')")
    await b.send("WebAuthn.removeCredential", {"authenticatorId": pit.authenticator,
                                               "credentialId": await only_credential(pit)})
    await enrol(b, "bob")
    stranger = await try_key(pit, table)
    assert stranger["error"]["code"] == "denied"
    assert "unknown credential" in stranger["error"]["message"]


async def only_credential(pit: Pit) -> str:
    creds = await pit.browser.send("WebAuthn.getCredentials",
                                   {"authenticatorId": pit.authenticator})
    (c,) = creds["credentials"]
    return str(c["credentialId"])

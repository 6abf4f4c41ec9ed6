"""A simulated dealer: works the table through the daemon's MQTT contract.

It sends commands on ``cmd/*`` as a table-management system would, follows the
daemon's prompts for the next card (``prompt``), draws from the simulated shoe, and
loads the shoe with the shuffler's certified order, so every byte goes through the
real ports and every decision through the real daemon.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import itertools
import json
import secrets
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import aiomqtt
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from daemon.mqtt.client import NODELAY, Client
from daemon.security.authority import sign_command
from daemon.security.commands import round_scoped
from hil.errors import RunError
from hil.ports import DevicePort
from hil.scenario import Fault, ScenarioError
from hil.shoe import ShoeSim
from hil.shuffler import SHUFFLE_SECONDS, ShufflerSim
from hil.tumbler import TumblerSim

CUT_CARD_FROM_END = 14
BACKLOG = 512  # about fifteen rounds of messages
LOST = ""  # the inbox's word that the connection is gone (no topic is empty)


def prompt(t: str, b: dict[str, Any], *events: str) -> bool:
    """What a dealer acts on: a result, one of ``events``, or the card the rules require
    next (contract v2: a card event's ``next``, or a ``next_card`` that follows no card)."""
    if t == "results":
        return True
    ev = b.get("event") if t == "events" else None
    return ev == "next_card" or (ev == "card" and b.get("next") is not None) or ev in events


COMMAND_FAULTS = ("void", "confirm_order", "reset_device", "squeeze", "throw_again",
                  "void_settled", "confirm_result")  # SimDealer.give
# How the dealer files a correction (``type`` correction, on ``results``): not a result.
CORRECTION = "results:correction"


@dataclass
class SimDealer:
    host: str
    port: int
    base: str  # "{prefix}/{table}"
    key: Ed25519PrivateKey  # the supervisor key the dealer signs its commands with
    shoe: ShoeSim | None = None
    shoe_port: DevicePort | None = None
    shuffler: ShufflerSim | None = None
    tumbler: TumblerSim | None = None
    tumbler_port: DevicePort | None = None
    betting_seconds: float = 0.05
    reply_timeout: float = 30.0
    on_result: Callable[[dict[str, Any]], None] = lambda r: None
    results: list[dict[str, Any]] = field(default_factory=list)
    corrections: list[dict[str, Any]] = field(default_factory=list)
    seen: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # all, in order
    replies: list[dict[str, Any]] = field(default_factory=list)
    username: str | None = None  # a broker that wants a login (the shipped ACL)
    password: str | None = None

    def __post_init__(self) -> None:
        self._inbox: asyncio.Queue[tuple[str, dict[str, Any]]] = asyncio.Queue()
        # Arrived, not yet wanted. Bounded: every _expect scans it, and messages nobody
        # wants (card_drawn, device states) would otherwise pile up round after round,
        # each scan slower than the last (found by bench/end_to_end.py: the card latency
        # of a 1,000-round run grew to twice that of a 200-round one).
        self._backlog: collections.deque[tuple[str, dict[str, Any]]] = collections.deque(
            maxlen=BACKLOG)
        self._ids = itertools.count(1)
        # Unique across dealers and restarts: the daemon refuses a command id it has seen.
        self._id_prefix = f"dealer-{secrets.token_hex(3)}"
        self._client: aiomqtt.Client | None = None
        self.round_id: str | None = None  # the open round, as the last reply named it
        # Whether the table has a shoe, as its snapshot and shoe events say (None: not
        # heard yet): a dealer without one starts with new_shoe, not with an open_betting
        # the table refuses (wrong_state, 5.5.5; issue 26).
        self.shoe_in: bool | None = None
        self.hold: dict[str, Any] | None = None  # the last result_held seen

    async def _listen(self, client: aiomqtt.Client) -> None:
        try:
            await self._read(client)
        except aiomqtt.MqttError as exc:
            # The connection went (its node did): whoever waits for a message hears it
            # now, not when its timeout runs out, and can move to another node.
            self._inbox.put_nowait((LOST, {"error": str(exc)}))

    async def _read(self, client: aiomqtt.Client) -> None:
        async for m in client.messages:
            raw = m.payload if isinstance(m.payload, bytes) else str(m.payload).encode()
            topic = str(m.topic)[len(self.base) + 1:]
            if topic.startswith("cmd/"):
                continue  # commands, ours or anyone's: not the table's word
            body = json.loads(raw)
            if topic == "results" and body.get("type") == "correction":
                # A Pit correction of a round already published (Tai Sai 5.6) comes on
                # ``results`` too, but it is no round's result: kept apart, so that no wait
                # for a round's result takes it for one.
                topic = CORRECTION
                self.corrections.append(body)
            self.seen.append((topic, body))
            if topic == "events" and body.get("event") == "result_held":
                self.hold = body  # what the Pit owes: its answer names hold_id
            if topic == "snapshot":
                self.shoe_in = body.get("shoe") is not None
            elif topic == "events" and body.get("event") in ("shoe_loaded", "shoe_ended"):
                self.shoe_in = body["event"] == "shoe_loaded"
            if topic == "results":
                self.results.append(body)
                self.on_result(body)
            self._inbox.put_nowait((topic, body))

    async def _expect(self, match: Callable[[str, dict[str, Any]], bool],
                      timeout: float = 30.0, *, fresh: bool = False) -> dict[str, Any]:
        """The first message, arrived or arriving, that matches; others wait their turn.
        ``fresh``: only one still to arrive (a state change after something we did)."""
        for i, (topic, body) in enumerate(() if fresh else self._backlog):
            if match(topic, body):
                del self._backlog[i]
                return body
        async with asyncio.timeout(timeout):
            while True:
                topic, body = await self._inbox.get()
                if topic == LOST:
                    raise aiomqtt.MqttError(f"the broker connection was lost: {body['error']}")
                if match(topic, body):
                    return body
                self._backlog.append((topic, body))

    def take_result(self) -> dict[str, Any] | None:
        """A result already in: after a fault (a void, a restart) it overtakes prompts
        that were published before it."""
        for i, (topic, body) in enumerate(self._backlog):
            if topic == "results":
                del self._backlog[i]
                return body
        return None

    async def give(self, f: Fault) -> None:
        """A scenario fault that is a command someone at the table gives (COMMAND_FAULTS),
        signed with this dealer's key; a refusal stops the run, naming why."""
        if f.fault == "void":
            named = {"irregularity": str(f.args["irregularity"])} \
                if "irregularity" in f.args else {}
            name, answer = "void_round", await self.command(
                "void_round", reason=str(f.args.get("reason", "scenario")), **named)
        elif f.fault == "confirm_order":
            swap = {"swap": str(f.args["swap"])} if "swap" in f.args else {}
            held = await self.open_hold()
            name, answer = "confirm_order", await self.command("confirm_order", **swap,
                                                               **self.answering(held))
        elif f.fault == "reset_device":
            name, answer = "reset_dealing_device", await self.command("reset_dealing_device")
            if answer["ok"]:
                self.forget()  # prompts from before the reset
                await asyncio.sleep(self.betting_seconds)  # players withdraw, bet again
                name, answer = "close_betting", await self.command("close_betting")
        elif f.fault == "squeeze":  # IP 3.14: the House allowed the squeeze
            name, answer = "declare_squeeze", await self.command("declare_squeeze")
        elif f.fault == "throw_again":  # Tai Sai 5.14: the Pit has the dice thrown again
            name, answer = "throw_again", await self.command("throw_again")
        elif f.fault == "void_settled":  # Tai Sai 5.6: a round already published
            named = {"irregularity": str(f.args["irregularity"])} \
                if "irregularity" in f.args else {}
            name, answer = "void_settled_round", await self.command(
                "void_settled_round", round_id=str(f.args["round_id"]),
                reason=str(f.args.get("reason", "scenario")), **named)
        elif f.fault == "confirm_result":  # D23: a disputed result stands as published
            name, answer = "confirm_result", await self.command(
                "confirm_result", round_id=str(f.args["round_id"]))
        else:
            raise ScenarioError("this scenario", [f"{f.fault} is not a command fault"])
        if not answer["ok"]:
            raise RunError(f"{name} refused: {answer.get('error')}")

    async def pit_decides(self, held: dict[str, Any], draws: list[int] | None = None) -> None:
        """The Pit's word on a held result (the simulated Pit sees the cards on the
        table): the order of a double draw as read (D17), or, for a draw without a
        trustworthy read, the deal reconstructed from the cards that left the shoe (D18).
        What the controller refuses (the cards on the table do not make a deal), the Pit
        voids. ``draws``: the draws the Pit puts in the deal, if not those held."""
        try:
            if held.get("reason") in ("reads", "pit"):
                await self.reconstruct(draws or [int(n) for n, _ in held["reads"]],
                                       held.get("round_id"), held)
                return
            answer = await self.command("confirm_order", **self.answering(held))
            if not answer["ok"]:
                raise RunError(f"confirm_order refused: {answer.get('error')}")
        except RuntimeError as exc:
            answer = await self.command("void_round", reason=f"the Pit cannot settle it: {exc}")
            if not answer["ok"]:
                raise RunError(f"void_round refused: {answer.get('error')}") from None

    def answering(self, held: dict[str, Any] | None = None) -> dict[str, str]:
        """The ``hold`` argument of an answer to a result_held (this one, or the last)."""
        held = held or self.hold
        return {"hold": str(held["hold_id"])} if held and "hold_id" in held else {}

    async def open_hold(self, timeout: float = 10.0) -> dict[str, Any] | None:
        """The result_held this round's Pit answers: it is published with the card that
        completes the deal, which may still be on its way when the Pit acts."""
        loop = asyncio.get_running_loop()
        until = loop.time() + timeout
        while loop.time() < until:
            if self.hold is not None and self.hold.get("round_id") == self.round_id:
                return self.hold
            await asyncio.sleep(0.02)
        return None

    async def hold_round(self, reason: str) -> dict[str, Any]:
        """The Pit holds the deal (a card on the table was never read); returns the
        result_held that follows, which its reconstruction answers."""
        answer = await self.command("hold_round", reason=reason)
        if not answer["ok"]:
            raise RunError(f"hold_round refused: {answer.get('error')}")
        return await self._expect(lambda t, b: t == "events" and
                                  b.get("event") == "result_held" and b.get("reason") == "pit")

    async def reconstruct(self, draws: list[int], round_id: str | None = None,
                          held: dict[str, Any] | None = None) -> None:
        """reconstruct_deal with the physical cards of these draws, in order."""
        cards = " ".join(self.card_of(n) for n in draws)
        args = {"cards": cards, **({"round_id": round_id} if round_id else {}),
                **self.answering(held)}
        answer = await self.command("reconstruct_deal", **args)
        if not answer["ok"]:
            raise RunError(f"reconstruct_deal refused: {answer.get('error')}")

    def card_of(self, draw_no: int) -> str:
        """What the Pit says of a draw: the card on the table (the Pit sees it)."""
        assert self.shoe is not None and self.shoe.shoe is not None
        return self.shoe.shoe.cards[draw_no - 1]

    def forget(self) -> None:
        """Drop whatever arrived and was not yet wanted: after an interrupted round, its
        late messages must not answer the next round's questions."""
        self._backlog.clear()
        while not self._inbox.empty():
            self._inbox.get_nowait()

    async def command(self, name: str, **args: str) -> dict[str, Any]:
        """Send a signed command and wait for its reply. A round-scoped command names the
        open round, which every reply states (asked for when not yet known)."""
        assert self._client is not None
        if round_scoped(name) and "round_id" not in args:
            if self.round_id is None:
                await self.command("status")
            args["round_id"] = self.round_id or "none"
        cid = f"{self._id_prefix}-{next(self._ids)}"
        body = sign_command(self.key, self.base.rsplit("/", 1)[-1], name, cid, time.time(),
                            **args)
        await self._client.publish(f"{self.base}/cmd/{name}", json.dumps(body), qos=1)
        answer = await self._expect(lambda t, b: t == "replies" and b.get("id") == cid,
                                    self.reply_timeout)
        self.replies.append(answer)
        self.round_id = answer.get("round_id")
        return answer

    async def _new_shoe(self) -> None:
        assert self.shuffler is not None
        # As long as the shuffle takes at the shuffler's speed, and then some: pressed
        # again sooner, a shuffler still at work refuses (at --speed 0.1 a shuffle takes
        # 30 s: device_command_failed, issue 26).
        patience = SHUFFLE_SECONDS / self.shuffler.speed + 15.0
        for attempt in range(3):  # a shuffle lost to a device fault: press again
            answer = await self.command("new_shoe")
            if not answer["ok"]:
                raise RunError(f"new_shoe refused: {answer}")
            try:
                await self._expect(lambda t, b: t == "events" and
                                   b.get("event") == "shuffle_certified", patience)
                break
            except TimeoutError:
                if attempt == 2:
                    raise
        assert self.shuffler and self.shoe and self.shoe_port
        order = self.shuffler.last_order
        self.shoe.load(order, self.shoe_port.now(), cut_at=len(order) - CUT_CARD_FROM_END)
        self.shoe_port.kick()
        await self._expect(lambda t, b: t == "events" and b.get("event") == "shoe_loaded")

    async def _draw(self) -> None:
        assert self.shoe and self.shoe_port
        for _ in range(500):  # the gate may still be opening (slow on a loaded machine)
            if self.shoe.draw(self.shoe_port.now()) is not None:
                self.shoe_port.kick()
                return
            await asyncio.sleep(0.01)
        raise RunError("the shoe gate never opened")

    async def throw_round(self) -> dict[str, Any]:
        """Tai Sai: bets, "No more bets", then the button once the tumbler is armed."""
        result = await self.throw()
        assert result is not None  # this dealer raises where a round cannot be thrown
        return result

    async def press_when_armed(self) -> None:
        """The button, once the armed light is on; not at all if the table publishes the
        round's result first (voided, or thrown before a restart). A dealer watches the
        light and the table, never a clock: pressing after a fixed wait threw the dice
        disarmed on a loaded machine, and not pressing left the round unthrown."""
        assert self.tumbler and self.tumbler_port
        tumbler, rid = self.tumbler, self.round_id

        def over() -> bool:
            return any(r.get("round_id") == rid for r in self.results)

        await self.until(lambda: tumbler.armed or over(),
                         "the tumbler's armed light, or the round's result")
        if not over():
            tumbler.press_button(self.tumbler_port.now())
            self.tumbler_port.kick()

    async def until(self, sign: Callable[[], bool], what: str) -> None:
        """Wait for a sign at the table (a device's light, what the table published), as
        a person watches for it. PATIENCE only bounds the wait: past it the run stops
        (RunError), it is never a cue to act."""
        loop = asyncio.get_running_loop()
        give_up = loop.time() + self.PATIENCE
        while not sign():
            if loop.time() > give_up:
                raise RunError(f"waited {self.PATIENCE:g} s for {what}")
            await asyncio.sleep(0.01)

    async def deal_round(self) -> dict[str, Any]:
        if self.tumbler is not None:
            return await self.throw_round()
        result = await self.deal()
        assert result is not None  # this dealer raises where a round cannot be dealt
        return result

    # -- the dealer loop of a card game: the only one. Each step is a method that the
    # scripted dealer (hil/runner.py: faults where the scenario puts them) and the
    # operator's (hil/operator.py: a person told what to do) give their own way.

    PATIENCE: ClassVar[float] = 30.0  # how long a prompt may take (a person is slower)

    async def deal(self) -> dict[str, Any] | None:
        """One round, from "Place your bets" to its result (None: the table refused to
        open one), following the daemon's prompts: the next card, an insurance window, a
        result held for the Pit."""
        if not await self.bets():
            return None
        while True:
            body = self.pending_result() or await self._expect(
                lambda t, b: prompt(t, b, "insurance_offered", "result_held"), self.PATIENCE)
            if "seq" in body:  # the result of this round
                return body
            if body["event"] == "result_held":  # the Pit's word (D17, D18)
                await self.held(body)
                continue
            if body["event"] == "insurance_offered":
                await asyncio.sleep(self.betting_seconds)  # players place insurance
                if await self.offer_insurance(body):
                    continue
            await self.next_card(body)

    async def bets(self) -> bool:
        """The start of every round, cards or dice: open, bets placed, "No more bets"
        (step 0 after it). False: the table refused to open a round."""
        if not await self.open_round():
            return False
        await self.during_betting()
        await asyncio.sleep(self.betting_seconds)
        await self.close_round()
        await self.after_card(0)
        return True

    async def throw(self) -> dict[str, Any] | None:
        """One round of a dice game, the same steps as ``deal``: bets, "No more bets",
        the button, the dice at rest, the result (None: the table refused to open one)."""
        if not await self.bets():
            return None
        await self.press()
        await self.at_rest()
        return self.pending_result() or await self._expect(lambda t, b: t == "results",
                                                           self.PATIENCE)

    async def press(self) -> None:
        await self.press_when_armed()

    async def at_rest(self) -> None:
        """Anything done once the dice are at rest, before their result."""

    async def open_round(self) -> bool:
        if self.tumbler is None:
            if self.shoe_in is None:  # the retained snapshot says; it comes at once
                with contextlib.suppress(TimeoutError):
                    await self._expect(lambda t, b: t == "snapshot", 2.0)
            if self.shoe_in is False:
                await self._new_shoe()
        opened = await self.command("open_betting")
        if not opened["ok"] and self.tumbler is None:  # the shoe ran out meanwhile
            await self._new_shoe()
            opened = await self.command("open_betting")
        if not opened["ok"]:
            raise RunError(f"open_betting refused: {opened}")
        return True

    async def during_betting(self) -> None:
        """Anything done while bets are placed (nothing, at a well-run table)."""

    async def close_round(self) -> None:
        closed = await self.command("close_betting")
        if not closed["ok"]:
            raise RunError(f"close_betting refused: {closed}")

    async def after_card(self, n: int) -> None:
        """Anything done after the round's n-th card (0: after "No more bets")."""

    def pending_result(self) -> dict[str, Any] | None:
        """A result to take before any prompt (none: prompts and results come in order)."""
        return None

    async def held(self, body: dict[str, Any]) -> None:
        await self.pit_decides(body)

    async def offer_insurance(self, body: dict[str, Any]) -> bool:
        """Offer insurance and close the window; False: it stays open, the dealer draws."""
        answer = await self.command("close_insurance")
        if not answer["ok"]:
            raise RunError(f"close_insurance refused: {answer}")
        return True

    async def next_card(self, body: dict[str, Any]) -> None:
        await self._draw()

    @contextlib.asynccontextmanager
    async def session(self) -> AsyncIterator[SimDealer]:
        """Connected, subscribed, and the table seen online: ready to deal."""
        # The daemon's client: a connection lost while nobody reads leaves no unretrieved
        # exception behind (issue 26).
        async with Client(self.host, self.port, identifier=f"sim-{self._id_prefix}",
                          username=self.username, password=self.password,
                          socket_options=NODELAY) as client:
            self._client = client
            await client.subscribe(f"{self.base}/#", qos=1)
            listener = asyncio.create_task(self._listen(client))
            try:
                # Commands are heard once the table is online (retained status).
                await self._expect(lambda t, b: t == "status" and b.get("state") == "online")
                yield self
            finally:
                listener.cancel()
                self._client = None

    async def resume_round(self, patience: float = 2.0) -> dict[str, Any]:
        """Deal (or throw) one round from wherever the table is: after a restart the round
        in progress may have been continued (5.4.1), and its next_card prompt may have gone
        by, so when nothing arrives the dealer tries the shoe (the gate opens only if a card
        is wanted)."""
        state = (await self.command("status"))["state"]
        if state == "idle":
            return await self.deal_round()
        if state == "betting_open":
            closed = await self.command("close_betting")
            if not closed["ok"]:
                raise RunError(f"close_betting refused: {closed}")
        if self.tumbler is not None:  # the throw awaited: the button, once armed
            await self.press_when_armed()
            return await self._expect(lambda t, b: t == "results")
        while True:
            try:
                body = await self._expect(lambda t, b: prompt(t, b, "result_held"),
                                          timeout=patience)
            except TimeoutError:
                # Its hold may have gone by too: refused unless a result waits (D17).
                await self.command("confirm_order", **self.answering())
                body = {"event": "next_card"}
            if "seq" in body:
                return body
            if body["event"] == "result_held":
                with contextlib.suppress(RuntimeError):  # already given before the restart
                    await self.pit_decides(body)
                continue
            with contextlib.suppress(RuntimeError):  # the gate stayed shut: ask again
                await self._draw()

    async def run(self, rounds: int) -> list[dict[str, Any]]:
        async with self.session():
            for _ in range(rounds):
                await self.deal_round()
        return self.results

"""One device: open its port, handshake, supervise it, reconnect when it goes away.

A session is: open the transport, start a link session, IDENTIFY, check the kind and the
protocol version, then deliver messages until something ends it. It ends on a
transport error (unplugged), a link failure, a missed heartbeat, a firmware reboot
(peer reset), or a wrong protocol version; the reason and the last raw frames are
logged, and the driver reconnects with backoff without restarting the daemon. After a
reboot the device is identified again before any command is sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import random
from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass, field, fields
from enum import StrEnum
from typing import Any, Protocol

from daemon.drivers.device_url import DeviceUrl, SerialUrl
from daemon.drivers.transports import Transport, TransportError, open_transport
from daemon.errors import DeviceError
from firmware_protocols.common import (
    CommandResult,
    DeviceKind,
    Fault,
    FaultCleared,
    Heartbeat,
    Identify,
    IdentifyReply,
    StatusReply,
    out_of_range,
)
from firmware_protocols.endpoint import BadMessage, Endpoint, EndpointEvent, Numbered
from firmware_protocols.framing import BYTE_TIME_115200, DecodeError
from firmware_protocols.link import (
    Link,
    LinkFailed,
    LinkStats,
    PeerReset,
    SessionSummary,
    Stamp,
)
from firmware_protocols.wire import Catalogue, Message

log = logging.getLogger(__name__)

IDLE_TICK = 0.5  # seconds between link polls while connecting or handshaking
MAX_TICK = 5.0  # the longest a ready link sleeps: well inside the watchdog's link_stall


class DeviceState(StrEnum):
    CONNECTING = "connecting"
    HANDSHAKING = "handshaking"
    READY = "ready"
    LOST = "lost"
    INCOMPATIBLE = "incompatible"  # wrong device kind or protocol version


class SessionEndedError(DeviceError):
    """Why a device session ended; the driver reconnects."""

    def __init__(self, reason: str, state: DeviceState = DeviceState.LOST) -> None:
        super().__init__(reason)
        self.state = state


class DeviceNotReadyError(DeviceError, RuntimeError):
    """The device cannot take or answer a command. ``sent``: the command had already gone
    out (the session ended while it waited for its answer), so it may have been carried
    out; otherwise it was never sent."""

    def __init__(self, reason: str, *, sent: bool = False) -> None:
        super().__init__(reason)
        self.sent = sent
        self.number = 0  # the command number it went out under, when sent


class AnswerTimeoutError(DeviceError, TimeoutError):
    """No answer to a command within its time; it went out under ``number`` (its
    command number: sent again, the device knows it by it)."""

    def __init__(self, reason: str, number: int) -> None:
        super().__init__(reason)
        self.number = number


@dataclass
class Watch:
    """Events of ``kinds`` the device sends from now on (``after``: the device's last
    (origin, event number) heard when it began; an older event re-sent is not news)."""

    kinds: tuple[type[Message], ...]
    after: tuple[int, int] | None
    seen: list[Message] = field(default_factory=list)


@dataclass
class DeviceStatus:
    name: str
    url: str
    state: DeviceState = DeviceState.CONNECTING
    model: str = ""
    firmware: str = ""
    serial: str = ""
    protocol_version: int = 0
    fault: int = 0
    detail: str = ""
    sessions: int = 0
    decode_errors: int = 0

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["state"] = self.state.value
        return d


def session_ended_line(name: str, reason: str, dump: list[str]) -> str:
    """One log line for an ended session: the device named once, then the last frames
    (only if any were exchanged), so journald and grep see one whole message."""
    while reason.startswith(f"{name}: "):
        reason = reason[len(name) + 2:]
    frames = f"; last {min(len(dump), 20)} frames: {' | '.join(dump[-20:])}" if dump else ""
    return f"{name}: {reason}{frames}"


class DeviceListener(Protocol):
    """The table a driver works for: the upper layer whose methods the driver calls as
    things happen on the link (as bellows' ASH layer calls its EZSP protocol object).
    Each is called on the event loop; what one read (or tick) brought is handled inside
    ``together``. The table's is daemon/service/devices.py; a driver used alone (tabled
    doctor, a test of the link) subclasses ``Unattended``."""

    def together(self) -> AbstractContextManager[None]:
        """Wraps the handling of everything one read (or tick) brought: the table
        journals it as one group commit (daemon/service/effects.py)."""

    def device_message(self, device: str, message: Message) -> None:
        """A message from the device within its documented limits, answers included."""

    def device_answered(self, device: str, command: Message, answer: Message) -> None:
        """The device answered a command this driver sent: called as the answer is read,
        in its place among the device's events, before any the same read brought after
        it (the asker resumes later: a tumbler's Arm confirmed before its activation must
        not be taken after the dice that followed, Tai Sai 5.14)."""

    def device_status(self, status: DeviceStatus) -> None:
        """The session's state, or the device's fault, changed."""

    def device_problem(self, device: str, detail: str) -> None:
        """Line noise or a malformed message: journalled as an alert."""

    def device_rejected(self, device: str, message: Message, detail: str) -> None:
        """A message with a field outside its documented range (firmware_protocols
        LIMITS): not delivered to ``device_message``; the table decides (an alert, the
        round to the Pit)."""

    def device_impostor(self, device: str, detail: str) -> None:
        """The device reports a serial number other than the one the config pins
        (devices.serials): refused; the table journals an alert."""


class Unattended:
    """A listener that hears nothing: a driver used alone overrides what it wants."""

    def together(self) -> AbstractContextManager[None]:
        return contextlib.nullcontext()

    def device_message(self, device: str, message: Message) -> None:
        pass

    def device_answered(self, device: str, command: Message, answer: Message) -> None:
        pass

    def device_status(self, status: DeviceStatus) -> None:
        pass

    def device_problem(self, device: str, detail: str) -> None:
        pass

    def device_rejected(self, device: str, message: Message, detail: str) -> None:
        pass

    def device_impostor(self, device: str, detail: str) -> None:
        pass


@dataclass
class DeviceDriver:
    name: str
    url: DeviceUrl
    catalogue: Catalogue
    kind: DeviceKind
    listener: DeviceListener
    # The serial number the table's config pins (devices.serials): a device that reports
    # another is refused, whatever its USB ids say.
    serial: str | None = None
    heartbeat_timeout: float = 3.5
    handshake_timeout: float = 3.0
    command_timeout: float = 3.0
    backoff_initial: float = 0.2
    backoff_max: float = 5.0
    status: DeviceStatus = field(init=False)

    def __post_init__(self) -> None:
        self.status = DeviceStatus(self.name, str(self.url))
        self._tags = itertools.cycle(range(1, 256))
        # Version 3: the host's ORIGIN, chosen once, and its command numbers, which go on
        # across sessions (the spec's NUM): a command sent again keeps its identity.
        self._origin = random.getrandbits(32)
        self._numbered = 0
        self._heard: tuple[int, int] | None = None  # the device's last (origin, number)
        self._watches: list[Watch] = []
        self._pending: dict[int, asyncio.Future[Message]] = {}
        # Version 3: each pending tag's command number, which its answer must echo (a tag
        # wraps after 255 commands; an old answer with a reused tag is not this one's).
        self._numbers: dict[int, int] = {}
        # The identity of the message being handed to the listener now
        # (version 3), else None: the table drops events it has already seen by it.
        self.stamp: Stamp | None = None
        # Commands answered by a message without a tag (request_order by order_chunk).
        self._untagged: list[tuple[Message, asyncio.Future[Message]]] = []
        self._previous: SessionSummary | None = None  # named in the next session's RST
        self._foreign_version = ""  # what the decoder saw of a version we do not speak
        self._tasks: asyncio.TaskGroup | None = None  # the session's, for a re-handshake
        self._transport: Transport | None = None
        self._endpoint: Endpoint | None = None
        self._ready = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        self._last_rx = 0.0
        self._tick = asyncio.Event()  # set when a send created a link deadline sooner
        self._tick_at = float("inf")  # when the ticker wakes unless set (loop time)
        self._impostor: str | None = None  # the last refused serial, alerted once
        self.progress_at = self._loop.time()  # the watchdog's proof this link is not stuck
        # Each session has a new Link, whose counts end with it: the ended ones' sum,
        # for counts that never go back (daemon/system/metrics.py).
        self._ended_links = LinkStats()
        self.sessions_ended = 0

    # -- public ---------------------------------------------------------------------------

    @property
    def ready(self) -> bool:
        return self.status.state is DeviceState.READY

    async def wait_ready(self, timeout: float | None = None) -> None:
        async with asyncio.timeout(timeout):
            await self._ready.wait()

    async def command(self, message: Message, *, number: int | None = None) -> Message:
        """Send a host command (its tag is set here) and return the device's answer.
        ``number``: send it again under the command number it went out with (its answer
        was lost: DeviceNotReadyError.number, AnswerTimeoutError.number), so that a device
        that carried it out does not do it twice (version 3)."""
        if not self.ready or self._endpoint is None:
            raise DeviceNotReadyError(f"{self.name} is {self.status.state.value}: "
                                      f"{self.status.detail or 'not ready'}")
        return await self._request(message, number=number)

    @contextlib.contextmanager
    def watching(self, kinds: tuple[type[Message], ...]) -> Iterator[Watch]:
        """Collect the events of ``kinds`` the device sends while inside (command_outcome:
        what shows a command was carried out, when its answer was lost)."""
        watch = Watch(kinds, self._heard)
        self._watches.append(watch)
        try:
            yield watch
        finally:
            self._watches.remove(watch)

    def link_totals(self) -> LinkStats:
        """The link's counts over every session of this process, the open one included."""
        total = LinkStats(**asdict(self._ended_links))
        if self._transport is not None and self._endpoint is not None:
            _add(total, self._endpoint.link.stats)
        return total

    async def run(self) -> None:
        backoff = self.backoff_initial
        while True:
            reached_ready = False
            self.progress_at = self._loop.time()
            try:
                await self._session()
            except* SessionEndedError as group:
                exc = group.exceptions[0]
                assert isinstance(exc, SessionEndedError)
                reached_ready = self.status.sessions > 0 and self._ready.is_set()
                self._end(exc.state, str(exc))
            except* TransportError as group:
                reached_ready = self._ready.is_set()
                self._end(DeviceState.LOST, str(group.exceptions[0]))
            except* Exception as group:  # a bug or an unforeseen device error: keep running
                log.exception("%s: session failed unexpectedly", self.name,
                              exc_info=group.exceptions[0])
                reached_ready = self._ready.is_set()
                self._end(DeviceState.LOST, f"{self.name}: unexpected error: "
                                            f"{group.exceptions[0]!r}")
            if reached_ready:
                backoff = self.backoff_initial
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, self.backoff_max)

    # -- a session ------------------------------------------------------------------------

    def _set(self, state: DeviceState, detail: str = "") -> None:
        self.status.state = state
        self.status.detail = detail
        self.listener.device_status(self.status)

    def _end(self, state: DeviceState, reason: str) -> None:
        self._ready.clear()
        for fut in [*self._pending.values(), *(f for _, f in self._untagged)]:
            if not fut.done():
                fut.set_exception(DeviceNotReadyError(f"{self.name}: {reason}", sent=True))
        self._pending.clear()
        self._untagged.clear()
        dump = self._endpoint.dump() if self._endpoint else []
        self.sessions_ended += 1
        log.warning("%s", session_ended_line(self.name, reason, dump))
        self._set(state, reason)

    async def _session(self) -> None:
        self._set(DeviceState.CONNECTING)
        transport = await open_transport(self.name, self.url)
        self._transport = transport
        try:
            now = self._loop.time()
            byte_time = 10 / self.url.baud if isinstance(self.url, SerialUrl) \
                else BYTE_TIME_115200
            self._foreign_version = ""
            self._endpoint = Endpoint(self.catalogue, Link(
                random.getrandbits(32), byte_time=byte_time, resume=self._previous,
                origin=self._origin, numbered=self._numbered))
            self._endpoint.connect(now)
            self._last_rx = now
            self._set(DeviceState.HANDSHAKING)
            async with asyncio.TaskGroup() as tg:
                self._tasks = tg
                tg.create_task(self._reader(transport))
                tg.create_task(self._ticker(transport))
                await self._flush()
                await self._handshake()
                await asyncio.Event().wait()  # until the reader or ticker ends the session
        finally:
            # The next session tells the device what of this one arrived here, so it
            # re-sends only what did not (its messages are not lost with the session).
            if self._endpoint is not None:
                self._previous = self._endpoint.link.summary()
                self._numbered = self._endpoint.link.last_number
                _add(self._ended_links, self._endpoint.link.stats)
            self._transport = None
            await transport.close()

    async def _handshake(self) -> None:
        try:
            reply = await self._request(Identify(0), timeout=self.handshake_timeout)
        except DeviceNotReadyError:
            return  # the device started yet another session: a newer handshake runs
        except TimeoutError:
            if self._foreign_version:
                raise SessionEndedError(f"{self.name}: {self._foreign_version}",
                                        DeviceState.INCOMPATIBLE) from None
            raise SessionEndedError(f"{self.name}: no answer to IDENTIFY within "
                               f"{self.handshake_timeout}s") from None
        if not isinstance(reply, IdentifyReply):
            raise SessionEndedError(f"{self.name}: unexpected answer to IDENTIFY: {reply.NAME}")
        if reply.kind != self.kind:
            raise SessionEndedError(f"{self.name}: the device at {self.url} is a "
                               f"{_kind_name(reply.kind)}, not a {self.kind.name.lower()}",
                               DeviceState.INCOMPATIBLE)
        session_version = self._endpoint.link.session_version if self._endpoint else 0
        if reply.protocol_version < session_version:
            raise SessionEndedError(f"{self.name}: device says it speaks protocol version "
                                    f"{reply.protocol_version}, but its link runs version "
                                    f"{session_version}", DeviceState.INCOMPATIBLE)
        if self.serial is not None and reply.serial != self.serial:
            detail = (f"{self.name}: the device at {self.url} reports serial "
                      f"{reply.serial[:64]!r}, not {self.serial!r} (devices.serials."
                      f"{self.name}): refused")
            if reply.serial != self._impostor:  # once per device, not per retry
                self._impostor = reply.serial
                self.listener.device_impostor(self.name, detail)
            raise SessionEndedError(detail, DeviceState.INCOMPATIBLE)
        s = self.status
        s.model, s.firmware, s.serial = reply.model, reply.firmware, reply.serial
        s.protocol_version, s.sessions = session_version, s.sessions + 1
        self._ready.set()
        self._set(DeviceState.READY)
        log.info("%s ready: %s firmware %s serial %s", self.name, s.model, s.firmware, s.serial)

    async def _request(self, message: Message, timeout: float | None = None,
                       number: int | None = None) -> Message:
        assert self._endpoint is not None
        tag = next(self._tags)
        if hasattr(message, "tag"):
            message = type(message)(**{**message.__dict__, "tag": tag})
        fut: asyncio.Future[Message] = self._loop.create_future()
        self._pending[tag] = fut
        untagged = (message, fut)
        self._untagged.append(untagged)
        self._endpoint.send(message, self._loop.time(), number=number)
        sent_as = self._numbers[tag] = number or self._endpoint.link.last_number
        await self._flush()
        wait = timeout or self.command_timeout
        try:
            async with asyncio.timeout(wait):
                return await fut
        except DeviceNotReadyError as exc:
            exc.number = sent_as
            raise
        except TimeoutError:
            # asyncio's TimeoutError has no text: say what was waited for, and how long
            # (an alert with an empty reason told the Pit nothing, issue #24).
            raise AnswerTimeoutError(f"no answer to {message.NAME} (tag {tag}) from the "
                                     f"{self.name} within {wait:g} s", sent_as) from None
        finally:
            self._pending.pop(tag, None)
            self._numbers.pop(tag, None)
            if untagged in self._untagged:
                self._untagged.remove(untagged)

    async def _flush(self) -> None:
        if self._endpoint is not None and self._transport is not None:
            data = self._endpoint.take_output()
            if data:
                # Wake the ticker only if this send made a retransmit due before it wakes
                # anyway: waking it for every frame sent was 3.6% of the daemon's CPU at
                # full dealer speed, its timeout and event about 2% more (py-spy over
                # `.venv/bin/python -m bench.end_to_end`, docs/performance.md).
                deadline = self._endpoint.next_deadline()
                if deadline is not None and deadline < self._tick_at:
                    self._tick.set()
                await self._transport.write(data)

    async def _reader(self, transport: Transport) -> None:
        while True:
            data = await transport.read()
            assert self._endpoint is not None
            with self.listener.together():
                self._handle(self._endpoint.feed(data, self._loop.time()))
            await self._flush()

    async def _ticker(self, transport: Transport) -> None:
        while True:
            assert self._endpoint is not None
            # Sleep until something is due: the link's next retransmit, or the moment the
            # device's heartbeat would be missed; a new send wakes it. A fixed 50 ms tick
            # cost 0.75% CPU idle, a 0.5 s one 0.35% (the idle CPU that
            # `.venv/bin/python -m bench.end_to_end` measures, docs/performance.md).
            now = self._loop.time()
            wait = self._next_wait(now)
            self._tick_at = now + wait
            self._tick.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(wait):
                    await self._tick.wait()
            now = self.progress_at = self._tick_at = self._loop.time()
            with self.listener.together():
                self._handle(self._endpoint.poll(now))
            await self._flush()
            silent = now - self._last_rx
            if self.ready and silent > self.heartbeat_timeout:
                raise SessionEndedError(f"{self.name}: no heartbeat for {silent:.1f}s")

    def _next_wait(self, now: float) -> float:
        assert self._endpoint is not None
        due = [IDLE_TICK if not self.ready else MAX_TICK]
        if self.ready:  # just after the heartbeat would be late
            due.append(self._last_rx + self.heartbeat_timeout + 0.01 - now)
        deadline = self._endpoint.next_deadline()
        if deadline is not None:
            due.append(deadline - now)
        return max(0.0, min(due))

    def _handle(self, events: list[EndpointEvent]) -> None:
        for e in events:
            if isinstance(e, Numbered):
                self._last_rx = self._loop.time()
                self.stamp = e.stamp
                try:
                    self._on_message(e.message)
                finally:
                    self.stamp = None
                    self._heard = (e.stamp.origin, e.stamp.number)
            elif isinstance(e, Message):
                self._last_rx = self._loop.time()
                self._on_message(e)
            elif isinstance(e, DecodeError):
                self.status.decode_errors += 1
                if e.reason == "unsupported_version":  # ignored, as the spec says; but a
                    self._foreign_version = e.detail  # handshake that fails names it
                # The link resends what was lost, so line noise is counted, and reported
                # on the first error and then every 100th, not per frame.
                if self.status.decode_errors % 100 == 1:
                    self.listener.device_problem(
                        self.name, f"{self.name}: line errors, "
                        f"{self.status.decode_errors} so far (last: {e})")
            elif isinstance(e, BadMessage):
                log.warning("%s: malformed message 0x%02X: %s", self.name, e.msg, e.error)
                self.listener.device_problem(self.name, f"{self.name}: malformed message "
                                             f"0x{e.msg:02X} ({e.payload.hex()}): {e.error}")
            elif isinstance(e, PeerReset):
                self._peer_reset(e)
            elif isinstance(e, LinkFailed):
                raise SessionEndedError(f"{self.name}: link failed: {e.reason}")

    def _peer_reset(self, e: PeerReset) -> None:
        """The device began a new session: it rebooted, or its link failed. The link has
        answered it in place, on the same port: closing the port instead lost the RSTACK
        that tells the device what arrived here, so it sent everything again. The device
        is identified again before any command."""
        reason = (f"{self.name}: the device restarted (firmware reboot) or began a new "
                  f"session after a link failure; {len(e.lost)} command(s) it had not "
                  f"received discarded")
        log.warning("%s", reason)
        self._ready.clear()
        for fut in [*self._pending.values(), *(f for _, f in self._untagged)]:
            if not fut.done():
                fut.set_exception(DeviceNotReadyError(reason, sent=True))
        self._pending.clear()
        self._untagged.clear()
        self._set(DeviceState.HANDSHAKING, reason)
        assert self._tasks is not None
        self._tasks.create_task(self._handshake())

    def _on_message(self, msg: Message) -> None:
        problems = out_of_range(msg)
        tag = getattr(msg, "tag", None)
        if tag is not None and tag in self._pending and self.stamp is not None and \
                msg.SENDER == "device" and self.stamp.reply_to != self._numbers.get(tag):
            # An answer to an earlier command that had the same tag (re-sent by a device
            # that did not know it had arrived): not this command's answer.
            log.warning("%s: %s answers command %d, not %d: an earlier command's answer, "
                        "ignored", self.name, msg.NAME, self.stamp.reply_to,
                        self._numbers.get(tag, 0))
            return
        if problems:
            # Checked here, at the boundary, never by an exception further in: the session
            # stays up, and the raw frame goes with the alert.
            log.warning("%s: %s", self.name, "; ".join(problems))
            if msg.SENDER == "device" and tag is not None and tag in self._pending:
                fut = self._pending[tag]  # the asker checks its answer (kind, result)
                if not fut.done():
                    fut.set_result(msg)
            self.listener.device_rejected(
                self.name, msg, f"{self.name}: {'; '.join(problems)} (raw frame: message "
                f"0x{msg.MSG_ID:02X}, payload {msg.to_bytes().hex()})")
            return
        if msg.SENDER == "device" and tag is not None and tag in self._pending:
            fut = self._pending[tag]
            if not fut.done():
                fut.set_result(msg)
                command = next(c for c, f in self._untagged if f is fut)
                self.listener.device_answered(self.name, command, msg)
            if isinstance(msg, IdentifyReply | StatusReply | CommandResult):
                return
        for command, fut in self._untagged:
            if not fut.done() and command.answered_by(msg):
                fut.set_result(msg)
        if isinstance(msg, Heartbeat | StatusReply):
            if msg.fault != self.status.fault:
                self.status.fault = msg.fault
                self.listener.device_status(self.status)
        elif isinstance(msg, Fault):
            self.status.fault = msg.code
            self.status.detail = msg.detail
            self.listener.device_status(self.status)
        elif isinstance(msg, FaultCleared):
            self.status.fault = 0
            self.listener.device_status(self.status)
        for watch in self._watches:
            if isinstance(msg, watch.kinds) and self._news(watch):
                watch.seen.append(msg)
        self.listener.device_message(self.name, msg)

    def _news(self, watch: Watch) -> bool:
        """Whether the message being handled was sent after ``watch`` began: not an older
        event re-sent (version 3 tells by its stamp; versions 1 and 2 cannot)."""
        if self.stamp is None or watch.after is None:
            return True
        origin, number = watch.after
        return self.stamp.origin != origin or self.stamp.number > number


def _add(total: LinkStats, more: LinkStats) -> None:
    for f in fields(LinkStats):
        setattr(total, f.name, getattr(total, f.name) + getattr(more, f.name))


def _kind_name(kind: int) -> str:
    try:
        return DeviceKind(kind).name.lower()
    except ValueError:
        return f"device of unknown kind {kind}"

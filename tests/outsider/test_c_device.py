"""Issue #24: the C reference device (device/), driven over its pty by a host built only
from the outsider's codec (v3_decoder.py): every frame the device reads was encoded by
it, every frame the device wrote is decoded by it. The emulator's stdin/stdout lines are
its documented test interface (device/README.md, the header of emulator.c)."""

from __future__ import annotations

import itertools
import os
import select
import statistics
import subprocess
import threading
import time
import tty
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.outsider import v3_decoder as v3

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def emulator_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Only the emulator, unoptimised: a second or so to build."""
    out = tmp_path_factory.mktemp("outsider-device") / "emulator"
    sources = sorted((ROOT / "device" / "src").glob("*.c"))
    subprocess.run(
        ["gcc", "-std=c99", "-O0", "-o", str(out), *map(str, sources),
         str(ROOT / "device" / "emulator" / "emulator.c")],
        check=True,
    )  # fmt: skip
    return out


class Device:
    """The emulator process: lines in on stdin, lines out on stdout."""

    def __init__(self, binary: Path, kind: str, link: Path) -> None:
        self.proc = subprocess.Popen(
            [str(binary), kind, str(link), "--speed", "10", "--seed", "7"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1,
        )  # fmt: skip
        self.lines: list[str] = []
        self.lock = threading.Lock()
        threading.Thread(target=self._pump, daemon=True).start()
        self.line("pty ")

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self.lock:
                self.lines.append(line.strip())

    def send(self, line: str) -> int:
        """Write a line; returns a mark for line() to look only at what came after."""
        assert self.proc.stdin is not None
        with self.lock:
            mark = len(self.lines)
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return mark

    def line(self, prefix: str | tuple[str, ...], after: int = 0, timeout: float = 5.0) -> str:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with self.lock:
                found = [x for x in self.lines[after:] if x.startswith(prefix)]
            if found:
                return found[0]
            time.sleep(0.02)
        raise AssertionError(f"no {prefix!r} line from the emulator: {self.lines}")

    @property
    def origin(self) -> int:
        return int(self.line("origin ").split()[1])

    def sent(self) -> list[tuple[int, str]]:
        """The 'sent NUM NAME' lines: every event the device's link took."""
        with self.lock:
            parts = [x.split() for x in self.lines]
        return [(int(p[1]), p[2]) for p in parts if p[0] == "sent"]

    def stop(self) -> None:
        self.send("quit")
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def device_factory(emulator_bin: Path, tmp_path: Path) -> Iterator[Callable[[str], Device]]:
    """Starts emulators (a pty link each, under tmp_path) and stops them after the test."""
    started: list[Device] = []

    def start(kind: str) -> Device:
        started.append(Device(emulator_bin, kind, tmp_path / kind))
        return started[-1]

    yield start
    for d in started:
        d.stop()


Message = tuple[v3.Stamp, v3.Decoded]
NO_STAMP = v3.Stamp(0, 0, 0)  # what messages() gives a version 1 or 2 frame, which has none


class Host:
    """A host end of the link, only as far as these checks need: it answers RST, keeps
    SEQ, acknowledges what it delivers (unless told to hold), and stamps its commands."""

    def __init__(self, link: Path, boot: int) -> None:
        self.fd = os.open(link, os.O_RDWR | os.O_NOCTTY)
        tty.setraw(self.fd)
        self.rx = v3.Receiver()
        self.t0 = time.monotonic()
        self.boot, self.peer, self.sess, self.version = boot, 0, 0, 3
        self.seq = self.expected = 0
        self.num = 0
        self.hold_acks = False
        self.pending: list[v3.Frame] = []

    def close(self) -> None:
        os.close(self.fd)

    def write(self, data: bytes) -> None:
        os.write(self.fd, data)

    def read(self, timeout: float, kind: int | None = None) -> list[tuple[float, v3.Frame]]:
        """Frames (with when, in ms) for `timeout` s, or until one of `kind` came."""
        out: list[tuple[float, v3.Frame]] = []
        end = time.monotonic() + timeout
        while (left := end - time.monotonic()) > 0:
            if select.select([self.fd], [], [], min(left, 0.05))[0]:
                now = (time.monotonic() - self.t0) * 1000
                out += [(now, f) for f in self.rx.feed(os.read(self.fd, 4096), now)]
                if kind is not None and any(f.kind == kind for _, f in out):
                    break
        return out

    def accept(self, rst: v3.Rst) -> None:
        """Answer the device's RST: the session is up, version 3."""
        self.peer = rst.boot
        self.write(v3.encode_rstack(v3.RstAck(rst.boot, self.boot, 3)))
        self.sess = v3.sess_of(rst.boot, self.boot)
        self.seq = self.expected = 0

    def resume(
        self, boot: int, previous: tuple[int, int] | None = None, ack: int = 0, offer: int = 3
    ) -> v3.RstAck:
        """Start a new session from the host, naming the one before with `ack`."""
        self.write(v3.encode_rst(v3.Rst(boot, offer, previous, ack)))
        for _, f in self.read(1.0, v3.RSTACK):
            if f.kind == v3.RSTACK:
                r = v3.decode_rstack(f)
                assert v3.rstack_taken(r, boot, offer) and r.version == offer
                self.boot, self.peer, self.version = boot, r.boot, r.version
                self.sess = v3.sess_of(boot, r.boot)
                self.seq = self.expected = 0
                return r
        raise AssertionError("no RSTACK")

    def command(self, name: str, **values: v3.Value) -> int:
        m = v3.BY_NAME[name]
        return self.send_raw(m.id, v3.encode_message(m, values))

    def data(self, msg_id: int, fields: bytes, ver: int | None = None) -> bytes:
        """The next command's DATA frame, with any bytes as its fields."""
        ver = ver or self.version
        # Event identity, "The host's stamp": the host's ORIGIN is its boot id of the session.
        body = v3.Stamp(self.boot, self.num + 1, 0).encode() + fields if ver == 3 else fields
        sess = None if ver == 1 else self.sess
        return v3.encode_frame(v3.Frame(ver, v3.DATA, self.seq, self.expected, msg_id, sess, body))

    def send_raw(self, msg_id: int, fields: bytes) -> int:
        self.write(self.data(msg_id, fields))
        self.num += 1
        self.seq = (self.seq + 1) % 256
        return self.num

    def messages(self, timeout: float, until: str | None = None) -> list[Message]:
        """Delivered DATA messages, in order, until `until` arrives or time is up."""
        out: list[Message] = []
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for _, f in self.read(0.05):
                if f.kind != v3.DATA or f.ver != self.version:
                    continue
                if f.ver != 1 and f.sess != self.sess:
                    continue
                if f.seq != self.expected:
                    continue  # a duplicate (or a frame ahead): dropped, the device resends
                self.expected = (self.expected + 1) % 256
                self.pending.append(f)
                if not self.hold_acks:
                    sess = None if self.version == 1 else self.sess
                    ack = v3.Frame(self.version, v3.ACK, ack=self.expected, sess=sess)
                    self.write(v3.encode_frame(ack))
                stamp, d = v3.decode_data(f)
                out.append((stamp or NO_STAMP, d))
                if until == d.message.name:
                    return out
        if until is not None:
            raise AssertionError(f"no {until} in {[(s, d.message.name) for s, d in out]}")
        return out


def connect(device: Device, link: Path) -> Host:
    host = Host(link, boot=0x51DE0001)
    for _, f in host.read(2.0, v3.RST):
        if f.kind == v3.RST:
            host.accept(v3.decode_rst(f))
            return host
    raise AssertionError("the device sent no RST")


def collect(host: Host, name: str, count: int, timeout: float = 5.0) -> list[Message]:
    """Messages until `count` of `name` have come."""
    out: list[Message] = []
    end = time.monotonic() + timeout
    while sum(d.message.name == name for _, d in out) < count and time.monotonic() < end:
        out += host.messages(0.1)
    return out


def test_rst_resend_and_a_v3_session(
    device_factory: Callable[[str], Device], tmp_path: Path
) -> None:
    """The device's RSTs are version 1 frames offering 3, resent at most 250 ms apart;
    after our RSTACK, identify is answered with RE = our command number and ORIGIN the
    boot id it printed, and heartbeats carry the last event number and RE 0."""
    dev = device_factory("shoe")
    host = Host(tmp_path / "shoe", boot=0x51DE0001)
    rsts = [(t, f) for t, f in host.read(1.3) if f.kind == v3.RST]
    assert len(rsts) >= 4
    boot = v3.decode_rst(rsts[0][1]).boot
    for _, f in rsts:
        assert f.ver == 1 and v3.decode_rst(f) == v3.Rst(boot, 3)
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(rsts)]
    # 250 ms is the spec's cap; a loaded host can stall the emulator's process itself
    # (seen once in the parallel suite), which says nothing of the device: judge the
    # median, and let no gap reach four times the cap.
    assert statistics.median(gaps) < 250 + 80, f"RST resent {gaps} ms apart: 250 ms is a cap"
    assert max(gaps) < 4 * 250, f"RST resent {gaps} ms apart"
    host.accept(v3.decode_rst(rsts[-1][1]))
    assert dev.origin == boot, "ORIGIN: the boot id at power-up"
    num = host.command("identify", tag=1)
    msgs = host.messages(3.0, until="identify_reply")
    stamp, reply = msgs[-1]
    assert reply.values["tag"] == 1 and reply.values["kind"] == 1
    assert reply.values["protocol_version"] == 3 and reply.out_of_range == ()
    assert stamp == v3.Stamp(dev.origin, 0, num)
    beats = [(s, d) for s, d in host.messages(2.5, "heartbeat") if d.message.name == "heartbeat"]
    assert beats, "no heartbeat in 2.5 s"
    assert all(s == v3.Stamp(dev.origin, 0, 0) for s, _ in beats), beats
    host.close()


def test_shoe_events_numbered_and_resent_with_their_stamp(
    device_factory: Callable[[str], Device], tmp_path: Path
) -> None:
    """Events numbered 1, 2, ... in the order the link took them; an answer carries the
    command's NUM in RE; after a host RST naming the session with an earlier ACK, the
    device re-sends what it held with the same stamps, and the host's filter takes each
    event exactly once."""
    dev = device_factory("shoe")
    host = connect(dev, tmp_path / "shoe")
    seen = v3.EventFilter()
    taken: list[tuple[int, str]] = []

    def take(msgs: list[Message]) -> None:
        for s, d in msgs:
            assert s.origin == dev.origin and d.out_of_range == ()
            if seen.take("shoe", d.message.name, s) and d.message.name not in v3.NOT_EVENTS:
                taken.append((s.num, d.message.name))

    dev.send("load AS KD 7C 2H QS 9D")
    take(host.messages(3.0, until="shoe_loaded"))
    num = host.command("lock_gate", tag=2, locked=False)  # a shoe loads with its gate shut
    msgs = host.messages(3.0, until="gate")
    take(msgs)
    [(stamp, result)] = [(s, d) for s, d in msgs if d.message.name == "command_result"]
    assert result.values == {"tag": 2, "result": 0, "detail": ""} and stamp.re == num
    assert stamp.num == 1, "an answer carries the last event number before it"

    def draw() -> None:
        dev.line("drew ", dev.send("draw"))
        take(host.messages(3.0, until="card_drawn"))

    for _ in range(3):
        draw()
    cards = [v3.decode_data(f)[1].values.get("card") for f in host.pending]
    assert [c for c in cards if c] == ["AS", "KD", "7C"]
    assert [n for n, _ in taken] == [1, 2, 3, 4, 5]

    # From here the host holds its acknowledgements: what follows is "not known received".
    host.hold_acks = True
    first_held = host.expected
    draw()
    draw()
    assert taken[-2:] == [(6, "card_drawn"), (7, "card_drawn")]
    # A new session from the host names the old one, claiming nothing since first_held.
    r = host.resume(0x51DE0002, (host.boot, host.peer), first_held)
    assert r.accepted == 0x51DE0002
    host.hold_acks = False
    again = collect(host, "card_drawn", 2) + host.messages(0.3)
    resent = [(s.num, d.message.name) for s, d in again if d.message.name != "heartbeat"]
    assert resent == [(6, "card_drawn"), (7, "card_drawn")]
    before = list(taken)
    take(again)
    assert taken == before, "the repeats were dropped: nothing taken twice"
    assert seen.lost == []
    assert [e for e in dev.sent() if e[1] != "heartbeat"] == taken
    host.close()


def test_shuffler_commitment_and_reveal(
    device_factory: Callable[[str], Device], tmp_path: Path
) -> None:
    """The C shuffler's v3 commitment, recomputed here from its reveal, matches; a
    request for a shuffle whose cards are still in the shuffler is refused with result 3
    and no chunk; chunks answer the request in RE; an altered reveal is never verified;
    in a version 2 session the commitment is version 2's."""
    dev = device_factory("shuffler")
    host = connect(dev, tmp_path / "shuffler")

    def shuffle(decks: int) -> tuple[int, bytes]:
        num = host.command("start_shuffle", tag=num_tag(), decks=decks)
        msgs = host.messages(5.0, until="shuffle_complete")
        [res] = [(s, d) for s, d in msgs if d.message.name == "command_result"]
        assert res[0].re == (num if host.version == 3 else 0) and res[1].values["result"] == 0
        done = msgs[-1][1].values
        assert done["decks"] == decks and done["inventory"] == (decks,) * 52
        sid, commit = done["shuffle_id"], done["commitment"]
        assert isinstance(sid, int) and isinstance(commit, bytes)
        return sid, commit

    tags = iter(range(1, 256))

    def num_tag() -> int:
        return next(tags)

    def reveal(sid: int, decks: int, commit: bytes) -> v3.Reveal:
        num = host.command("request_order", tag=num_tag(), shuffle_id=sid)
        rev = v3.Reveal(sid, decks, commit)
        end = time.monotonic() + 5.0
        while time.monotonic() < end and not (rev.total and len(rev.cards) >= rev.total):
            for s, d in host.messages(0.2):
                if d.message.name == "order_chunk":
                    assert s.re == (num if host.version == 3 else 0), f"RE {s.re}, asked {num}"
                    rev.chunk(d.values)
        return rev

    sid, commit = shuffle(4)
    tag = next(tags)
    num = host.command("request_order", tag=tag, shuffle_id=sid)
    msgs = host.messages(3.0, until="command_result")
    assert msgs[-1][1].values["result"] == 3 and msgs[-1][0].re == num
    assert all(d.message.name != "order_chunk" for _, d in msgs + host.messages(0.5))
    dev.line("taken ", dev.send("take"))
    rev = reveal(sid, 4, commit)
    assert rev.verified(3), "the C shuffler's v3 commitment, recomputed from the spec"
    assert not rev.verified(2)

    dev.send("mode alter")
    sid, commit = shuffle(4)
    dev.line("taken ", dev.send("take"))
    rev = reveal(sid, 4, commit)
    assert rev.total == 208 and not rev.verified(3)

    # In a version 2 session the device commits without decks and total.
    dev.send("mode honest")
    host.resume(0x51DE0002, offer=2)
    sid, commit = shuffle(4)
    dev.line("taken ", dev.send("take"))
    rev = reveal(sid, 4, commit)
    assert rev.verified(2) and not rev.verified(3)
    host.close()


def test_full_queue_refuses_and_loses_nothing(
    device_factory: Callable[[str], Device], tmp_path: Path
) -> None:
    """With the host acknowledging nothing, the shoe takes draws until its queue is
    full, then refuses at once ('full', the card stays in the shoe); after a host RST
    naming the session, every draw it took arrives once, in order, with its stamp."""
    dev = device_factory("shoe")
    host = connect(dev, tmp_path / "shoe")
    dev.send("load " + " ".join(v3.CARDS[:40]))
    host.messages(3.0, until="shoe_loaded")
    host.command("lock_gate", tag=1, locked=False)
    gate = host.messages(3.0, until="gate")[-1][0].num
    host.hold_acks = True
    first_held = host.expected
    outcomes = [dev.line(("drew ", "full"), dev.send("draw")).split()[0] for _ in range(30)]
    drawn = outcomes.count("drew")
    assert "full" in outcomes and outcomes[:drawn] == ["drew"] * drawn
    assert drawn <= 24
    host.resume(0x51DE0002, (host.boot, host.peer), first_held)
    host.hold_acks = False
    again = [
        (s, d) for s, d in collect(host, "card_drawn", drawn) if d.message.name == "card_drawn"
    ]
    assert [d.values["draw_no"] for _, d in again] == list(range(1, drawn + 1))
    assert [s.num for s, _ in again] == list(range(gate + 1, gate + 1 + drawn))
    assert [(s.num, "card_drawn") for s, _ in again] == [
        e for e in dev.sent() if e[1] == "card_drawn"
    ]
    # The refused card was kept: the next draw is the next card.
    dev.line("drew ", dev.send("draw"))
    [(_, d)] = [(s, d) for s, d in host.messages(3.0, until="card_drawn")][-1:]
    assert (d.values["draw_no"], d.values["card"]) == (drawn + 1, v3.CARDS[drawn])
    host.close()


def test_what_the_device_ignores(device_factory: Callable[[str], Device], tmp_path: Path) -> None:
    """Receiving and Types, device side, with frames built here: a frame of KIND above 4
    is dropped whole (the identify inside it is not taken), an unsupported VER and a
    version that is not the session's are ignored without ending the session, bytes
    after the known fields are ignored, and an invalid message is dropped."""
    dev = device_factory("shoe")
    host = connect(dev, tmp_path / "shoe")

    def answers(tag: int, timeout: float = 0.8) -> list[str]:
        return [d.message.name for _, d in host.messages(timeout) if d.values.get("tag") == tag]

    inner = host.data(0x01, bytes([1]))
    outer = v3.encode_frame(v3.Frame(3, 5, 0, 0, 0x01, host.sess, inner))
    header = bytes([9, 0, host.seq, 0, 0x01, 1])
    odd_version = bytes([v3.SOF]) + header + bytes([v3.crc16(header) & 0xFF, 1, 0, 0])
    host.write(outer + odd_version + host.data(0x01, bytes([2]), ver=2))
    assert answers(1) == [] and answers(2) == []
    host.send_raw(0x01, bytes([3, 0xFF, 0xFF]))  # same SEQ: the three above took none
    assert host.messages(3.0, until="identify_reply")[-1][1].values["tag"] == 3
    host.send_raw(0x30, bytes([4, 2]))  # lock_gate with a bool of 2
    host.send_raw(0x7F, bytes([5]))  # no such MSG
    num = host.command("start_shuffle", tag=6, decks=8)  # a shuffler's command, to a shoe
    stamp, result = host.messages(3.0, until="command_result")[-1]
    # The two dropped above got no answer: the first answer is the shoe's to start_shuffle,
    # "1 unknown command" (spec: Commands a device does not carry out).
    assert (result.values["tag"], result.values["result"], stamp.re) == (6, 1, num)
    host.close()


def test_commands_it_does_not_carry_out(
    device_factory: Callable[[str], Device], tmp_path: Path
) -> None:
    """Spec, "Commands a device does not carry out": each `answer` record of
    vectors_v3.txt sent to a C device of its kind gets that command_result (tag the
    payload's first byte, RE the command's NUM), or none at all for '-'."""
    lines = (ROOT / "firmware_protocols" / "vectors_v3.txt").read_text().splitlines()
    records = [line.split(" ") for line in lines if line.startswith("answer ")]
    assert {r[4] for r in records} >= {"1", "2", "-"}
    for kind in sorted({r[1] for r in records}):
        host = connect(device_factory(kind), tmp_path / kind)
        for _, _, id_hex, payload, want in (r for r in records if r[1] == kind):
            fields = b"" if payload == "-" else bytes.fromhex(payload)
            num = host.send_raw(int(id_hex, 16), fields)
            host.command("identify", tag=0xEE)  # answered after it, if it is answered
            msgs = host.messages(3.0, until="identify_reply")
            got = [(s.re, d.values["tag"], d.values["result"]) for s, d in msgs
                   if d.message.name == "command_result"]
            assert got == ([] if want == "-" else [(num, fields[0], int(want))]), payload
        host.close()


def test_versions_and_reboot(device_factory: Callable[[str], Device], tmp_path: Path) -> None:
    """The device ignores an RSTACK of another boot id, of version 0 or above its offer,
    and keeps sending RST; a host RST offering 2 or 1 gets that version, in which the
    device speaks unstamped frames of that version; after a firmware reboot it has a new
    ORIGIN and numbers its events from 1 again."""
    dev = device_factory("shoe")
    host = Host(tmp_path / "shoe", boot=0x51DE0001)
    [(_, first)] = host.read(2.0, v3.RST)[-1:]
    boot = v3.decode_rst(first).boot
    for bad in (v3.RstAck(boot ^ 1, host.boot, 3), v3.RstAck(boot, host.boot, 4),
                v3.RstAck(boot, host.boot, 0)):  # fmt: skip
        host.write(v3.encode_rstack(bad))
        later = [f for _, f in host.read(0.6) if f.kind == v3.RST]
        assert later and v3.decode_rst(later[-1]).boot == boot, f"{bad} was taken"
    for offer in (2, 1):
        host.resume(0x51DE0010 + offer, offer=offer)
        host.command("identify", tag=offer)
        msgs = host.messages(3.0, until="identify_reply")
        assert msgs[-1][1].values["tag"] == offer and msgs[-1][0] == NO_STAMP
        assert all(f.ver == offer for f in host.pending[-len(msgs) :])

    host.resume(0x51DE0020)
    dev.send("load AS KD")
    old = host.messages(3.0, until="shoe_loaded")[-1][0]
    assert (old.origin, old.num) == (boot, 1)
    dev.send("reboot")
    rst = [f for _, f in host.read(3.0, v3.RST) if f.kind == v3.RST]
    assert rst, "no RST after a reboot"
    new = v3.decode_rst(rst[-1])
    assert new.boot != boot and new.previous is None, "a device that reboots keeps nothing"
    host.accept(new)
    dev.send("load 7C")
    stamp = host.messages(3.0, until="shoe_loaded")[-1][0]
    assert stamp.origin == new.boot and stamp.num == 1
    seen = v3.EventFilter()
    assert seen.take("shoe", "shoe_loaded", old) and seen.take("shoe", "shoe_loaded", stamp)
    assert seen.lost == []
    host.close()


def test_tumbler_round_and_status(device_factory: Callable[[str], Device], tmp_path: Path) -> None:
    """The tumbler's events, numbered 1, 2, ... as the spec's tables lay them out (u8[3],
    u16[3] from the C encoder), between answers whose RE names our commands."""
    dev = device_factory("tumbler")
    host = connect(dev, tmp_path / "tumbler")
    dev.send("throw 3 3 5 4 12 60")
    num = host.command("arm", tag=1, armed=True)
    stamp, result = host.messages(3.0, until="command_result")[-1]
    assert (result.values["tag"], result.values["result"], stamp.re) == (1, 0, num)
    num = host.command("tumble_now", tag=2)
    msgs = host.messages(5.0, until="settled")
    assert [(s.re, d.values["result"]) for s, d in msgs if d.message.name == "command_result"] == [
        (num, 0)
    ]
    evs = [(s.num, d.message.name) for s, d in msgs if d.message.name not in v3.NOT_EVENTS]
    assert evs == [(1, "activated"), (2, "tumble"), (3, "tumble"), (4, "tumble"), (5, "settled")]
    settled = msgs[-1][1]
    assert settled.out_of_range == ()
    assert (settled.values["dice"], settled.values["tilt"]) == ((3, 3, 5), (4, 12, 60))
    assert settled.values["flat"] == (1, 1, 0), "flat: a tilt of at most 50 tenths"
    num = host.command("status", tag=3)
    stamp, reply = host.messages(3.0, until="status_reply")[-1]
    assert (reply.values["tag"], stamp.num, stamp.re) == (3, 5, num)
    host.close()

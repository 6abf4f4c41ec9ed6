"""Benchmark: what a noisy serial line delivers, protocol versions 1 and 2.

Run: .venv/bin/python -m bench.delivery [--seconds S] [--seeds N]
A shoe sends card_drawn 10 times a second and a heartbeat every second to the host over a
simulated 115200-baud line (each byte takes its time; frames queue as on a UART) whose bits
flip at a bit error rate from 1e-4 to 1e-2, both ways. The host and the device run the real
link layer: the device re-sends after a link failure, the host starts a new session with
the old one's summary, as the driver does, and drops a card it has seen (draw_no). The
host also ends a session as the driver does when no message has come for 3.5 s (its
heartbeat timeout), and opens the next one 0.2 s later (its backoff; the port is closed
meanwhile). Time is simulated, so a run takes seconds. Prints, per version and BER: the
share of cards delivered while the noise lasted and by the end (the noise and the sending
stop, and a minute to drain follows), duplicates dropped, wrong cards accepted
(undetected errors), link failures, sessions the host ended on its heartbeat timeout,
and the median and 99th-percentile delay; writes bench/results/delivery.json.
"""

from __future__ import annotations

import argparse
import random
import statistics
from dataclasses import dataclass, field

from bench.figures import save
from daemon.drivers.device import DeviceDriver
from firmware_protocols import shoe
from firmware_protocols.framing import Decoder, Frame
from firmware_protocols.link import Delivered, Link, LinkFailed, LinkState

BYTE_TIME = 10 / 115200
STEP = 0.001
BERS = (1e-4, 3e-4, 1e-3, 3e-3, 1e-2)
# The driver's: a session without a message for this long ends; the next opens after this.
HEARTBEAT_TIMEOUT = DeviceDriver.heartbeat_timeout
BACKOFF = DeviceDriver.backoff_initial


@dataclass
class Direction:
    rng: random.Random
    ber: float
    free: float = 0.0
    air: list[tuple[float, bytes]] = field(default_factory=list)
    decoder: Decoder = field(default_factory=Decoder)

    def send(self, now: float, raw: bytes) -> None:
        start = max(now, self.free)
        self.free = start + len(raw) * BYTE_TIME
        data = bytearray(raw)
        # Geometric gaps between flipped bits: as fast at 1e-4 as at 1e-2.
        pos = int(self.rng.expovariate(self.ber)) if self.ber else len(data) * 8
        while pos < len(data) * 8:
            data[pos // 8] ^= 1 << (pos % 8)
            pos += 1 + int(self.rng.expovariate(self.ber))
        self.air.append((self.free, bytes(data)))

    def arrived(self, now: float) -> list[Frame]:
        out: list[Frame] = []
        while self.air and self.air[0][0] <= now:
            _, data = self.air.pop(0)
            out += [f for f in self.decoder.feed(data, now) if isinstance(f, Frame)]
        return out + [f for f in self.decoder.poll(now) if isinstance(f, Frame)]


class Driver:
    """The host as daemon/drivers/device.py runs it: a new Link with the old one's summary
    after a link failure, or, once a message has come in the session, after 3.5 s without
    one (its heartbeat timeout: the port closes, and opens again after its backoff)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.link = Link(rng.getrandbits(32))
        self.link.connect(0.0)
        self.failures = self.timeouts = 0
        self.last_rx = 0.0
        self.ready = False  # a message came in this session (the driver: IDENTIFY answered)
        self.reopen_at: float | None = None  # the port is closed until then

    def _new_session(self, now: float) -> None:
        self.link = Link(self.rng.getrandbits(32), resume=self.link.summary())
        self.link.connect(now)
        self.ready = False

    def take_output(self) -> list[bytes]:
        return self.link.take_output() if self.reopen_at is None else []

    def handle(self, frames: list[Frame], now: float) -> list[Delivered]:
        if self.reopen_at is not None:
            if now < self.reopen_at:
                return []  # the port is closed: what arrives is lost
            self.reopen_at = None
            self._new_session(now)
        events = [e for f in frames for e in self.link.receive(f, now)] + self.link.poll(now)
        delivered: list[Delivered] = []
        for e in events:
            if isinstance(e, Delivered):
                self.last_rx, self.ready = now, True
                delivered.append(e)
            elif isinstance(e, LinkFailed):
                self.failures += 1
                self._new_session(now)
        if self.ready and now - self.last_rx > HEARTBEAT_TIMEOUT:
            self.timeouts += 1  # "no heartbeat for 3.5 s": the session ends
            self.reopen_at = now + BACKOFF
        return delivered


def run(version: int, ber: float, seconds: float, seed: int) -> dict[str, float]:
    rng = random.Random(seed)
    device = Link(rng.getrandbits(32), version=version, resend=True)
    host = Driver(rng)
    up, down = Direction(random.Random(seed + 1), ber), Direction(random.Random(seed + 2), ber)
    device.connect(0.0)
    sent_at: dict[int, float] = {}
    cards = {n: shoe.CardDrawn(n, "TD", 99, 0xC0FFEE, False, False) for n in range(1, 65536)}
    seen: dict[int, float] = {}
    duplicates = wrong = failures = 0
    now, next_card, next_beat, draw_no = 0.0, 1.0, 1.0, 0
    end = seconds + 60.0  # sending and noise stop at `seconds`; then a minute to drain
    during = 0  # cards delivered while the noise lasted
    while now < end:
        now += STEP
        if seconds <= now < seconds + STEP:
            during = len(seen)
            up.ber = down.ber = 0.0
        if now >= next_card and now < seconds:
            draw_no += 1
            sent_at[draw_no] = now
            device.send(shoe.CardDrawn.MSG_ID, cards[draw_no].to_bytes(), now)
            next_card += 0.1
        if now >= next_beat and device.state is LinkState.ESTABLISHED:
            device.send(0x03, bytes(7), now)
            next_beat += 1.0
        for raw in device.take_output():
            up.send(now, raw)
        for raw in host.take_output():
            down.send(now, raw)
        for f in down.arrived(now):
            device.receive(f, now)
        for e in device.poll(now):
            if isinstance(e, LinkFailed):
                failures += 1
                device.restart(now, rng.getrandbits(32))
        for e in host.handle(up.arrived(now), now):
            if e.msg == shoe.CardDrawn.MSG_ID:
                card = shoe.CardDrawn.from_bytes(e.payload)
                if card != cards.get(card.draw_no):
                    wrong += 1
                elif card.draw_no in seen:
                    duplicates += 1
                else:
                    seen[card.draw_no] = now - sent_at[card.draw_no]
        if now >= seconds and len(seen) == draw_no and not device.in_flight:
            break
    delays = sorted(seen.values())
    return {"sent": draw_no, "during_noise": during, "delivered": len(seen),
            "duplicates": duplicates,
            "wrong": wrong, "failures": failures + host.failures,
            "heartbeat_timeouts": host.timeouts,
            "median_delay_ms": round(1000 * statistics.median(delays), 1) if delays else 0.0,
            "p99_delay_ms": round(1000 * delays[int(0.99 * (len(delays) - 1))], 1)
            if delays else 0.0}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    rows = []
    print(f"{'version':>7} {'BER':>7} {'in the noise':>14} {'in the end':>14} {'dup':>5} "
          f"{'wrong':>5} "
          f"{'failures':>8} {'hb timeouts':>11} {'median ms':>10} {'p99 ms':>9}")
    for version in (1, 2):
        for ber in BERS:
            runs = [run(version, ber, args.seconds, seed) for seed in range(args.seeds)]
            total = {k: sum(r[k] for r in runs) for k in (
                "sent", "during_noise", "delivered", "duplicates", "wrong", "failures",
                "heartbeat_timeouts")}
            median = statistics.median(r["median_delay_ms"] for r in runs)
            p99 = statistics.median(r["p99_delay_ms"] for r in runs)
            rows.append({"version": version, "ber": ber, **total, "median_delay_ms": median,
                         "p99_delay_ms": p99, "seeds": args.seeds, "seconds": args.seconds})
            print(f"{version:>7} {ber:>7.0e} {total['during_noise']:>6}/{total['sent']:<7} "
                  f"{total['delivered']:>6}/{total['sent']:<7} "
                  f"{total['duplicates']:>5} {total['wrong']:>5} {total['failures']:>8} "
                  f"{total['heartbeat_timeouts']:>11} "
                  f"{median:>10.1f} {p99:>9.1f}")
    save("delivery", rows)


if __name__ == "__main__":
    main()

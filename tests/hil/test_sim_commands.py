"""The simulators against the spec's "Commands a device does not carry out": every
`answer` record of vectors_v3.txt sent to a simulated device of its kind, by a host link
in the same process (sans-I/O), gets that command_result or none."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from firmware_protocols import common, shuffler
from firmware_protocols.endpoint import Endpoint, Numbered
from firmware_protocols.link import Link, LinkState
from firmware_protocols.wire import Catalogue, Message
from hil.device import SimDevice
from hil.shoe import ShoeSim
from hil.shuffler import ShufflerSim
from hil.tumbler import TumblerSim

VECTORS = Path(__file__).resolve().parents[2] / "firmware_protocols" / "vectors_v3.txt"
ANSWERS = [line.split(" ")[1:] for line in VECTORS.read_text().splitlines()
           if line.startswith("answer ")]
SIMS = {"shoe": ShoeSim, "shuffler": ShufflerSim, "tumbler": TumblerSim}
STEP = 0.005


class Wire:
    """A simulated device and a host endpoint joined by a clean line, run in steps."""

    def __init__(self, sim: SimDevice) -> None:
        self.sim, self.now = sim, 0.0
        self.host = Endpoint(Catalogue("host", common.COMMON), Link(0x51DE0001))
        self.got: list[Numbered] = []
        sim.start(0.0)
        self.host.connect(0.0)
        self.run_until(lambda: self.host.link.state is LinkState.ESTABLISHED)

    def run_until(self, done: Callable[[], bool]) -> None:
        for _ in range(2000):
            if done():
                return
            self.now += STEP
            self.sim.feed(self.host.take_output(), self.now)
            events = self.host.feed(self.sim.take_output(), self.now) + self.host.poll(self.now)
            self.got += [e for e in events if isinstance(e, Numbered)]
        raise AssertionError("timed out")

    def command(self, msg_id: int, payload: bytes) -> int:
        assert self.host.link.send(msg_id, payload, self.now)
        return self.host.link.last_number

    def answers_until_identified(self) -> list[tuple[int, Message]]:
        """(RE, message) of each command_result, up to the reply to an identify sent now."""
        start = len(self.got)
        self.command(common.Identify.MSG_ID, common.Identify(0xEE).to_bytes())
        self.run_until(lambda: any(isinstance(n.message, common.IdentifyReply)
                                   for n in self.got[start:]))
        return [(n.stamp.reply_to, n.message) for n in self.got[start:]
                if isinstance(n.message, common.CommandResult)]


@pytest.mark.parametrize("device,id_hex,payload,want", ANSWERS,
                         ids=[" ".join(r) for r in ANSWERS])
def test_the_simulator_answers_as_the_vector_says(device: str, id_hex: str, payload: str,
                                                  want: str) -> None:
    wire = Wire(SIMS[device](seed=1))
    fields = b"" if payload == "-" else bytes.fromhex(payload)
    num = wire.command(int(id_hex, 16), fields)
    got = [(re, m.tag, m.result) for re, m in wire.answers_until_identified()
           if isinstance(m, common.CommandResult)]
    assert got == ([] if want == "-" else [(num, fields[0], int(want))])


def test_decks_outside_the_values_get_2_even_while_shuffling() -> None:
    """Result 2 is checked before anything else: a shuffler busy shuffling answers an
    out-of-range start_shuffle 2 (bad argument), an in-range one 5 (busy)."""
    wire = Wire(ShufflerSim(seed=1))
    wire.command(shuffler.StartShuffle.MSG_ID, shuffler.StartShuffle(1, 8).to_bytes())
    wire.command(shuffler.StartShuffle.MSG_ID, shuffler.StartShuffle(2, 11).to_bytes())
    wire.command(shuffler.StartShuffle.MSG_ID, shuffler.StartShuffle(3, 6).to_bytes())
    results = [(m.tag, m.result) for _, m in wire.answers_until_identified()
               if isinstance(m, common.CommandResult)]
    assert results == [(1, 0), (2, 2), (3, 5)]

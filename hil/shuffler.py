"""A simulated card shuffler: shuffles N decks (or a scripted order), certifies, reveals."""

from __future__ import annotations

from firmware_protocols import shuffler as proto
from firmware_protocols.common import CommandResultCode, DeviceKind, DeviceState
from firmware_protocols.framing import PROTOCOL_VERSION
from firmware_protocols.wire import Message
from hil.device import Identity, SimDevice

SHUFFLE_SECONDS = 3.0
CHUNK = 26  # cards per order frame: small frames survive a noisy line (BER 1e-3)


def fresh_decks(decks: int) -> list[str]:
    return [code for _ in range(decks) for code in proto.INVENTORY_ORDER]


class ShufflerSim(SimDevice):
    def __init__(self, *, serial: str = "SF0001", seed: int = 0, speed: float = 1.0,
                 protocol_version: int = PROTOCOL_VERSION) -> None:
        super().__init__(proto.CATALOGUE,
                         Identity(DeviceKind.SHUFFLER, "SIM-SHUFFLER", "1.0.0", serial),
                         seed=seed, speed=speed, protocol_version=protocol_version)
        self.next_shuffle_id = 1000 + self.rng.randrange(1000)
        self.orders: dict[int, tuple[tuple[str, ...], bytes]] = {}
        self.last_order: list[str] = []
        self.scripted: list[list[str]] = []  # orders to produce instead of random ones
        self.foreign_cards = 0
        self.rng_ok = True

    def script(self, order: list[str]) -> None:
        """The next shuffle produces exactly this order (cards may be missing or extra)."""
        self.scripted.append(list(order))

    def handle(self, msg: Message, now: float) -> None:
        if isinstance(msg, proto.StartShuffle):
            if self.state is not DeviceState.READY:
                self.reply(msg.tag, now, CommandResultCode.BUSY, "shuffling or faulted")
            else:  # decks outside 1-10 never get here: SimDevice refuses them first
                self.reply(msg.tag, now)
                self._start(msg.decks, now)
        elif isinstance(msg, proto.Inventory):
            self.emit(proto.InventoryReply(msg.tag, proto.inventory_of(self.last_order),
                                           self.foreign_cards), now)
        elif isinstance(msg, proto.RequestOrder):
            self._reveal(msg, now)
        else:
            super().handle(msg, now)

    def _start(self, decks: int, now: float) -> None:
        shuffle_id = self.next_shuffle_id
        self.next_shuffle_id += 1
        self.state = DeviceState.BUSY
        self.emit(proto.ShuffleStarted(shuffle_id, decks), now)
        if self.scripted:
            order = self.scripted.pop(0)
        else:
            order = fresh_decks(decks)
            self.rng.shuffle(order)

        def complete(at: float) -> None:
            nonce = self.rng.randbytes(16)
            self.orders[shuffle_id] = (tuple(order), nonce)
            self.last_order = list(order)
            self.state = DeviceState.READY
            self.emit(proto.ShuffleComplete(
                shuffle_id, decks, proto.inventory_of(order), self.foreign_cards, self.rng_ok,
                # The commitment of the session's version (shuffler.md): v3's binds the
                # decks and the total too.
                proto.commitment_for(self.endpoint.link.session_version, shuffle_id, decks,
                                     nonce, order)), at)

        self.after(SHUFFLE_SECONDS, complete, now)

    def _reveal(self, msg: proto.RequestOrder, now: float) -> None:
        if msg.shuffle_id not in self.orders:
            self.reply(msg.tag, now, CommandResultCode.WRONG_STATE,
                       f"no finished shuffle {msg.shuffle_id}")
            return
        order, nonce = self.orders[msg.shuffle_id]
        for offset in range(0, max(len(order), 1), CHUNK):
            self.emit(proto.OrderChunk(msg.shuffle_id, offset, len(order), nonce,
                                       order[offset:offset + CHUNK]), now)

    def jam(self, now: float) -> None:
        self.raise_fault(proto.ShufflerFault.JAM, "card jam in elevator", now)

    def on_reboot(self) -> None:
        self.state = DeviceState.READY

"""A simulated card-reading shoe: a scripted card order, gate, cut card, and dealing faults."""

from __future__ import annotations

from dataclasses import dataclass, field

from firmware_protocols import shoe as proto
from firmware_protocols.common import CommandResultCode, DeviceKind, Door
from firmware_protocols.framing import PROTOCOL_VERSION
from firmware_protocols.wire import Message
from hil.device import Identity, SimDevice

DEFAULT_DECK_SET = 0x00C0FFEE


@dataclass
class LoadedShoe:
    cards: list[str]
    deck_set: int
    cut_at: int | None  # draw_no after which the cut card appears
    drawn: int = 0
    cut_reported: bool = False
    # The cut card comes out when the dealer draws card cut_at + 1, before that card
    # (MBS 3.22.1: "the cutting card appears as the first card of a round").
    cut_first: bool = False
    backs: dict[int, int] = field(default_factory=dict)  # draw_no -> deck set read


class ShoeSim(SimDevice):
    def __init__(self, *, serial: str = "SH0001", seed: int = 0, speed: float = 1.0,
                 protocol_version: int = PROTOCOL_VERSION) -> None:
        super().__init__(proto.CATALOGUE,
                         Identity(DeviceKind.SHOE, "SIM-SHOE", "1.0.0", serial),
                         seed=seed, speed=speed, protocol_version=protocol_version)
        self.gate_locked = True
        self.shoe: LoadedShoe | None = None
        self.last_drawn: proto.CardDrawn | None = None

    def handle(self, msg: Message, now: float) -> None:
        if isinstance(msg, proto.LockGate):
            self.gate_locked = msg.locked
            self.reply(msg.tag, now)
            self.emit(proto.Gate(msg.locked), now)
        elif isinstance(msg, proto.SetClock):
            self.reply(msg.tag, now)
        else:
            super().handle(msg, now)

    # -- what the dealer does -------------------------------------------------------------

    def load(self, cards: list[str], now: float, *, deck_set: int = DEFAULT_DECK_SET,
             cut_at: int | None = None, foreign_backs: dict[int, int] | None = None,
             cut_first: bool = False) -> None:
        """Load a shoe. ``foreign_backs``: draw_no -> deck set, for a card of another set."""
        self.shoe = LoadedShoe(list(cards), deck_set, cut_at, backs=dict(foreign_backs or {}),
                               cut_first=cut_first)
        self.emit(proto.ShoeLoaded(len(cards), deck_set), now)

    def draw(self, now: float, *, double_draw: bool = False, face_up: bool = False,
             confidence: int = 99, read_as: str | None = None, lost: bool = False,
             number: int | None = None) -> str | None:
        """Draw the next card past the reader. Returns it, or None if the gate or shoe stops it.
        ``read_as``: what the reader reports instead ("??": unreadable); ``lost``: the card
        leaves the shoe but its read never reaches the host (the next draw number skips);
        ``number``: the draw number its message carries instead (0: out of range)."""
        s = self.shoe
        if s is None or self.gate_locked or s.drawn >= len(s.cards):
            return None
        if s.cut_first and s.cut_at == s.drawn and not s.cut_reported:
            s.cut_reported = True
            self.emit(proto.CutCard(s.drawn), now)
        card = s.cards[s.drawn]
        s.drawn += 1
        self.last_drawn = proto.CardDrawn(s.drawn if number is None else number,
                                          read_as or card, confidence,
                                          s.backs.get(s.drawn, s.deck_set), double_draw,
                                          face_up)
        if not lost:
            self.emit(self.last_drawn, now)
        if s.cut_at is not None and s.drawn >= s.cut_at and not s.cut_reported \
                and not s.cut_first:
            s.cut_reported = True
            self.emit(proto.CutCard(s.drawn), now)
        if s.drawn == len(s.cards):
            self.emit(proto.ShoeEmpty(s.drawn), now)
        return card

    def resend(self, draw_no: int, now: float) -> None:
        """Send a draw's message again, as a shoe that re-sends what it believes was not
        acknowledged does after a link reset."""
        s = self.shoe
        assert s is not None and 1 <= draw_no <= s.drawn
        self.emit(proto.CardDrawn(draw_no, s.cards[draw_no - 1], 99,
                                  s.backs.get(draw_no, s.deck_set), False, False), now)

    def press_button(self, now: float, button: int = 1) -> None:
        self.emit(proto.DealerButton(button), now)

    def open_cover(self, now: float, is_open: bool = True) -> None:
        self.emit(Door(is_open), now)

    def tamper(self, now: float, sensor: int = 1) -> None:
        self.emit(proto.Tamper(sensor), now)
        self.raise_fault(proto.ShoeFault.TAMPER, f"tamper sensor {sensor}", now)

    def refuse(self, tag: int, now: float) -> None:
        self.reply(tag, now, CommandResultCode.DEVICE_FAULT, "refused")

    def on_reboot(self) -> None:
        self.gate_locked = True  # a rebooted shoe comes up locked; the shoe's cards stay

"""What the table has already taken from each device (protocol version 3). Pure; the
service journals each mark in the transaction of the records its event produced, so a
restart knows exactly what it processed.

A device numbers its events from 1 within a boot (the spec's "Event identity"); a
heartbeat or an answer carries the number of the last event sent before it. So, per
device, the last (boot, number) taken is all there is to keep:

- an event at or below it, of the same boot, was seen: it is dropped (a device re-sending
  what it did not know had arrived, after a link failure or this host's restart);
- a number past the next one is a gap: the events between never arrived (lost);
- a new boot starts again at 1: a first event numbered higher lost those before it;
- a device never seen before is taken as it is: what it sent before is not this table's.
"""

from __future__ import annotations

from dataclasses import dataclass

META_PREFIX = "device_events:"  # the journal's meta key per device: "boot:number"


@dataclass(frozen=True, slots=True)
class Mark:
    boot: int
    number: int

    def dumps(self) -> str:
        return f"{self.boot}:{self.number}"

    @classmethod
    def loads(cls, text: str) -> Mark:
        boot, number = text.split(":")
        return cls(int(boot), int(number))


@dataclass(frozen=True, slots=True)
class Verdict:
    repeat: bool = False  # seen already: drop it
    lost: tuple[int, int] | None = None  # the numbers (first, last) that never arrived
    mark: Mark | None = None  # what to journal with what it produces (None: nothing)


class Seen:
    def __init__(self, marks: dict[str, Mark] | None = None) -> None:
        self.marks: dict[str, Mark] = dict(marks or {})

    def judge(self, device: str, boot: int, number: int, event: bool) -> Verdict:
        """What to do with a stamped message; ``event``: it took a number of its own (else
        a heartbeat or an answer, which carries the last)."""
        last = self.marks.get(device)
        here = Mark(boot, number)
        if last is None:  # first contact: nothing before it is known, so nothing is lost
            return Verdict(mark=here if event else None)
        if last.boot != boot:
            expected = 1
        elif event and number <= last.number:
            return Verdict(repeat=True)
        else:
            expected = last.number + 1
        # An event takes `expected`; a heartbeat or an answer says `number` were sent.
        newest = number - 1 if event else number
        lost = (expected, newest) if newest >= expected else None
        return Verdict(lost=lost, mark=here if event or lost else None)

    def take(self, device: str, mark: Mark) -> None:
        """The verdict's mark is on disk: the next judgement starts from it."""
        self.marks[device] = mark

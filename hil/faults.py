"""Line faults a simulator can inject into the bytes it sends (and receives)."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field


@dataclass
class LineFaults:
    bit_error_rate: float = 0.0  # per bit
    drop_rate: float = 0.0  # per byte
    dup_rate: float = 0.0  # per byte
    truncate_rate: float = 0.0  # per write: the write is cut short (a truncated frame)
    delay: float = 0.0  # seconds added to every write, order kept
    seed: int = 0
    flipped: int = field(default=0, init=False)
    dropped: int = field(default=0, init=False)
    duplicated: int = field(default=0, init=False)
    truncated: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)
        self._next_flip = self._gap()

    def _gap(self) -> float:
        if self.bit_error_rate <= 0:
            return math.inf
        # Geometric gaps between flipped bits: exact for independent errors at this rate.
        u = 1.0 - self._rng.random()
        return math.floor(math.log(u) / math.log1p(-self.bit_error_rate))

    def apply(self, data: bytes) -> bytes:
        if not data:
            return data
        if self.truncate_rate and self._rng.random() < self.truncate_rate:
            self.truncated += 1
            data = data[: self._rng.randrange(len(data))]
        out = bytearray()
        for byte in data:
            if self.drop_rate and self._rng.random() < self.drop_rate:
                self.dropped += 1
                continue
            value = byte
            for bit in range(8):
                if self._next_flip <= 0:
                    value ^= 1 << bit
                    self.flipped += 1
                    self._next_flip = self._gap()
                else:
                    self._next_flip -= 1
            out.append(value)
            if self.dup_rate and self._rng.random() < self.dup_rate:
                self.duplicated += 1
                out.append(value)
        return bytes(out)

"""The root of every exception the project raises (daemon/ and hil/).

``except TabledError`` catches what tabled itself refused or failed at, and nothing of a
bug (a KeyError, an AssertionError) or of the standard library. Each subclass also keeps
the builtin base it always had (ValueError, RuntimeError, ...), so existing handlers hold.
firmware_protocols/ is a standalone protocol library with no dependency on the daemon:
its errors (MessageError, FrameError) stop at the driver, which turns them into alerts.
"""

from __future__ import annotations


class TabledError(Exception):
    """Something tabled refused or could not do, said specifically."""

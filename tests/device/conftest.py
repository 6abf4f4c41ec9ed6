"""The device tests' shared fixture: the C reference devices, built once a session."""

from tests.device.c_devices import built

__all__ = ["built"]

"""What goes wrong in a simulated or hardware-in-the-loop run, by family (daemon/errors.py
gives each family its exit status at the command line)."""

from __future__ import annotations

from daemon.errors import DeviceError, TabledError, ToolError


class RunError(TabledError, RuntimeError):
    """The run against the table went wrong: a command the table refused, a result it
    never published, a gate that never opened."""


class ToolFailedError(ToolError, RuntimeError):
    """A program the rig needs is missing or did not work: mosquitto, nats-server, the
    firmware build, systemctl."""


class EmulatorStoppedError(DeviceError, RuntimeError):
    """The emulated MCU (QEMU) is not running."""

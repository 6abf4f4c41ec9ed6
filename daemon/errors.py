"""The root of the exceptions tabled raises for what it refused or could not do (daemon/
and hil/), in four families, each with the exit status the command line gives it.

``except TabledError`` catches what tabled itself refused or failed at, and nothing of a
bug (a KeyError, an AssertionError) or of the standard library. Each subclass also keeps
the builtin base it always had (ValueError, RuntimeError, ...), so existing handlers hold.
firmware_protocols/ is a standalone protocol library with no dependency on the daemon:
its errors (MessageError, FrameError) stop at the driver, which turns them into alerts.

``tabled`` catches every TabledError at its top (daemon/cli/main.py ``main``): one line on
stderr, ``tabled: <what>``, and the family's exit status (docs/operations.md, "Exit
status"). Exit 2 is the one systemd does not restart (RestartPreventExitStatus=2): only
what a restart cannot fix belongs to InputError.
"""

from __future__ import annotations


class TabledError(Exception):
    """Something tabled refused or could not do, said specifically. Raised as itself (or
    a subclass outside the families below): a run that failed, e.g. the broker gone, a
    command the table refused, the journal unusable."""

    exit_status = 1


class InputError(TabledError):
    """What was given is wrong: an argument, a config, a key file, a scenario, a command,
    rules or an enrolment. Fix it; running again as it is cannot help."""

    exit_status = 2


class DeviceError(TabledError):
    """A device, or the link to it, failed or is not there."""

    exit_status = 4


class ToolError(TabledError):
    """A program tabled needs is missing or did not work: mosquitto, nats-server, QEMU,
    the Arm toolchain, systemctl."""

    exit_status = 5


FAMILIES: tuple[type[TabledError], ...] = (InputError, DeviceError, ToolError, TabledError)

"""Hardware-in-the-loop: device simulators that speak the exact wire bytes, behind real
transports (pty, TCP, a pyusb backend), with fault injection; and the scenario runner."""

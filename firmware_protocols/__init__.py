"""Wire protocols of the shoe, shuffler and tumbler. Sans-I/O: no asyncio, no serial, no clocks.

framing.py  frames and the incremental decoder (shared by all three devices)
link.py     sequence numbers, ACK/NAK, retransmission, link reset (time passed in)
wire.py     payload field types; messages are frozen dataclasses built from them
common.py   messages every device speaks (IDENTIFY, HEARTBEAT, STATUS, FAULT, ...)
shoe.py, shuffler.py, tumbler.py   each device's own messages and fault codes
"""

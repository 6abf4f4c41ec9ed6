"""Replay requests, served in a process of their own (issue 25):

- ``server.ReplayServer``: requests admitted within their budget (daemon/mqtt/replay.py),
  answered one message at a time with the stored bytes, each answer closed by a marker.
- ``worker``: the process: the journal read-only, its own broker connection.
- ``supervisor.ReplayProcess``: the daemon's side: started, started again, stopped; its
  counts into the table's metrics.
"""

"""Suite-wide settings.

Hypothesis's per-example deadline is a timed assertion: on a loaded two-core machine a
correct example can take longer than 200 ms, and the run then fails as "flaky" for a
reason that says nothing about the code. Time is measured by bench/, not by tests.
"""

from hypothesis import settings

settings.register_profile("tabled", deadline=None)
settings.load_profile("tabled")

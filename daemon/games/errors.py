"""The engine's own error types. Callers catch RulesError; nothing else is raised on bad input."""

from daemon.errors import InputError


class RulesError(InputError, ValueError):
    """Input that the approved rules do not allow (bad card code, unknown layout, ...)."""


class CardCodeError(RulesError):
    """A card code that is not rank + suit (``A 2-9 T J Q K`` x ``S H D C``)."""


class DiceError(RulesError):
    """A dice result that is not three dice with values 1-6."""


class DealError(RulesError):
    """Cards that the Baccarat Table of Play cannot have produced (too many for the deal)."""


class UnknownGameError(RulesError):
    """A game id, layout or deck count that the documents do not approve."""

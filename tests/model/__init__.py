"""An independent model of the physical table that judges the baccarat round core (issue 23)."""

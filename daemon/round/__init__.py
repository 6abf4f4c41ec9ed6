"""Rounds and shoes: the table's state, validated against the game rules."""

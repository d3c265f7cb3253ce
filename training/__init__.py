"""seed-gym."""

"""The expert's command-wording fixes (pure functions; the engine tests play them for real)."""

from seed_gym.envs.alfworld.engine import _move_as_put, to_game_wording, to_move_wording
from seed_gym.envs.alfworld.env import normalize_command


def test_old_put_wording_becomes_move():
    assert to_move_wording("put cd 3 in/on safe 1") == "move cd 3 to safe 1"
    assert to_move_wording("go to safe 1") == "go to safe 1"


def test_move_is_sent_in_the_wording_the_game_admits():
    assert to_game_wording("move cd 3 to safe 1", ["put cd 3 in/on safe 1"]) == "put cd 3 in/on safe 1"
    assert to_game_wording("move cd 3 to safe 1", ["move cd 3 to safe 1"]) == "move cd 3 to safe 1"
    assert to_game_wording("look", ["look"]) == "look"


def test_tracker_sees_move_as_put():
    assert _move_as_put("move apple 1 to countertop 2") == "put apple 1 in/on countertop 2"
    assert _move_as_put("take apple 1 from countertop 2") == "take apple 1 from countertop 2"


def test_commands_are_normalised():
    assert normalize_command("  Go  TO\tdesk 1 ") == "go to desk 1"

"""Splits are explicit ordered id lists whose fingerprint covers content."""

import pytest

from seed_gym.tasks import Split, TaskSet, disjoint, fingerprint


def make_split(ids, content=None):
    content = content or {}
    return Split("s", tuple(ids), content_hash=lambda tid: content.get(tid, "c"))


def test_fingerprint_changes_with_order_content_and_ids():
    base = make_split(["a", "b"]).fingerprint
    assert base == make_split(["a", "b"]).fingerprint
    assert base != make_split(["b", "a"]).fingerprint
    assert base != make_split(["a", "b"], {"b": "edited"}).fingerprint
    assert base != make_split(["a", "c"]).fingerprint


def test_fingerprint_parts_are_length_prefixed():
    assert fingerprint(["ab", "c"]) != fingerprint(["a", "bc"])


def test_select_takes_a_prefix_and_rejects_nonsense():
    split = make_split(["a", "b", "c"])
    assert split.select(2) == ["a", "b"] and split.select(None) == ["a", "b", "c"] and split.select(9) == ["a", "b", "c"]
    with pytest.raises(ValueError):
        split.select(0)


def test_task_set_aliases_and_unknown_split():
    task_set = TaskSet({"unseen": make_split(["a"])}, "fp", aliases={"valid_unseen": "unseen"})
    assert task_set.split("valid_unseen").task_ids == ("a",)
    with pytest.raises(KeyError, match="known: unseen, valid_unseen"):
        task_set.split("test")


def test_disjoint():
    assert disjoint([make_split(["a"]), make_split(["b"])])
    assert not disjoint([make_split(["a", "b"]), make_split(["b"])])

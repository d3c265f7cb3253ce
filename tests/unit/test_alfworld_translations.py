"""The fast engine's translation store (envs/alfworld/translations.py): translations are kept by
content, in memory and on disk, computed at most once, and a bad or missing entry costs only time.
(That the fast engine plays like stock with it is proven in tests/integration/test_alfworld_fast.py.)"""

import zlib

import pytest

from seed_gym.envs.alfworld import translations

DOMAIN = """(define (domain switches)
  (:requirements :strips :typing)
  (:types switch)
  (:predicates (off ?s - switch) (on ?s - switch))
  (:action flip
    :parameters (?s - switch)
    :precondition (off ?s)
    :effect (and (on ?s) (not (off ?s)))))"""

PROBLEM = """(define (problem two)
  (:domain switches)
  (:objects a b - switch)
  (:init (off a) (off b))
  (:goal (on a)))"""


@pytest.fixture
def counted(monkeypatch):
    """Every real translation, as (optimize,)."""
    calls = []
    real = translations._translate

    def translate(domain, problem, optimize):
        calls.append(optimize)
        return real(domain, problem, optimize)

    monkeypatch.setattr(translations, "_translate", translate)
    return calls


def test_content_keys_are_delimited_and_the_lru_evicts_the_least_recently_used():
    assert translations.content_key("a", "bc") != translations.content_key("ab", "c")
    built = []
    cache = translations.LRU(2)
    for key in ["x", "y", "x", "z", "y"]:
        cache.get(key, lambda key=key: built.append(key) or key.upper())
    assert built == ["x", "y", "z", "y"]  # "x" hit; "z" evicted "y"
    assert list(cache.items) == ["z", "y"] and cache.hits == 1 and cache.misses == 4


def test_a_translation_is_computed_once_and_the_planner_task_only_when_asked(tmp_path, counted):
    store = translations.Translations(8, translations.DiskStore(tmp_path))
    task, sas = store.task_and_sas(DOMAIN, PROBLEM)
    assert sas.startswith("begin_version") and [a.name for a in task.actions] == ["flip"]
    store.task_and_sas(DOMAIN, PROBLEM)
    assert counted == [False]  # the plain translation once; no planner translation yet
    replan = store.replan_sas(DOMAIN, PROBLEM)
    assert counted == [False, True] and replan.startswith("begin_version")
    assert store.stats()["disk_writes"] == 2


def test_a_second_process_reads_the_disk_store_instead_of_translating(tmp_path, counted):
    first = translations.Translations(8, translations.DiskStore(tmp_path))
    _, sas = first.task_and_sas(DOMAIN, PROBLEM)
    second = translations.Translations(8, translations.DiskStore(tmp_path))  # as a new worker would
    task, again = second.task_and_sas(DOMAIN, PROBLEM)
    assert again == sas and counted == [False]
    assert second.stats()["disk_hits"] == 1
    assert sorted(str(a) for a in task.init) == sorted(str(a) for a in first.task_and_sas(DOMAIN, PROBLEM)[0].init)
    assert not [p for p in tmp_path.rglob(".tmp-*")]  # written atomically, nothing left behind


def test_a_torn_or_foreign_entry_is_recomputed_and_replaced(tmp_path, counted):
    store = translations.DiskStore(tmp_path)
    translations.Translations(8, store).task_and_sas(DOMAIN, PROBLEM)
    [entry] = tmp_path.rglob("*.sas.z")
    good = entry.read_bytes()
    entry.write_bytes(good[: len(good) // 2])  # a torn write
    fresh = translations.Translations(8, translations.DiskStore(tmp_path))
    _, sas = fresh.task_and_sas(DOMAIN, PROBLEM)
    assert counted == [False, False] and sas == zlib.decompress(good).decode()
    assert entry.read_bytes() == good


def test_an_unwritable_store_costs_time_never_a_game(tmp_path, counted):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    store = translations.Translations(8, translations.DiskStore(blocker / "store"))
    _, sas = store.task_and_sas(DOMAIN, PROBLEM)
    assert sas.startswith("begin_version") and store.stats()["disk_writes"] == 0


def test_where_the_store_lives(monkeypatch, tmp_path):
    version = f"{translations.translator_version()}+{translations.STORE_TAG}"
    monkeypatch.setenv("SEED_GYM_HOME", str(tmp_path / "home"))
    monkeypatch.delenv(translations.DISK_CACHE_VARIABLE, raising=False)
    assert translations.disk_store_root() == tmp_path / "home" / "alfworld" / "translations" / version
    monkeypatch.setenv(translations.DISK_CACHE_VARIABLE, "off")
    assert translations.disk_store_root() is None
    monkeypatch.setenv(translations.DISK_CACHE_VARIABLE, str(tmp_path / "elsewhere"))
    assert translations.disk_store_root() == tmp_path / "elsewhere" / version
    assert version.startswith("fast-downward-textworld-")

"""Questions over a SynWiki world, in the Search-R1 / FlashRAG format.

Each question is ``{"id", "question", "golden_answers", "data_source", "split", "metadata"}``;
``metadata["hops"]`` is the gold chain: per hop the search ``query`` an oracle would issue, the
``entity`` and ``relation`` it resolves, the hop's ``answer`` and its ``support`` passage ids.

Seven sources mirror the Search-R1 test sets (docs/benchmarks.md 3.5):

* ``syn_nq`` (seen, train + test): 1-hop factoids;
* ``syn_triviaqa``: 1-hop with question wordings never used in training;
* ``syn_popqa``: 1-hop about the least-mentioned (long-tail) persons;
* ``syn_hotpotqa`` (seen, train + test): 2-hop bridge and comparison;
* ``syn_2wiki``: kinship inference (grandfather, father-in-law) and population comparison;
* ``syn_musique``: 3-4 hop chains, longer than any training chain;
* ``syn_bamboogle``: 2-hop over relation pairs no other source composes (125 by default).

Rules: question texts are unique across the whole file; a name two entities share is never a
question's subject; comparison questions need distinct values; generation is seeded.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from seed_gym.envs.searchqa.world import Entity, World

SEEN_SOURCES = ("syn_nq", "syn_hotpotqa")
UNSEEN_SOURCES = ("syn_triviaqa", "syn_popqa", "syn_2wiki", "syn_musique", "syn_bamboogle")
SOURCES = SEEN_SOURCES + UNSEEN_SOURCES
DEFAULT_COUNTS: dict[str, dict[str, int]] = {
    "syn_nq": {"train": 1000, "test": 200}, "syn_hotpotqa": {"train": 1000, "test": 200},
    "syn_triviaqa": {"test": 200}, "syn_popqa": {"test": 200}, "syn_2wiki": {"test": 200},
    "syn_musique": {"test": 200}, "syn_bamboogle": {"test": 125},
}

#: The search query an oracle issues to resolve ``relation`` of a subject called {s}.
HOP_QUERIES = {
    "born_in": "{s} born", "educated_at": "{s} studied at university", "father": "{s} father",
    "spouse": "{s} married", "member_of": "{s} member of band", "award": "{s} received award",
    "directed_by": "{s} film directed by", "author": "{s} book written by", "founded_by": "{s} founded by",
    "headquartered_in": "{s} headquartered in", "located_in": "{s} located in", "capital": "capital of {s}",
    "origin": "{s} band formed in", "flows_through": "{s} flows through", "year": "{s} year",
    "population": "{s} population", "occupation": "{s} works as",
}


@dataclass(frozen=True)
class Chain:
    """A question template over a chain of relations from a subject of ``kind``."""

    kind: str
    relations: tuple[str, ...]
    texts: tuple[str, ...]  # wordings, {s} = the subject's name


def _hop(world: World, entity: Entity, relation: str) -> tuple[dict[str, Any], Entity | None]:
    """One hop of a chain: the hop record and the entity reached (None for attributes)."""
    target = world.rel(entity.eid, relation)
    answer = target.name if target else str(entity.attrs[relation])
    hop = {"query": HOP_QUERIES[relation].format(s=entity.name), "entity": entity.eid, "relation": relation,
           "answer": answer, "support": list(world.support.get(f"{entity.eid}|{relation}", []))}
    return hop, target


def follow(world: World, subject: Entity, relations: tuple[str, ...]) -> tuple[list[dict[str, Any]], str] | None:
    """Walk ``relations`` from ``subject``; None when a link is missing or a fact has no passage."""
    hops, current = [], subject
    for relation in relations:
        if relation not in current.rels and relation not in current.attrs:
            return None
        hop, target = _hop(world, current, relation)
        if not hop["support"]:
            return None
        hops.append(hop)
        if target is None:
            break
        current = target
    return hops, hops[-1]["answer"]


NQ = (
    Chain("person", ("born_in",), ("Where was {s} born?", "In which city was {s} born?")),
    Chain("person", ("educated_at",), ("Where did {s} study?", "Which university did {s} attend?")),
    Chain("film", ("directed_by",), ("Who directed the film {s}?",)),
    Chain("book", ("author",), ("Who wrote the book {s}?",)),
    Chain("company", ("founded_by",), ("Who founded {s}?",)),
    Chain("company", ("headquartered_in",), ("Where is {s} headquartered?",)),
    Chain("city", ("located_in",), ("In which country is the city of {s}?",)),
    Chain("country", ("capital",), ("What is the capital of {s}?",)),
    Chain("band", ("origin",), ("In which city was the band {s} formed?",)),
    Chain("person", ("spouse",), ("Who is {s} married to?",)),
)
TRIVIA = (
    Chain("person", ("born_in",), ("{s} is a native of which city?", "Name the birthplace of {s}.")),
    Chain("film", ("directed_by",), ("Which director made the movie {s}?",)),
    Chain("book", ("author",), ("{s} is a book by which author?",)),
    Chain("river", ("flows_through",), ("The {s} runs through which country?",)),
    Chain("country", ("capital",), ("Which city serves as the capital of {s}?",)),
    Chain("person", ("member_of",), ("{s} played in which band?",)),
)
POPQA = (
    Chain("person", ("occupation",), ("What is {s}'s occupation?",)),
    Chain("person", ("born_in",), ("What is the place of birth of {s}?",)),
    Chain("person", ("educated_at",), ("Where was {s} educated?",)),
)
HOTPOT_BRIDGE = (
    Chain("film", ("directed_by", "born_in"), ("In which city was the director of the film {s} born?",)),
    Chain("book", ("author", "educated_at"), ("Which university did the author of {s} attend?",)),
    Chain("company", ("founded_by", "born_in"), ("Where was the founder of {s} born?",)),
    Chain("person", ("born_in", "located_in"), ("In which country was {s} born?",)),
)
MUSIQUE = (
    Chain("film", ("directed_by", "born_in", "located_in"), ("In which country was the director of the film {s} born?",)),
    Chain("company", ("founded_by", "educated_at", "located_in"),
          ("In which city is the university attended by the founder of {s}?",)),
    Chain("book", ("author", "born_in", "located_in", "capital"),
          ("What is the capital of the country where the author of {s} was born?",)),
)
BAMBOOGLE = (
    Chain("person", ("spouse", "born_in"), ("Where was the spouse of {s} born?",)),
    Chain("person", ("member_of", "origin"), ("In which city was the band of {s} formed?",)),
    Chain("company", ("headquartered_in", "located_in"), ("In which country is {s} headquartered?",)),
    Chain("river", ("flows_through", "capital"), ("What is the capital of the country the {s} flows through?",)),
)
KINSHIP = (
    Chain("person", ("father", "father"), ("Who is the paternal grandfather of {s}?",)),
    Chain("person", ("spouse", "father"), ("Who is the father-in-law of {s}?",)),
)


def _ambiguous_names(world: World) -> frozenset[str]:
    """Lower-cased names that more than one entity carries (the deliberate collisions)."""
    cached = world.__dict__.get("_ambiguous_names")
    if cached is not None:
        return cached
    counts: dict[str, int] = {}
    for entity in world.entities.values():
        counts[entity.name.lower()] = counts.get(entity.name.lower(), 0) + 1
    world.__dict__["_ambiguous_names"] = frozenset(name for name, n in counts.items() if n > 1)
    return world.__dict__["_ambiguous_names"]


def _subjects(world: World, kind: str, rng: random.Random, *, tail: bool = False) -> list[Entity]:
    ambiguous = _ambiguous_names(world)
    pool = [e for e in world.by_kind(kind) if e.name.lower() not in ambiguous]
    rng.shuffle(pool)
    if tail:
        pool.sort(key=lambda e: world.mentions[e.eid])  # stable: ties keep the shuffled order
    return pool


def _chain_questions(world: World, chains: tuple[Chain, ...], rng: random.Random, *, tail: bool = False,
                     kind_label: str = "bridge") -> Iterator[dict[str, Any]]:
    """Round-robin over ``chains``, each over its own shuffled subject pool."""
    pools = [iter(_subjects(world, chain.kind, rng, tail=tail)) for chain in chains]
    live = list(range(len(chains)))
    while live:
        for index in list(live):
            chain = chains[index]
            for subject in pools[index]:
                walked = follow(world, subject, chain.relations)
                if walked is None:
                    continue
                hops, answer = walked
                text = rng.choice(chain.texts).format(s=subject.name)
                yield {"question": text, "golden_answers": [answer],
                       "metadata": {"kind": kind_label if len(hops) > 1 else "single", "relations": list(chain.relations),
                                    "subject": subject.eid, "hops": hops}}
                break
            else:
                live.remove(index)


COMPARISONS = (
    ("film", "year", "Which film was released first, {a} or {b}?", min),
    ("person", "year", "Who was born first, {a} or {b}?", min),
    ("book", "year", "Which book was published more recently, {a} or {b}?", max),
)
POPULATION = (("city", "population", "Which city has the larger population, {a} or {b}?", max),)


def _comparison_questions(world: World, specs: tuple, rng: random.Random) -> Iterator[dict[str, Any]]:
    pools = {kind: _subjects(world, kind, rng) for kind, *_ in specs}
    for i in range(10**9):
        kind, attr, text, pick = specs[i % len(specs)]
        pool = pools[kind]
        if len(pool) < 2:
            return
        a, b = pool.pop(), pool.pop()
        if a.attrs[attr] == b.attrs[attr]:
            continue
        winner = pick((a, b), key=lambda e: e.attrs[attr])
        hops = [follow(world, e, (attr,)) for e in (a, b)]
        if any(h is None for h in hops):
            continue
        yield {"question": text.format(a=a.name, b=b.name), "golden_answers": [winner.name],
               "metadata": {"kind": "comparison", "relations": [attr, attr], "subject": a.eid,
                            "hops": [h[0][0] for h in hops]}}  # type: ignore[index]


def _interleave(*streams: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    live = list(streams)
    while live:
        for stream in list(live):
            item = next(stream, None)
            if item is None:
                live.remove(stream)
            else:
                yield item


def _streams(world: World, rng: random.Random) -> dict[str, Callable[[], Iterator[dict[str, Any]]]]:
    return {
        "syn_nq": lambda: _chain_questions(world, NQ, rng),
        "syn_triviaqa": lambda: _chain_questions(world, TRIVIA, rng),
        "syn_popqa": lambda: _chain_questions(world, POPQA, rng, tail=True),
        "syn_hotpotqa": lambda: _interleave(_chain_questions(world, HOTPOT_BRIDGE, rng), _chain_questions(world, HOTPOT_BRIDGE, rng),
                                            _comparison_questions(world, COMPARISONS, rng)),
        "syn_2wiki": lambda: _interleave(_chain_questions(world, KINSHIP, rng, kind_label="inference"),
                                         _comparison_questions(world, POPULATION, rng)),
        "syn_musique": lambda: _chain_questions(world, MUSIQUE, rng),
        "syn_bamboogle": lambda: _chain_questions(world, BAMBOOGLE, rng),
    }


def generate_questions(world: World, counts: dict[str, dict[str, int]] | None = None,
                       seed: int | None = None) -> list[dict[str, Any]]:
    """All questions of the world: per source, ``test`` first then ``train`` (when asked for)."""
    counts = counts or DEFAULT_COUNTS
    rng = random.Random(f"synwiki-questions:{world.seed if seed is None else seed}")
    seen_texts: set[str] = set()
    out: list[dict[str, Any]] = []
    streams = _streams(world, rng)
    for source in SOURCES:
        wanted = counts.get(source, {})
        stream = streams[source]()
        for split in ("test", "train"):
            for index in range(wanted.get(split, 0)):
                for item in stream:
                    if item["question"] not in seen_texts:
                        break
                else:
                    break
                seen_texts.add(item["question"])
                out.append({"id": f"{source}-{split}-{index:05d}", "question": item["question"],
                            "golden_answers": item["golden_answers"], "data_source": source, "split": split,
                            "metadata": item["metadata"]})
    return out

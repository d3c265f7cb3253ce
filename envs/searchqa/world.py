"""SynWiki: a seeded fictional world of typed entities and relations, rendered as wiki passages.

Rules:

* Everything is drawn from one ``random.Random(seed)`` in a fixed order, so a seed and a size give
  the same world, byte for byte, on every machine (no ``hash()``, no set iteration order).
* Entities: persons, cities, countries, universities, companies, films, books, bands, rivers and
  awards, with relations ``born_in``, ``located_in``, ``capital``, ``educated_at``, ``father``,
  ``spouse``, ``member_of``, ``award``, ``directed_by``, ``author``, ``founded_by``,
  ``headquartered_in``, ``origin``, ``flows_through`` and numeric attributes (``year``,
  ``population``, ``length``, ``occupation``).
* Passages: one article per entity, in wiki-18 form (``"Title"`` + newline + text), chunked at
  sentence ends to about 100 words. Each fact is written with one of several paraphrases; some
  facts appear only in another entity's article, some in both; articles also carry distractor
  sentences that state true facts about *other* entities. Deliberate collisions: some films share
  a city's name (title ``X (film)``) and some persons share a name (title ``Name (born YEAR)``).
* Every rendering of a fact records the passage it landed in: a fact's *supporting passages*.
"""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from seed_gym.envs.searchqa.names import OCCUPATIONS, NameSpace

WORLD_VERSION = "synwiki-1"
WORDS_PER_PASSAGE = 100

#: Share of entities per kind (countries and awards get at least a few).
KIND_SHARES = {"person": 0.40, "city": 0.12, "country": 0.03, "university": 0.05, "company": 0.07,
               "film": 0.12, "book": 0.12, "band": 0.04, "river": 0.03, "award": 0.02}
MIN_PER_KIND = {"country": 4, "award": 3, "city": 8, "university": 3, "band": 3, "river": 3}


@dataclass
class Entity:
    eid: str
    kind: str
    name: str
    title: str
    attrs: dict[str, Any] = field(default_factory=dict)
    rels: dict[str, str] = field(default_factory=dict)

    @property
    def collided(self) -> bool:
        return self.title != self.name


@dataclass
class Passage:
    pid: str
    title: str
    text: str

    @property
    def contents(self) -> str:
        return f'"{self.title}"\n{self.text}'


@dataclass
class World:
    seed: int
    entities: dict[str, Entity]
    passages: list[Passage]
    support: dict[str, list[str]]  # fact key "eid|relation" -> passage ids, in order
    mentions: dict[str, int]  # eid -> how often other articles mention it (popularity)

    def by_kind(self, kind: str) -> list[Entity]:
        return [e for e in self.entities.values() if e.kind == kind]

    def rel(self, eid: str, relation: str) -> Entity | None:
        target = self.entities[eid].rels.get(relation)
        return self.entities[target] if target else None


# -- entities ---------------------------------------------------------------------------------
def _counts(entities: int) -> dict[str, int]:
    return {kind: max(MIN_PER_KIND.get(kind, 2), round(entities * share)) for kind, share in KIND_SHARES.items()}


def _make_entities(rng: random.Random, entities: int) -> dict[str, Entity]:
    counts = _counts(entities)
    names = NameSpace(rng, set())
    out: dict[str, Entity] = {}

    def add(kind: str, name: str, title: str | None = None, **attrs: Any) -> Entity:
        entity = Entity(f"{kind}:{len(out)}", kind, name, title or name, dict(attrs))
        out[entity.eid] = entity
        return entity

    countries = [add("country", names.country()) for _ in range(counts["country"])]
    cities = []
    for i in range(counts["city"]):
        city = add("city", names.place(), population=rng.randint(2, 900) * 1000 + rng.randint(0, 999))
        city.rels["located_in"] = countries[i % len(countries)].eid if i < len(countries) else rng.choice(countries).eid
        cities.append(city)
    for country, city in zip(countries, cities):
        country.rels["capital"] = city.eid
    for _ in range(counts["university"]):
        city = rng.choice(cities)
        name = f"University of {city.name}" if rng.random() < 0.3 else f"{names.place()} Institute of Technology"
        if name.lower() in names.taken:
            name = f"{names.place()} University"
        names.taken.add(name.lower())
        add("university", name, year=rng.randint(1700, 1990)).rels["located_in"] = city.eid
    for _ in range(counts["river"]):
        river = add("river", f"{names.place()} River", length=rng.randint(40, 3000))
        river.rels["flows_through"] = rng.choice(countries).eid
    for _ in range(counts["award"]):
        add("award", f"{names.person().split()[1]} Prize", year=rng.randint(1900, 1990))
    for _ in range(counts["band"]):
        band = add("band", names.titled(rng.choice(("The {w} {noun}s", "{w} {noun}"))),
                   year=rng.randint(1960, 2015))
        band.rels["origin"] = rng.choice(cities).eid
    universities = [e for e in out.values() if e.kind == "university"]
    bands = [e for e in out.values() if e.kind == "band"]
    awards = [e for e in out.values() if e.kind == "award"]
    years = sorted(rng.randint(1900, 1995) for _ in range(counts["person"]))
    persons: list[Entity] = []
    for year in years:  # oldest first, so a father is always generated before his children
        if persons and rng.random() < 0.02:  # deliberate name collision
            name = rng.choice(persons).name
            title = f"{name} (born {year})"
        else:
            name, title = names.person(), None
        person = add("person", name, title, year=year, occupation=rng.choice(OCCUPATIONS),
                     gender=rng.choice(("m", "f")))
        person.rels["born_in"] = rng.choice(cities).eid
        person.rels["educated_at"] = rng.choice(universities).eid
        older = [p for p in persons[-60:] if p.attrs["gender"] == "m" and 20 <= year - p.attrs["year"] <= 45]
        if older and rng.random() < 0.6:
            person.rels["father"] = rng.choice(older).eid
        if rng.random() < 0.15:
            person.rels["member_of"] = rng.choice(bands).eid
        if rng.random() < 0.15:
            person.rels["award"] = rng.choice(awards).eid
            person.attrs["award_year"] = min(2020, year + rng.randint(25, 60))
        persons.append(person)
    singles = [p for p in persons if "spouse" not in p.rels]
    rng.shuffle(singles)
    for a, b in zip(singles[0::4], singles[1::4]):  # about half the persons are married
        if a.attrs["gender"] != b.attrs["gender"] and abs(a.attrs["year"] - b.attrs["year"]) < 15:
            a.rels["spouse"], b.rels["spouse"] = b.eid, a.eid
    city_names = [c.name for c in cities]
    patterns = {"film": ("The {adj} {noun} of {w}", "{w} {noun}", "The {noun} of {w}", "{w} Road"),
                "book": ("{adj} {noun} of {w}", "{w} Letters", "The {w} Chronicles", "A {noun} for {w}")}
    for kind, relation in (("film", "directed_by"), ("book", "author")):
        for _ in range(counts[kind]):
            if kind == "film" and rng.random() < 0.03:
                name = rng.choice(city_names)
                title = f"{name} (film)"
                if title.lower() in names.taken:
                    name, title = names.titled(rng.choice(patterns[kind])), None
                else:
                    names.taken.add(title.lower())
            else:
                name, title = names.titled(rng.choice(patterns[kind])), None
            creator = rng.choice(persons)
            work = add(kind, name, title, year=min(2020, creator.attrs["year"] + rng.randint(22, 60)))
            work.rels[relation] = creator.eid
    for _ in range(counts["company"]):
        company = add("company", f"{names.place()} {rng.choice(('Industries', 'Holdings', 'Systems', 'Foods', 'Motors', 'Records'))}",
                      year=rng.randint(1850, 2015))
        company.rels["founded_by"] = rng.choice(persons).eid
        company.rels["headquartered_in"] = rng.choice(cities).eid
    return out


# -- rendering --------------------------------------------------------------------------------
Sentence = tuple[str, "str | None"]  # text, fact key it states (or None)

#: Paraphrases per fact: {s} subject, {o} object, {y} year/number. Keys are "kind.relation".
TEMPLATES: dict[str, tuple[str, ...]] = {
    "person.born_in": ("{s} was born in {o}.", "{s} is a native of {o}.", "{s} grew up in {o}, where {p} was born.",
                       "The birthplace of {s} is {o}.", "{s} came into the world in the city of {o}."),
    "person.educated_at": ("{s} studied at {o}.", "{s} was educated at {o}.", "{s} graduated from {o}.",
                           "{s} attended {o} as a young adult."),
    "person.father": ("{s} is the {child} of {o}.", "{p_cap} was born to {o}.", "{s}'s father was {o}."),
    "person.spouse": ("{s} married {o}.", "{s} was the {spouse_word} of {o}.", "{s} and {o} were married for many years."),
    "person.member_of": ("{s} was a member of {o}.", "{s} played in the band {o}."),
    "person.award": ("{s} received the {o} in {y}.", "In {y}, {s} was awarded the {o}.", "{s} won the {o} ({y})."),
    "film.directed_by": ("{s} is a {y} film directed by {o}.", "{s} was directed by {o} and released in {y}.",
                         "Released in {y}, {s} is a feature film by director {o}."),
    "book.author": ("{s} is a {y} book written by {o}.", "{s} was written by {o} and published in {y}.",
                    "Published in {y}, {s} is a novel by {o}.", "The author of {s} is {o}; it appeared in {y}."),
    "company.founded_by": ("{s} was founded by {o} in {y}.", "{o} established {s} in {y}.", "{s}, founded in {y}, was started by {o}."),
    "company.headquartered_in": ("{s} is headquartered in {o}.", "The headquarters of {s} are in {o}.", "{s} has its main offices in {o}."),
    "city.located_in": ("{s} is a city in {o}.", "{s} is located in {o}.", "{s} lies in the country of {o}."),
    "country.capital": ("The capital of {s} is {o}.", "{o} is the capital city of {s}.", "{s}'s capital and largest city is {o}."),
    "university.located_in": ("{s} is a university in {o}.", "{s} is located in the city of {o}.", "The campus of {s} is in {o}."),
    "band.origin": ("{s} is a band formed in {o} in {y}.", "{s} formed in {o} in {y}.", "Founded in {y}, {s} comes from {o}."),
    "river.flows_through": ("The {s} flows through {o}.", "The {s} is a river of {o}.", "The {s} runs across {o}."),
}
#: Inverse renderings, written in the *object's* article (facts that live in other articles).
INVERSE: dict[str, tuple[str, ...]] = {
    "person.educated_at": ("Notable alumni of {o} include {s}.", "{s} is among the graduates of {o}."),
    "person.father": ("{o}'s children include {s}.",),
    "person.spouse": ("{o} was married to {s}.",),
    "person.member_of": ("The members of {o} included {s}.", "{o}'s line-up featured {s}."),
    "person.award": ("Recipients of the {o} include {s} ({y}).",),
    "film.directed_by": ("{o} directed {s} ({y}).", "Among the films of {o} is {s}."),
    "book.author": ("{o} wrote {s} ({y}).", "{o} is the author of {s}."),
    "company.founded_by": ("{o} founded {s}.",),
    "river.flows_through": ("The {s} flows through {o}.",),
}
INVERSE_SHARE = {"person.educated_at": 0.3, "person.father": 0.5, "person.spouse": 1.0, "person.member_of": 1.0,
                 "person.award": 0.5, "film.directed_by": 0.5, "book.author": 0.5, "company.founded_by": 0.4,
                 "river.flows_through": 0.5}
#: Facts that appear *only* in the object's article with this probability.
ONLY_INVERSE = {"person.member_of": 0.5, "person.educated_at": 0.2}
FILLERS = ("{s} has been discussed in several histories of the period.", "Little is recorded about the early years of {s}.",
           "{s} is mentioned in a number of regional archives.", "Critics have written at length about {s}.",
           "{s} remains a subject of local interest.", "Several later accounts refer to {s} in passing.")
LEADS = {"city": "{s} is a city with a population of {pop}.", "country": "{s} is a country.",
         "university": "{s} is an institution of higher education founded in {y}.",
         "river": "The {s} is a river {length} kilometres long.", "award": "The {s} is an award established in {y}.",
         "company": "{s} is a company.", "band": "{s} is a musical group.", "film": "{s} is a film.", "book": "{s} is a book."}


def _pronoun(entity: Entity) -> str:
    return {"m": "he", "f": "she"}.get(entity.attrs.get("gender", ""), "it")


def _fill(template: str, s: Entity, o: Entity, year: Any) -> str:
    gender = s.attrs.get("gender", "")
    return template.format(s=s.name, o=o.name, y=year, p=_pronoun(s), p_cap=s.name,
                           child="son" if gender == "m" else "daughter",
                           spouse_word="husband" if gender == "m" else "wife")


def _fact_year(s: Entity, relation: str) -> Any:
    return s.attrs.get("award_year") if relation == "award" else s.attrs.get("year")


def _render(rng: random.Random, world: dict[str, Entity], mentions: dict[str, int]) -> dict[str, list[Sentence]]:
    """Every entity's article as sentences with the fact each one states."""
    articles: dict[str, list[Sentence]] = {eid: [] for eid in world}
    for entity in world.values():
        if entity.kind == "person":
            lead = f"{entity.name} (born {entity.attrs['year']}) is a {entity.attrs['occupation']}."
            articles[entity.eid].append((lead, f"{entity.eid}|year"))
            articles[entity.eid].append((f"{entity.name} works as a {entity.attrs['occupation']}.", f"{entity.eid}|occupation"))
        else:
            lead = LEADS[entity.kind].format(s=entity.name, y=entity.attrs.get("year"), pop=entity.attrs.get("population"),
                                             length=entity.attrs.get("length"))
            key = {"city": "population", "river": "length"}.get(entity.kind, "year")
            articles[entity.eid].append((lead, f"{entity.eid}|{key}"))
    for entity in world.values():
        for relation, target in entity.rels.items():
            obj = world[target]
            key = f"{entity.kind}.{relation}"
            fact = f"{entity.eid}|{relation}"
            year = _fact_year(entity, relation)
            mentions[target] += 1
            only_inverse = key in INVERSE and rng.random() < ONLY_INVERSE.get(key, 0.0)
            if not only_inverse:
                articles[entity.eid].append((_fill(rng.choice(TEMPLATES[key]), entity, obj, year), fact))
            if key in INVERSE and (only_inverse or rng.random() < INVERSE_SHARE[key]):
                articles[target].append((_fill(rng.choice(INVERSE[key]), entity, obj, year), fact))
    entities = list(world.values())
    for entity in entities:
        sentences = articles[entity.eid]
        for _ in range(rng.randint(1, 3)):
            sentences.append((rng.choice(FILLERS).format(s=entity.name), None))
        if rng.random() < 0.35:  # a distractor: a true fact about another (often same-kind) entity
            other = rng.choice(entities)
            if other.rels and other.eid != entity.eid:
                relation = sorted(other.rels)[rng.randrange(len(other.rels))]
                key = f"{other.kind}.{relation}"
                text = _fill(rng.choice(TEMPLATES[key]), other, world[other.rels[relation]], _fact_year(other, relation))
                sentences.append((f"{entity.name} is sometimes confused with {other.name}. " + text,
                                  f"{other.eid}|{relation}"))
                mentions[other.eid] += 1
        lead, rest = sentences[0], sentences[1:]
        rng.shuffle(rest)
        articles[entity.eid] = [lead] + rest
    return articles


def _chunk(sentences: list[Sentence], limit: int = WORDS_PER_PASSAGE) -> list[list[Sentence]]:
    """Group sentences into passages of about ``limit`` words (never splitting a sentence)."""
    chunks: list[list[Sentence]] = [[]]
    words = 0
    for sentence in sentences:
        n = len(sentence[0].split())
        if chunks[-1] and words + n > limit:
            chunks.append([])
            words = 0
        chunks[-1].append(sentence)
        words += n
    return chunks


def generate_world(seed: int = 0, entities: int = 4000) -> World:
    """The world for ``seed`` with about ``entities`` entities (about 2.2 passages each)."""
    if entities < 50:
        raise ValueError(f"entities must be >= 50, got {entities}")
    rng = random.Random(f"synwiki:{seed}")
    world = _make_entities(rng, entities)
    mentions: dict[str, int] = defaultdict(int)
    articles = _render(rng, world, mentions)
    passages: list[Passage] = []
    support: dict[str, list[str]] = defaultdict(list)
    for eid, sentences in articles.items():
        for chunk in _chunk(sentences):
            pid = str(len(passages))
            passages.append(Passage(pid, world[eid].title, " ".join(text for text, _ in chunk)))
            for _, fact in chunk:
                if fact and pid not in support[fact]:
                    support[fact].append(pid)
    return World(seed, world, passages, dict(support), {eid: mentions.get(eid, 0) for eid in world})

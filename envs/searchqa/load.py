"""The retrieval server (``seed-gym serve retriever``) as a ``seed-gym bench serve-load`` target
(:mod:`seed_gym.loadtest`): short requests are one query, top 3, as Search-R1's client posts
each turn; the long request is the largest the server takes, 1,024 queries at top 100."""

from __future__ import annotations

from seed_gym.loadtest import Call, LoadTarget

QUERIES = ("who directed the film", "capital of the country", "river that flows through", "born in the year",
           "founder of the company", "author of the novel", "mountain in the range", "team that won the")


def target(entities: int = 10_000, seed: int = 0) -> LoadTarget:
    def short(client: int, i: int) -> Call:
        return Call("POST", "/retrieve", json={"queries": [f"{QUERIES[(client + i) % len(QUERIES)]} {i}"], "topk": 3})

    many = [f"{QUERIES[i % len(QUERIES)]} {i}" for i in range(1024)]
    return LoadTarget(name="retriever", serve=["retriever", "--entities", str(entities), "--seed", str(seed)],
                      health="/health", short=short, long=Call("POST", "/retrieve", json={"queries": many, "topk": 100}),
                      describe={"entities": entities, "seed": seed, "long": "1,024 queries, top 100"})

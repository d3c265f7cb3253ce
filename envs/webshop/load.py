"""The WebShop server as a ``seed-gym bench serve-load`` target (:mod:`seed_gym.loadtest`).

Each client plays its own session ``fixed_<c>-load<c>``: the search page, a search (a form post,
answered by a redirect), and the first two result pages, in turn. The long request is a slow client: a search at the query cap
(1,000 characters) whose form body takes ``long_upload_s`` seconds to arrive (within the read
deadline), the kind of request that held a connection, or a worker, while the others waited.
"""

from __future__ import annotations

from urllib.parse import quote

from seed_gym.loadtest import Call, LoadTarget

WORDS = ("jeans", "shoes", "coffee", "lamp", "shirt", "organic", "wireless", "leather", "blue", "small")


def target(products: int = 1000, seed: int = 0, long_upload_s: float = 3.0) -> LoadTarget:
    def short(client: int, i: int) -> Call:
        sid = f"fixed_{client}-load{client}"
        words = quote(f"{WORDS[client % len(WORDS)]} {WORDS[(client + i) % len(WORDS)]}", safe="")
        step = i % 4
        if step == 0:
            return Call("GET", f"/{sid}")
        if step == 1:
            return Call("POST", f"/{sid}", data={"search_query": words})
        return Call("GET", f"/search_results/{sid}/{words}/{step - 1}")

    long_query = " ".join(WORDS[i % len(WORDS)] + str(i) for i in range(200))[:1000]
    return LoadTarget(name="webshop", serve=["webshop", "--products", str(products), "--seed", str(seed)],
                      health="/fixed_0", short=short,
                      long=Call("POST", "/fixed_0-long", data={"search_query": long_query},
                                trickle_s=float(long_upload_s)),
                      describe={"products": products, "seed": seed,
                                "long": f"a 1,000-character search whose form arrives over {long_upload_s} s"})

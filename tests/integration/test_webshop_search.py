"""WebShop search: the bm25s default against pyserini (Lucene) on the same catalogue, and the CLI."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration

N = 300


@pytest.fixture(scope="module")
def shop(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("SEED_GYM_HOME", str(tmp_path_factory.mktemp("home")))
    from seed_gym.envs.webshop.shop import get_shop

    yield get_shop(num_products=N, seed=9)
    mp.undo()


def test_bm25s_and_pyserini_agree_on_top10(shop):
    pytest.importorskip("pyserini")
    from seed_gym.envs.webshop.catalog import search_document
    from seed_gym.retrieval import build_retriever

    lucene = build_retriever("pyserini", [(a, search_document(p)) for a, p in shop.products.items()])
    queries = sorted({g["query"] for g in shop.goals})
    queries += [g["instruction_text"].lower() for g in shop.goals[:30]]
    bm25 = shop.retriever()
    overlaps = []
    for query in queries:
        a = [h.doc_id for h in bm25.search([query], 10)[0]]
        b = [h.doc_id for h in lucene.search([query], 10)[0]]
        overlaps.append(len(set(a) & set(b)) / max(1, min(len(a), len(b))))
    mean = sum(overlaps) / len(overlaps)
    print(f"bm25s vs pyserini mean top-10 overlap over {len(queries)} queries: {mean:.3f}")
    assert mean >= 0.8


def test_index_is_cached_on_disk_and_reused(shop, tmp_path):
    from seed_gym.cache import env_cache
    from seed_gym.envs.webshop.shop import build_shop

    cached = list((env_cache("webshop") / "index").glob("bm25s-*"))
    assert cached, "the index was not written under $SEED_GYM_HOME"
    again = build_shop(shop.root, seed=9)
    assert again.catalog_fingerprint == shop.catalog_fingerprint
    query = shop.goals[0]["query"].split(" ")
    assert again.search(query) == shop.search(query)


def test_data_command_writes_upstream_files(tmp_path, shop):
    out = tmp_path / "shop"
    run = subprocess.run([sys.executable, "-m", "seed_gym.cli", "data", "webshop", "--out", str(out),
                          "--products", "150", "--seed", "2"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    items = json.loads((out / "items_shuffle.json").read_text())
    ins = json.loads((out / "items_ins_v2.json").read_text())
    assert len(items) == 150 and set(ins) == {i["asin"] for i in items}
    assert (out / "items_human_ins.json").is_file() and "test" in run.stdout


def test_serve_command_binds_loopback(tmp_path, shop):
    import os
    import signal
    import time

    import httpx

    from seed_gym.envs.webshop.browser import free_port

    port = free_port()
    env = {**os.environ, "SEED_GYM_HOME": str(shop.root.parent.parent)}
    proc = subprocess.Popen([sys.executable, "-m", "seed_gym.cli", "serve", "webshop", "--port", str(port),
                             "--products", str(N), "--seed", "9"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        for _ in range(600):
            try:
                response = httpx.get(f"http://127.0.0.1:{port}/fixed_0", timeout=5)
                break
            except httpx.TransportError:
                if proc.poll() is not None:
                    raise AssertionError(proc.stderr.read().decode()[-2000:])
                time.sleep(0.2)
        else:
            raise AssertionError("server did not come up")
        assert response.status_code == 200 and shop.goals[0]["instruction_text"] in response.text
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)

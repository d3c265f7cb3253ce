"""``seed-gym data webshop``, ``seed-gym serve webshop`` and ``seed-gym bench webshop``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from seed_gym.serving import (DEFAULT_KEEP_ALIVE_S, DEFAULT_MAX_CONNECTIONS, DEFAULT_READ_TIMEOUT_S,
                             KeepAliveOption, MaxConnectionsOption, ReadTimeoutOption)


def register(app: typer.Typer, data_app: typer.Typer, bench_app: typer.Typer, serve_app: typer.Typer) -> None:
    from seed_gym.commands import console

    @data_app.command("webshop")
    def data_webshop(
        out: Optional[Path] = typer.Option(None, help="Folder to write; default: the cache the env reads."),
        products: int = typer.Option(1000, help="Products in the catalogue (up to 100,000)."),
        seed: int = typer.Option(0, help="Catalogue seed."),
        goals: str = typer.Option("synthetic", help="Goal kind: synthetic or human."),
    ) -> None:
        """Generate the SynShop catalogue (items_shuffle / items_ins_v2 / items_human_ins) and its index."""
        from rich.table import Table

        from seed_gym.envs.webshop.catalog import write_catalog
        from seed_gym.envs.webshop.shop import get_shop, synthetic_root

        root = write_catalog(out, products, seed) if out else synthetic_root(seed, products)
        shop = get_shop(str(root) if out else None, num_products=products, seed=seed, goals=goals)
        shop.retriever()
        table = Table(title=f"SynShop (seed {seed}, {len(shop.products)} products, {goals} goals)")
        for column in ("split", "goals"):
            table.add_column(column)
        for name, idx in shop.splits.items():
            table.add_row(name, str(len(idx)))
        console.print(table)
        console.print(f"data fingerprint {shop.task_set.data_fingerprint}; files under {shop.root}")

    @serve_app.command("webshop")
    def serve_webshop(
        host: str = typer.Option("127.0.0.1", help="Bind address (loopback by default)."),
        port: int = typer.Option(3000, help="Port."),
        data: Optional[str] = typer.Option(None, help="Folder of upstream WebShop files (default: SynShop)."),
        products: int = typer.Option(1000, help="SynShop products."),
        seed: int = typer.Option(0, help="SynShop seed."),
        goals: str = typer.Option("synthetic", help="synthetic or human."),
        state_api: bool = typer.Option(False, help="Also serve GET /api/<sid>/state (session JSON with the goal: the answer key)."),
        max_sessions: int = typer.Option(10_000, min=1, help="Sessions held in memory in all."),
        max_sessions_per_client: int = typer.Option(1000, min=1, help="Sessions held per remote address."),
        session_idle_s: float = typer.Option(600.0, min=0.001, help="A session unused this long (or finished) may "
                                             "make room for a new one; live ones never do (full: 429/503)."),
        read_timeout: ReadTimeoutOption = DEFAULT_READ_TIMEOUT_S,
        keep_alive: KeepAliveOption = DEFAULT_KEEP_ALIVE_S,
        max_connections: MaxConnectionsOption = DEFAULT_MAX_CONNECTIONS,
    ) -> None:
        """Serve the WebShop pages (search, results, item, sub-pages, done) with a session per episode."""
        from seed_gym.envs.webshop.server import create_app
        from seed_gym.serving import run_server

        app = create_app(data=data, num_products=products, seed=seed, goals=goals, state_api=state_api,
                         max_sessions=max_sessions, max_sessions_per_client=max_sessions_per_client,
                         session_idle_s=session_idle_s)
        run_server(app, host, port, read_timeout_s=read_timeout, keep_alive_s=keep_alive, max_connections=max_connections)

    @bench_app.command("webshop")
    def bench_webshop(
        sizes: str = typer.Option("1000,100000", help="Catalogue sizes, comma separated."),
        steps: int = typer.Option(300, help="Random env steps per size."),
        queries: int = typer.Option(200, help="Search queries per size."),
        out: Optional[Path] = typer.Option(None, help="Also write the results as JSON here."),
    ) -> None:
        """Step latency p50/p99 and search p50 per catalogue size; bm25s vs pyserini when installed."""
        from rich.table import Table

        from seed_gym.envs.webshop.bench import run_benchmark

        result = run_benchmark([int(s) for s in sizes.split(",") if s], steps=steps, queries=queries)
        table = Table(title="WebShop latency (one run)")
        for column in ("products", "step p50 ms", "step p99 ms", "search p50 ms", "target"):
            table.add_column(column, justify="right")
        for row in result["sizes"]:
            table.add_row(str(row["products"]), f"{row['step_p50_ms']:.2f}", f"{row['step_p99_ms']:.2f}",
                          f"{row['search_p50_ms']:.2f}", row["target"])
        console.print(table)
        for row in result.get("backends", []):
            console.print(row)
        if out:
            out.write_text(json.dumps(result, indent=2))

"""``seed-gym data searchqa``, ``seed-gym serve retriever`` and ``seed-gym bench retriever``.

Heavy modules (the world generator, bm25s, uvicorn, Java) load inside the commands.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from seed_gym.serving import (DEFAULT_KEEP_ALIVE_S, DEFAULT_MAX_CONNECTIONS, DEFAULT_READ_TIMEOUT_S,
                             KeepAliveOption, MaxConnectionsOption, ReadTimeoutOption)


def register(app: typer.Typer, data_app: typer.Typer, bench_app: typer.Typer, serve_app: typer.Typer) -> None:
    from seed_gym.commands import console, library_progress, new_progress

    @data_app.command("searchqa")
    def data_searchqa(
        out: Optional[Path] = typer.Option(None, help="Folder to write; default: the cache the env reads."),
        seed: int = typer.Option(0, help="World seed."),
        entities: int = typer.Option(10_000, help="Entities in the world (about one passage each)."),
        index: list[str] = typer.Option(["bm25s"], help="Also build this backend's index (repeatable)."),
    ) -> None:
        """Generate the SynWiki world: corpus.jsonl + questions/{train,test}.jsonl (Search-R1 format)."""
        from collections import Counter

        from rich.table import Table

        from seed_gym.envs.searchqa.data import QAData, _question_files, generated_root, write_generated

        root = out or generated_root(seed, entities)
        with new_progress() as bar, library_progress(bar):
            write_generated(root, seed=seed, entities=entities)
            data = QAData(str(root), root, root / "corpus.jsonl", _question_files(root / "questions"))
            for backend in index:
                data.retriever(backend)
        counts = Counter((q["data_source"], q["split"]) for q in data.questions.values())
        table = Table(title=f"SynWiki (seed {seed}, {entities} entities, {len(data.passages)} passages)")
        for column in ("source", "split", "questions"):
            table.add_column(column)
        for (source, split), n in sorted(counts.items()):
            table.add_row(source, split, str(n))
        console.print(table)
        console.print(f"data fingerprint {data.task_set().data_fingerprint}; written under {root}")

    @serve_app.command("retriever")
    def serve_retriever(
        data: Optional[str] = typer.Option(None, help="Data folder (corpus.jsonl + questions); default: generated."),
        corpus: Optional[str] = typer.Option(None, help="A Search-R1 passage JSONL (real data)."),
        index_path: Optional[Path] = typer.Option(None, "--index", help="A saved retriever to load instead of building."),
        seed: int = typer.Option(0, help="World seed (generated data)."),
        entities: int = typer.Option(10_000, help="World size (generated data)."),
        backend: str = typer.Option("bm25s", help="bm25s, pyserini or dense."),
        host: str = typer.Option("127.0.0.1", help="Bind address (loopback by default)."),
        port: int = typer.Option(8000, help="Port."),
        topk: int = typer.Option(3, help="Default top-k when a request has none."),
        read_timeout: ReadTimeoutOption = DEFAULT_READ_TIMEOUT_S,
        keep_alive: KeepAliveOption = DEFAULT_KEEP_ALIVE_S,
        max_connections: MaxConnectionsOption = DEFAULT_MAX_CONNECTIONS,
    ) -> None:
        """Serve POST /retrieve (Search-R1's contract, plus the single-`query` form)."""
        from seed_gym.envs.searchqa.data import QAData, load_data
        from seed_gym.envs.searchqa.server import create_app, serve
        from seed_gym.retrieval import load_retriever

        if corpus:
            path = Path(corpus)
            qa = QAData(str(path), path.parent, path, [])
        else:
            qa = load_data(data, seed=seed, entities=entities)
        retriever = load_retriever(index_path) if index_path else qa.retriever(backend)
        console.print(f"serving {len(qa.passages)} passages ({retriever.backend}) on http://{host}:{port}/retrieve")
        serve(create_app(retriever, qa.passages, default_topk=topk), host=host, port=port,
              read_timeout_s=read_timeout, keep_alive_s=keep_alive, max_connections=max_connections)

    @bench_app.command("retriever")
    def bench_retriever(
        passages: int = typer.Option(10_000, help="Passages for the per-backend comparison."),
        large: int = typer.Option(1_000_000, help="Passages for the bm25s scale run (0 skips it)."),
        backend: list[str] = typer.Option(["bm25s", "pyserini", "dense"], help="Backends to compare."),
        queries: int = typer.Option(500, help="Queries per measurement."),
        clients: int = typer.Option(32, help="Concurrent HTTP clients for the server run."),
        requests: int = typer.Option(20, help="Requests per client."),
        out: Optional[Path] = typer.Option(None, help="Write the result as JSON."),
    ) -> None:
        """Queries/s per backend and at scale, server throughput and p99: ratios vs bm25s at --passages."""
        from seed_gym.envs.searchqa.bench import print_result, run_benchmark

        with new_progress() as bar, library_progress(bar):
            result = run_benchmark(passages=passages, large=large, backends=backend, queries=queries,
                                   clients=clients, requests=requests, log=console.print)
        print_result(result, console)
        if out:
            out.write_text(json.dumps(result, indent=2))

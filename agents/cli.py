"""Commands of the model agents: ``model init``, ``serve policy`` and ``bench agent``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

from seed_gym.serving import (DEFAULT_KEEP_ALIVE_S, DEFAULT_MAX_CONNECTIONS, DEFAULT_READ_TIMEOUT_S,
                             KeepAliveOption, MaxConnectionsOption, ReadTimeoutOption)

console = Console()


def register(app: typer.Typer, data_app: typer.Typer, bench_app: typer.Typer, serve_app: typer.Typer) -> None:
    model_app = typer.Typer(no_args_is_help=True, help="Local model folders: build the tiny offline model.")
    app.add_typer(model_app, name="model")

    @model_app.command("init")
    def model_init(
        out: Path = typer.Option(..., help="Folder to write the model and tokenizer into."),
        size: str = typer.Option("tiny", help="tiny (~1M parameters) or small (~5M)."),
        seed: int = typer.Option(0, help="Seed of the weights (every seed of a size shares one tokenizer)."),
    ) -> None:
        """Build a tiny Llama-style model and a BPE tokenizer trained on env text, offline."""
        from seed_gym.agents.backends.hf import import_torch_transformers

        import_torch_transformers()  # a clear "install the [hf] extra" error instead of a traceback
        from seed_gym.agents.tiny import build_tiny_model, describe_model

        path = build_tiny_model(out, seed=seed, size=size)
        info = describe_model(path)
        console.print(f"wrote {path}: {json.dumps(info, sort_keys=True)}")

    @serve_app.command("policy")
    def serve_policy(
        model: Path = typer.Option(..., help="Local model folder (from_pretrained)."),
        name: Optional[str] = typer.Option(None, help="Model name clients send (default: the folder name)."),
        host: str = typer.Option("127.0.0.1", help="Bind address (loopback by default)."),
        port: int = typer.Option(8000, help="Port."),
        dtype: str = typer.Option("auto", help="float32, bfloat16 or auto (bf16 on GPU, fp32 on CPU)."),
        device: str = typer.Option("auto", help="cpu, cuda or auto."),
        batch_size: int = typer.Option(32, help="Most prompts per generate call."),
        batch_window_ms: float = typer.Option(5.0, help="How long to gather concurrent requests into one batch."),
        max_tokens_limit: int = typer.Option(4096, help="Largest max_tokens a request may ask for."),
        read_timeout: ReadTimeoutOption = DEFAULT_READ_TIMEOUT_S,
        keep_alive: KeepAliveOption = DEFAULT_KEEP_ALIVE_S,
        max_connections: MaxConnectionsOption = DEFAULT_MAX_CONNECTIONS,
    ) -> None:
        """Serve a checkpoint as an OpenAI-compatible /v1/chat/completions and /v1/completions API."""
        from seed_gym.agents.backends.hf import HFBackend
        from seed_gym.agents.server import create_app, serve

        backend = HFBackend(model, dtype=dtype, device=device, batch_size=batch_size)
        model_name = name or model.resolve().name
        console.print(f"serving {model} as {model_name!r} on http://{host}:{port}/v1")
        app = create_app(backend, model_name=model_name, max_tokens_limit=max_tokens_limit,
                         batch_window_s=batch_window_ms / 1000, max_batch=batch_size)
        serve(app, host=host, port=port, read_timeout_s=read_timeout, keep_alive_s=keep_alive,
              max_connections=max_connections)

    @bench_app.command("agent")
    def bench_agent(
        model: Path = typer.Option(..., help="Local model folder (seed-gym model init --out DIR)."),
        backend: list[str] = typer.Option(["hf"], help="Backends to measure: hf, vllm (repeat)."),
        env: str = typer.Option(..., help="Env whose real prompts are used (see `seed-gym list`)."),
        split: str = typer.Option("test", help="Split of those tasks."),
        batch: list[int] = typer.Option([1, 8, 32], help="Batch sizes for tokens/s."),
        max_new_tokens: int = typer.Option(32, help="New tokens per prompt in the throughput test."),
        dtype: str = typer.Option("float32", help="Model dtype for every backend."),
        episodes: int = typer.Option(8, help="Episodes for lock-step vs one-at-a-time."),
        max_steps: int = typer.Option(4, help="Steps per episode in that comparison."),
        out: Optional[Path] = typer.Option(None, help="Also write the result as JSON here."),
    ) -> None:
        """Generation tokens/s per backend and batch size, and the lock-step batching speed-up."""
        from seed_gym.agents.backends import make_backend
        from seed_gym.agents.bench import first_step_prompts, generation_throughput, lockstep_speedup

        prompts = first_step_prompts(env, split, max(batch))
        rows = []
        for kind in backend:
            engine = make_backend(kind, str(model), {"dtype": dtype})
            try:
                rows += generation_throughput(engine, prompts, batch, max_new_tokens=max_new_tokens)
            finally:
                engine.close()
        baseline = {r.batch: r.tokens_per_s for r in rows if r.backend == backend[0]}
        table = Table(title=f"generation, {max_new_tokens} new tokens, greedy, {env} prompts, {dtype}")
        for column in ("backend", "batch", "new tokens", "seconds", "tokens/s", f"vs {backend[0]}"):
            table.add_column(column, justify="left" if column == "backend" else "right")
        for r in rows:
            table.add_row(r.backend, str(r.batch), str(r.new_tokens), f"{r.seconds:.2f}", f"{r.tokens_per_s:.0f}",
                          f"{r.tokens_per_s / baseline[r.batch]:.2f}x" if baseline.get(r.batch) else "-")
        console.print(table)

        spec = f"hf:{model}@dtype={dtype},max_new_tokens={max_new_tokens}"
        lock = lockstep_speedup(spec, env, split, episodes, max_steps=max_steps)
        console.print(
            f"lock-step vs one episode at a time ({lock.episodes} episodes x {max_steps} steps, hf): "
            f"{lock.sequential_seconds:.2f} s / {lock.lockstep_seconds:.2f} s = [bold]{lock.speedup:.2f}x[/] "
            f"({lock.sequential_ticks} vs {lock.lockstep_ticks} model calls; identical actions: {lock.same_actions})")
        if out:
            out.write_text(json.dumps({
                "throughput": [{**vars(r), "tokens_per_s": r.tokens_per_s} for r in rows],
                "lockstep": {**vars(lock), "speedup": lock.speedup}}, indent=2))

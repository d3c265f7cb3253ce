"""Teacher-forced log-probabilities of continuations: the one computation that generation
(behaviour log-probs), training (student, teacher and reference log-probs) and benchmarks share.

Layout rule: every row is ``prompt + continuation``, *left*-padded, so all continuations end at the
last position. Continuation tokens of row i then sit in the last ``len_i`` columns of an
``[B, L_max]`` block, and one forward with ``logits_to_keep = L_max + 1`` yields exactly the logits
that predict them. Position ids are computed from the attention mask, so padding never shifts a
row's positions and a row scores the same alone or in any batch (up to float rounding).

Shared prompts (a GRPO group's completions of one prompt): :func:`shared_prompt_logprobs` runs each
distinct prompt once, with its KV cache indexed out to the rows that share it (differentiably: the
gradient of every row flows back into the one prompt pass), and returns exactly what
``forward_logprobs(model, pack_left(...))`` does, in the same layout, for a fraction of the work.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass
class PackedBatch:
    """Tensors for one forward: ``continuation_mask`` is ``[B, L_max]``, right-aligned."""

    input_ids: Any
    attention_mask: Any
    position_ids: Any
    continuation_ids: Any
    continuation_mask: Any


def pack_left(prompt_ids: Sequence[Sequence[int]], continuation_ids: Sequence[Sequence[int]],
              pad_id: int, device: Any = "cpu") -> PackedBatch:
    import torch

    if len(prompt_ids) != len(continuation_ids):
        raise ValueError(f"{len(prompt_ids)} prompts but {len(continuation_ids)} continuations")
    rows = [list(p) + list(c) for p, c in zip(prompt_ids, continuation_ids)]
    width = max(len(r) for r in rows)
    cont_width = max(1, max(len(c) for c in continuation_ids))
    input_ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    attention = torch.zeros((len(rows), width), dtype=torch.long)
    cont_ids = torch.full((len(rows), cont_width), pad_id, dtype=torch.long)
    cont_mask = torch.zeros((len(rows), cont_width), dtype=torch.float32)
    for i, (row, cont) in enumerate(zip(rows, continuation_ids)):
        if row:
            input_ids[i, width - len(row):] = torch.tensor(row)
            attention[i, width - len(row):] = 1
        if cont:
            cont_ids[i, cont_width - len(cont):] = torch.tensor(list(cont))
            cont_mask[i, cont_width - len(cont):] = 1.0
    positions = (attention.cumsum(-1) - 1).clamp(min=0)
    return PackedBatch(input_ids.to(device), attention.to(device), positions.to(device),
                       cont_ids.to(device), cont_mask.to(device))


def forward_logprobs(model: Any, batch: PackedBatch) -> Any:
    """``[B, L_max]`` log-probs of the continuation tokens (zero where masked); differentiable."""
    cont_width = batch.continuation_ids.shape[1]
    logits = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask,
                   position_ids=batch.position_ids, logits_to_keep=cont_width + 1, use_cache=False).logits
    return _picked_logprobs(logits, batch)


def _picked_logprobs(logits: Any, batch: PackedBatch) -> Any:
    import torch

    logits = logits[:, :-1, :].float()  # the logit at position p predicts token p + 1
    picked = torch.gather(logits, -1, batch.continuation_ids.unsqueeze(-1)).squeeze(-1)
    logprobs = picked - torch.logsumexp(logits, dim=-1)
    return logprobs * batch.continuation_mask


def prompt_owners(prompt_ids: Sequence[Sequence[int]]) -> list[int]:
    """Per row, the index of its prompt among the distinct prompts, in order of first appearance."""
    seen: dict[tuple[int, ...], int] = {}
    return [seen.setdefault(tuple(p), len(seen)) for p in prompt_ids]


def shares_prompts(prompt_ids: Sequence[Sequence[int]]) -> bool:
    """Whether :func:`shared_prompt_logprobs` saves work here: some prompt repeats, and every prompt
    has a token before its last (the last leads its rows' continuations)."""
    return len(set(prompt_owners(prompt_ids))) < len(prompt_ids) and all(len(p) >= 2 for p in prompt_ids)


def shared_prompt_logprobs(model: Any, prompt_ids: Sequence[Sequence[int]],
                           continuation_ids: Sequence[Sequence[int]], pad_id: int,
                           device: Any = "cpu") -> tuple[Any, Any]:
    """What ``forward_logprobs(model, pack_left(prompt_ids, continuation_ids, ...))`` returns, with
    that batch's ``continuation_mask``, computing each distinct prompt once (module rules).

    Each distinct prompt but its last token runs in one left-padded batch that keeps its KV cache;
    the cache is indexed out to every row of that prompt; then each row's last prompt token and
    continuation run against it, left-padded as :func:`pack_left` lays them out, so the
    continuation columns come out right-aligned as there. Needs every prompt >= 2 tokens."""
    import torch

    if any(len(p) < 2 for p in prompt_ids):
        raise ValueError("shared_prompt_logprobs needs prompts of at least 2 tokens")
    owners = prompt_owners(prompt_ids)
    distinct = {owner: list(prompt_ids[row][:-1]) for row, owner in enumerate(owners)}
    prefix = pack_left([distinct[i] for i in range(len(distinct))], [[] for _ in distinct], pad_id, device)
    cache = model(input_ids=prefix.input_ids, attention_mask=prefix.attention_mask,
                  position_ids=prefix.position_ids, logits_to_keep=1, use_cache=True).past_key_values
    index = torch.tensor(owners, device=device)
    cache.batch_select_indices(index)  # differentiable indexing: every row's gradient reaches its prompt pass
    rows = pack_left([[p[-1]] for p in prompt_ids], continuation_ids, pad_id, device)
    mask = torch.cat([prefix.attention_mask[index], rows.attention_mask], dim=1)
    positions = (mask.cumsum(-1) - 1).clamp(min=0)[:, prefix.input_ids.shape[1]:]
    logits = model(input_ids=rows.input_ids, attention_mask=mask, position_ids=positions, past_key_values=cache,
                   logits_to_keep=rows.continuation_ids.shape[1] + 1, use_cache=True).logits
    return _picked_logprobs(logits, rows), rows.continuation_mask


def chunk_rows(lengths: Sequence[int], chunk_tokens: int, owners: Sequence[int] | None = None) -> list[list[int]]:
    """Row indices grouped so that rows x longest row stays within ``chunk_tokens`` per group
    (a single row longer than the budget gets a group of its own); similar lengths go together,
    and with ``owners`` (:func:`prompt_owners`) rows of one prompt go together first."""
    order = sorted(range(len(lengths)), key=lambda i: (owners[i] if owners else 0, lengths[i]))
    groups: list[list[int]] = []
    current: list[int] = []
    for index in order:
        widest = max([lengths[i] for i in current] + [lengths[index]])
        if current and widest * (len(current) + 1) > chunk_tokens:
            groups.append(current)
            current = []
        current.append(index)
    if current:
        groups.append(current)
    return groups


def continuation_logprobs(model: Any, prompt_ids: Sequence[Sequence[int]],
                          continuation_ids: Sequence[Sequence[int]], *, pad_id: int,
                          chunk_tokens: int = 16384) -> list[list[float]]:
    """Per-token log-probs of each continuation, without gradients, in memory-bounded chunks."""
    import torch

    device = next(model.parameters()).device
    lengths = [len(p) + len(c) for p, c in zip(prompt_ids, continuation_ids)]
    result: list[list[float]] = [[] for _ in lengths]
    with torch.no_grad():
        for group in chunk_rows(lengths, chunk_tokens):
            batch = pack_left([prompt_ids[i] for i in group], [continuation_ids[i] for i in group],
                              pad_id, device)
            logprobs = forward_logprobs(model, batch).cpu()
            for row, index in enumerate(group):
                n = len(continuation_ids[index])
                result[index] = logprobs[row, logprobs.shape[1] - n:].tolist() if n else []
    return result


def choice_logprobs(model: Any, prompt_ids: Sequence[int], choice_ids: Sequence[Sequence[int]], *,
                    pad_id: int, chunk_tokens: int = 16384) -> list[list[float]]:
    """Per-token log-probabilities of each choice after one shared prompt, without gradients.

    The prompt runs once and its KV cache is repeated for the choices, so ranking N actions costs
    one prompt forward plus N short ones instead of N prompt-length forwards. Choices are
    right-padded after the prompt; causal attention keeps padding out of every real token's view.
    """
    import torch

    if not prompt_ids:
        raise ValueError("choice_logprobs needs at least one prompt token")
    if not choice_ids:
        return []
    device = next(model.parameters()).device
    prefix_len = len(prompt_ids) - 1  # the last prompt token leads each choice row: its logit scores choice[0]
    rows = [[prompt_ids[-1], *choice] for choice in choice_ids]
    per_chunk = max(1, chunk_tokens // max(1, len(prompt_ids)))
    totals: list[list[float]] = []
    with torch.no_grad():
        cache = None
        if prefix_len:
            prefix = torch.tensor([list(prompt_ids[:-1])], device=device)
            cache = model(input_ids=prefix, use_cache=True).past_key_values
        for start in range(0, len(rows), per_chunk):
            totals += _score_rows(model, rows[start:start + per_chunk], cache, prefix_len, pad_id, device)
    return totals


def _score_rows(model: Any, rows: list[list[int]], cache: Any, prefix_len: int, pad_id: int,
                device: Any) -> list[list[float]]:
    import copy

    import torch

    width = max(len(r) for r in rows)
    input_ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), prefix_len + width), dtype=torch.long)
    mask[:, :prefix_len] = 1
    for i, row in enumerate(rows):
        input_ids[i, :len(row)] = torch.tensor(row)
        mask[i, prefix_len:prefix_len + len(row)] = 1
    positions = torch.arange(prefix_len, prefix_len + width).expand(len(rows), width)
    kwargs: dict[str, Any] = {}
    if cache is not None:
        repeated = copy.deepcopy(cache)
        repeated.batch_repeat_interleave(len(rows))
        kwargs["past_key_values"] = repeated
    logits = model(input_ids=input_ids.to(device), attention_mask=mask.to(device),
                   position_ids=positions.to(device), use_cache=cache is not None, **kwargs).logits.float()
    logprobs = torch.log_softmax(logits[:, :-1, :], dim=-1)
    picked = torch.gather(logprobs, -1, input_ids[:, 1:].to(device).unsqueeze(-1)).squeeze(-1)
    return [picked[i, :len(row) - 1].tolist() for i, row in enumerate(rows)]

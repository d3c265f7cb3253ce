"""The trajectory serialiser x_τ: one finished episode as the text an analyzer reads.

Layout (seed-method.md §7, "What an implementation must contain" 3)::

    Task: <instruction, else the task id>
    Task type: <family>                      (only when the record has one)

    Step 0
    Observation: <what the agent saw before acting>
    Response: <the raw model response, else the action>
    Return: <the step's reward>[ (invalid action)]
    ...
    Final observation: <what the last action produced>

    Outcome: success|failure (score S, N steps, total reward R[, ran out of steps | env error])

Rules:

* Steps are numbered by ``StepRecord.t`` (0-based), so an analyzer's ``step_skills`` keys are step
  indices of the record.
* ``max_chars`` is a budget for the whole text. Only the *bodies* — observations, responses and the
  final observation — are trimmed, each in its middle (head and tail kept, a marker says how much
  went); the task and the outcome are never trimmed. The trim is fair: one common cap is chosen so
  that short bodies stay whole and the longest ones give up the most. No body is cut below
  :data:`MIN_BODY_CHARS`, so a record with very many steps can exceed a tiny budget.
* Deterministic: the same record and budget always give the same text.
"""

from __future__ import annotations

from seed_gym.records import EpisodeRecord, StepRecord

#: No trimmed body is shorter than this (a head and a tail worth reading).
MIN_BODY_CHARS = 80


def step_response(step: StepRecord) -> str:
    """What the agent said at ``step``: the raw model response when recorded, else the action."""
    return step.response if step.response else step.action


def outcome_line(record: EpisodeRecord) -> str:
    """``Outcome: success|failure (...)``; success means the env reported the episode won."""
    notes = [f"score {record.score:.2f}", f"{record.num_steps} steps", f"total reward {record.total_reward:g}"]
    if record.status == "truncated":
        notes.append("ran out of steps")
    elif record.status == "error":
        notes.append(f"env error: {record.error}" if record.error else "env error")
    return f"Outcome: {'success' if record.won else 'failure'} ({', '.join(notes)})"


def task_header(record: EpisodeRecord) -> str:
    task = record.task or {}
    lines = [f"Task: {task.get('instruction') or task.get('id', '')}".rstrip()]
    if task.get("family"):
        lines.append(f"Task type: {task['family']}")
    return "\n".join(lines)


def trim_middle(text: str, cap: int) -> str:
    """``text`` if it fits in ``cap`` chars, else its head and tail around a marker (≤ ``cap`` chars,
    but never below :data:`MIN_BODY_CHARS`)."""
    cap = max(cap, MIN_BODY_CHARS)
    if len(text) <= cap:
        return text
    # Size the marker for the longest count it could show, so the result never exceeds ``cap``.
    keep = max(cap - len(_marker(len(text))), 2)
    head = keep - keep // 2
    return text[:head] + _marker(len(text) - keep) + text[len(text) - keep // 2:]


def _marker(trimmed: int) -> str:
    return f" …[{trimmed} chars trimmed]… "


def serialize_trajectory(record: EpisodeRecord, *, max_chars: int | None = None) -> str:
    """The serialised trajectory of ``record`` (module docstring), within ``max_chars`` if given."""
    bodies = [part for step in record.steps for part in (step.observation, step_response(step))]
    bodies.append(record.final_observation)
    if max_chars is not None:
        fixed = len(_render(record, [""] * len(bodies)))
        cap = _common_cap([len(b) for b in bodies], max_chars - fixed)
        if cap is not None:
            bodies = [trim_middle(b, cap) for b in bodies]
    return _render(record, bodies)


def _render(record: EpisodeRecord, bodies: list[str]) -> str:
    parts = [task_header(record)]
    for index, step in enumerate(record.steps):
        observation, response = bodies[2 * index], bodies[2 * index + 1]
        flag = " (invalid action)" if step.invalid_action else ""
        parts.append(f"Step {step.t}\nObservation: {observation}\nResponse: {response}\n"
                     f"Return: {step.reward:g}{flag}")
    parts.append(f"Final observation: {bodies[-1]}")
    parts.append(outcome_line(record))
    return "\n\n".join(parts)


def _common_cap(lengths: list[int], budget: int) -> int | None:
    """The largest per-body cap whose trimmed total fits ``budget``; None when nothing needs trimming.

    Water-filling: bodies shorter than the cap stay whole, longer ones are cut to it."""
    if sum(lengths) <= budget:
        return None
    low, high = MIN_BODY_CHARS, max(lengths)
    if sum(min(n, low) for n in lengths) > budget:
        return low  # even the floor does not fit: cut everything to the floor
    while low < high:  # invariant: cap ``low`` fits
        middle = (low + high + 1) // 2
        if sum(min(n, middle) for n in lengths) <= budget:
            low = middle
        else:
            high = middle - 1
    return low

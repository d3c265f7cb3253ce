"""The Search-QA rule: :func:`searchqa_rule` and what it reads the episode with.

Rules: each turn is parsed with the env's own protocol (search, answer or invalid); evidence is a
retrieved passage that states an answer in whole normalised words, the latest search first. With
ground truth (the env's question) the skill names the gold answer and its hop chain; without it a
won episode's answer is the gold one and a failed episode's skill says the gold answer is unknown.
The env's modules are imported inside the functions, so importing this rule loads no env.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from seed_gym.records import EpisodeRecord
from seed_gym.training.rules.common import common_warnings, english_list, episode_ending, step_result
from seed_gym.training.trajectory import step_response


def _turns(record: EpisodeRecord) -> list[tuple[int, str, str, str]]:
    """``(step, kind, content, result)`` per turn; kind is search, answer or invalid."""
    from seed_gym.envs.searchqa.protocol import parse_turn

    turns = []
    for index, step in enumerate(record.steps):
        turn = parse_turn(step_response(step))
        turns.append((step.t, turn.kind, turn.content, step_result(record, index)))
    return turns


def _doc_titles(information: str) -> list[str]:
    return re.findall(r"Doc \d+\(Title: \"?(.+?)\"?\)", information)


def _evidence_title(information: Sequence[tuple[str, str]], answer: str) -> str | None:
    """Title of a retrieved passage that states ``answer`` (whole normalised words). The latest
    search comes first (the last hop is where an answer should come from) and, within it, a
    passage about the entity that search asked for before the others."""
    from seed_gym.envs.searchqa.metrics import normalize_answer

    wanted = normalize_answer(answer)
    if not wanted:
        return None
    for query, block in reversed(information):
        hits = []
        for doc in re.split(r"(?=Doc \d+\(Title:)", block):
            if f" {wanted} " in f" {normalize_answer(doc)} ":  # whole words: "Rome" is not in "Romeo"
                titles = _doc_titles(doc)
                hits.append(titles[0] if titles else "a retrieved passage")
        asked = f" {normalize_answer(query)} "
        about = [t for t in hits if f" {normalize_answer(t)} " in asked]
        if hits:
            return (about or hits)[0]
    return None


def searchqa_rule(record: EpisodeRecord, truth: Mapping[str, Any] | None = None) -> tuple[str, str]:
    """Search-QA: the hop decomposition and the evidence that states the answer; with ground truth
    (the env's question) the gold answer and its gold hop chain, without it a skill that says the
    gold answer was not available."""
    from seed_gym.envs.searchqa.protocol import last_answer, transcript

    question = str(record.task.get("instruction", "")).strip()
    label = record.task.get("family") or "searchqa"
    turns = _turns(record)
    searches = [(content, result) for _, kind, content, result in turns if kind == "search"]
    answers = [content for _, kind, content, _ in turns if kind == "answer"]
    # Scored as the env scores it: the responses with the observations between them (Search-R1).
    scored = transcript([step_response(s) for s in record.steps], [s.observation for s in record.steps[1:]])
    prediction = last_answer(scored) if answers else None
    golds = [str(g) for g in (truth or {}).get("golden_answers") or []]
    hops = list(((truth or {}).get("metadata") or {}).get("hops") or [])
    if record.won and not golds and prediction:
        golds = [prediction]  # won = exact match, so the prediction is a gold answer
    chain = english_list([f"'{h.get('query', '')}' -> {h.get('answer', '')}" for h in hops]) if hops else ""
    queries = english_list([f"'{q}'" for q, _ in searches]) or "nothing"
    if record.won:
        source = _evidence_title(searches, prediction or "")
        evidence = f"the passage '{source}' states it" if source else "it was not stated in any retrieved passage"
        summary = (f"Search-QA ({label}) question '{question}' {episode_ending(record)}: the agent searched {queries} and "
                   f"answered '{prediction}' (exact match); {evidence}.")
        plan = f"hop by hop ({chain})" if chain else f"one fact per query ({queries})"
        stated = f"the passage '{source}' states it" if source else "the evidence states it"
        skill = (f"Workflow: decompose the question into single-fact hops and search them {plan}; take each bridge "
                 f"entity from the retrieved passages before the next search; answer '{prediction}' only once "
                 f"{stated}. Core rule: verify the answer from retrieved evidence, then give just the short answer "
                 f"inside <answer> </answer>.")
        return summary, skill
    mistake = _qa_mistake(turns, searches, prediction, golds)
    signs = common_warnings(record)
    gold_text = (f"The gold answer is '{golds[0]}'" + (f", reached by the hops {chain}" if chain else "") + "."
                 if golds else "The gold answer is not in the record, so this skill cannot name the right answer.")
    summary = (f"Search-QA ({label}) question '{question}' {episode_ending(record)}. "
               f"{mistake[0].upper()}{mistake[1:]}. {gold_text}")
    workflow = (f"search each hop in turn ({chain})" if chain else
                "decompose the question into single-fact hops and search one hop per query, e.g. the named "
                "entity plus the relation asked about")
    skill = (f"Avoid: {mistake}. " + (f"Warning signs: {english_list(signs)}. " if signs else "") + f"{gold_text} "
             f"Correct workflow: {workflow}; read the bridge entity from the <information> passages; answer only "
             f"with an entity the passages state, inside <answer> </answer>, before the turn limit.")
    return summary, skill


def _qa_mistake(turns: Sequence[tuple[int, str, str, str]], searches: Sequence[tuple[str, str]],
                prediction: str | None, golds: Sequence[str]) -> str:
    invalid = sum(kind == "invalid" for _, kind, _, _ in turns)
    if prediction is None:
        if not searches:
            return (f"no turn held a valid <search>…</search> or <answer>…</answer> tag ({invalid} invalid turns), "
                    "so the agent never searched or answered")
        return f"the agent searched {len(searches)} time(s) but never gave an <answer> before the turn limit"
    if not searches:
        return f"the agent answered '{prediction}' from memory without searching, and it was wrong"
    mistake = f"the agent answered '{prediction}', which is wrong"
    supported = _evidence_title(searches, prediction)
    mistake += (f" (the passage '{supported}' mentions it, but not as the answer to this question)" if supported
                else " and is not stated in any retrieved passage")
    if golds:
        found = _evidence_title(searches, golds[0])
        mistake += (f"; the gold answer '{golds[0]}' was in the retrieved passage '{found}' and was overlooked"
                    if found else f"; its searches never retrieved the gold answer '{golds[0]}'")
    return mistake

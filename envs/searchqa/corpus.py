"""Search-QA's sample texts for the tiny model's tokenizer (the profile's ``corpus`` target).

A generated SynWiki world and its questions, as Search-R1 prompts, searches, ``<information>``
blocks and answers, plus passages and a skill record. Drawn from one ``random.Random`` stream
seeded from the seed (the world from the seed itself).
"""

from __future__ import annotations

from seed_gym.agents.corpus import as_message, corpus_rng, skill_record

#: World size and questions asked by default.
ENTITIES = 400
QUESTIONS = 260


def sample_texts(seed: int = 0, *, entities: int = ENTITIES, questions: int = QUESTIONS) -> list[str]:
    """Search-R1 episodes on a generated world of ``entities`` entities, ``questions`` of its
    questions: prompt, search turns, information blocks, answers (the profile's ``corpus`` target)."""
    from seed_gym.envs.searchqa import protocol
    from seed_gym.envs.searchqa.questions import generate_questions
    from seed_gym.envs.searchqa.world import generate_world

    rng = corpus_rng(seed, "searchqa")
    world = generate_world(seed, entities)
    passages = {p.pid: p.contents for p in world.passages}
    pool = generate_questions(world)
    texts = [p.contents for p in world.passages[: len(world.passages) // 2]]
    for question in rng.sample(pool, min(questions, len(pool))):
        turns = [as_message("user", protocol.make_prompt(question["question"])), "assistant\n"]
        hops = question.get("metadata", {}).get("hops") or []
        for hop in hops:
            found = [passages[pid] for pid in hop.get("support", []) if pid in passages][:1]
            found += [passages[pid] for pid in rng.sample(sorted(passages), 2)]
            turns.append(f"<think> I need to find out {hop['query']}. </think>\n<search> {hop['query']} </search>")
            turns.append(protocol.information_block(found[:3]))
        if rng.random() < 0.1:
            turns.append("I think the answer is here." + protocol.INVALID_TURN_MESSAGE)
        answer = question["golden_answers"][0]
        turns.append(f"<think> The information says the answer is {answer}. </think>\n<answer> {answer} </answer>")
        texts.append("".join(turns))
    texts.append(skill_record(rng, "Search-QA", pool[0]["question"], True, 3,
                              "Search one hop at a time with the entity name and the relation, then answer "
                              "with the exact name from the last passage."))
    return texts

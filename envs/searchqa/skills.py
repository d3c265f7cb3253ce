"""Search-QA's static skill bank (SDAR's teacher): general skills plus skills per task family.

Declared as ``skill_bank`` in the env's profile; :class:`seed_gym.training.skills.SkillBank` reads it.
"""

SKILL_BANK = {
    "general": [
        "Decompose the question into single-fact hops and search one hop per query, naming the entity "
        "and the relation (e.g. '<person> member of band').",
        "Take each bridge entity from the <information> passages before the next search; never guess "
        "an intermediate entity.",
        "Answer only with an entity that the retrieved passages state, inside <answer> </answer>, "
        "with no explanation.",
        "Stop searching once a passage states the final fact; the number of searches is limited.",
    ],
    "families": {
        "nq": ["Single-fact questions: one search for the entity and relation, then answer with the "
               "name exactly as the passage writes it."],
        "triviaqa": ["Single-fact questions in unusual wording: rephrase into '<entity> <relation>' "
                     "before searching."],
        "popqa": ["Questions about little-known entities: search the full name; do not answer from memory."],
        "hotpotqa": ["Two-hop questions: find the bridge entity first; for a comparison, look up the "
                     "attribute of both entities and answer with one of them."],
        "2wiki": ["Kinship and comparison questions: follow relations one hop at a time (a paternal "
                  "grandfather is the father's father; a father-in-law is the spouse's father)."],
        "musique": ["Long chains of three or four hops: note each bridge entity and spend one search "
                    "per hop."],
        "bamboogle": ["Two-hop compositions: resolve the inner entity (e.g. the band of a person) "
                      "before asking about its attribute."],
    },
    "aliases": {"2wikimultihopqa": "2wiki"},
}

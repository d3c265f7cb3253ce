"""WebShop's static skill bank (SDAR's teacher): general skills plus skills per task family.

Declared as ``skill_bank`` in the env's profile; :class:`seed_gym.training.skills.SkillBank` reads it.
"""

SKILL_BANK = {
    "general": [
        "Search with a short query that names the product type and its key attribute (e.g. 'sulfate "
        "free shampoo') instead of pasting the whole instruction.",
        "Open a result whose title names the requested product type (a conditioner is not a shampoo) "
        "and whose listed price is under the price cap.",
        "On the item page click every option value the instruction names (color, size, pack size, "
        "flavor name, scent, style) before clicking Buy Now; a missing or wrong option lowers the reward.",
        "When unsure whether the item has a required attribute, read Description or Features and come "
        "back with '< Prev'.",
        "Buy within the step budget: do not loop between search and result pages.",
    ],
    "families": {
        "beauty": ["Beauty items usually ask for a scent, color, style or pack size: select exactly that value; "
                   "check attributes such as 'sulfate free' or 'paraben free' in Features."],
        "electronics": ["Electronics usually ask for a color, style or pack size; check features such as "
                        "'noise cancelling' or 'easy install' in the description."],
        "fashion": ["Clothing and shoes ask for both a color and a size: select both before buying."],
        "grocery": ["Food items ask for a flavor name and a pack size: select both; check claims such as "
                    "'gluten free' or 'non gmo' in Features."],
        "garden": ["Home and furniture items ask for a color, size, style or pack size; match each one "
                   "the instruction names."],
    },
    "aliases": {"food": "grocery", "furniture": "garden", "home": "garden"},
}

"""ALFWorld's static skill bank (SDAR's teacher): general skills plus skills per task family.

Declared as ``skill_bank`` in the env's profile; :class:`seed_gym.training.skills.SkillBank` reads it.
"""

SKILL_BANK = {
    "general": [
        "Only admissible actions work (anything else gets 'Nothing happens.'): copy object and "
        "receptacle names with their numbers exactly as listed.",
        "Search systematically: visit each likely receptacle once, open closed ones (drawers, cabinets, "
        "fridge, microwave, safe) and do not go back to places already checked.",
        "You can hold one object at a time: take the target object first, then carry it to the appliance "
        "or the destination.",
        "Place an object with 'put <object> in/on <receptacle>' or 'move <object> to <receptacle>', "
        "whichever the admissible list offers, and only after every required change (clean, hot, "
        "cool) is done.",
    ],
    "families": {
        "pick_and_place_simple": [
            "Find the object, take it, go to the destination receptacle, open it if it is closed, and put "
            "the object there.",
        ],
        "look_at_obj_in_light": [
            "Find and take the object, then go to the desklamp or floorlamp and 'use' the lamp while "
            "holding the object; the lamp itself is never taken.",
        ],
        "pick_clean_then_place_in_recep": [
            "Take the object, go to the sinkbasin and 'clean <object> with sinkbasin N' while holding it, "
            "then put it in/on the destination.",
        ],
        "pick_heat_then_place_in_recep": [
            "Take the object, go to the microwave and 'heat <object> with microwave N' while holding it "
            "(it need not be opened or loaded), then put it in/on the destination.",
        ],
        "pick_cool_then_place_in_recep": [
            "Take the object, go to the fridge and 'cool <object> with fridge N' while holding it, then "
            "put it in/on the destination.",
        ],
        "pick_two_obj_and_place": [
            "Move the two objects one at a time: take the first, put it in/on the destination, then find "
            "a second one with a different number and put it there too.",
        ],
    },
}

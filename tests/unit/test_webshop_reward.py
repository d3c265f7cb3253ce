"""The upstream WebShop reward: full, partial and zero rewards, and its known quirks."""

from __future__ import annotations

import pytest

from seed_gym.envs.webshop.nouns import LexiconTagger
from seed_gym.envs.webshop.reward import get_reward, normalize_color, option_matches, ratio, type_reward

TAGGER = LexiconTagger()


def product(**over):
    base = {"asin": "B000000001", "name": "Velora Soft Cotton Shirt", "Title": "Velora Soft Cotton Shirt",
            "query": "men's shirts", "product_category": "Clothing › Men › Shirts",
            "Attributes": ["machine wash", "long sleeve"], "BulletPoints": ["Regular fit for all day"],
            "Description": "A shirt.", "options": {"color": ["black", "white"], "size": ["small", "x-large"]}}
    base.update(over)
    return base


def goal(**over):
    base = {"asin": "B000000001", "name": "Velora Soft Cotton Shirt", "query": "men's shirts",
            "product_category": "Clothing › Men › Shirts", "attributes": ["machine wash", "long sleeve"],
            "goal_options": {"color": "black", "size": "x-large"}, "price_upper": 30.0}
    base.update(over)
    return base


def reward(p, g, price=20.0, options=None):
    return get_reward(p, g, price, options if options is not None else {"color": "black", "size": "x-large"},
                      tagger=TAGGER)


def test_exact_purchase_is_one():
    assert reward(product(), goal()) == 1.0


def test_two_of_three_options_is_four_sevenths():
    g = goal(goal_options=["black", "x-large", "cotton"], attributes=["machine wash", "long sleeve", "regular fit"],
             price_upper=10.0)
    # 3 attrs (regular fit from bullets), 2 of 3 options, price over the cap -> (3 + 2 + 0) / 7
    assert reward(product(), g) == pytest.approx(5 / 7)
    g2 = goal(goal_options=["black", "x-large", "cotton"], attributes=["machine wash", "long sleeve", "zzz qqq"])
    assert reward(product(), g2) == pytest.approx((2 + 2 + 1) / 7)


def test_half_type_reward_halves_the_total():
    # no query/category match and title score 0.2 exactly (1 of 5 goal nouns) -> r_type 0.5
    p = product(query="other", product_category="A › B", name="Velora Blanket")
    g = goal(name="Velora Shirt Hat Cap Bag", goal_options={}, attributes=["machine wash"], price_upper=30.0)
    info = type_reward(p, g, TAGGER)
    assert info["title_score"] == pytest.approx(0.2) and info["r_type"] == 0.5
    assert reward(p, g, options={}) == pytest.approx(0.5 * 2 / 2)


def test_zero_when_no_title_noun_shared():
    p = product(name="Brandx Lamp", query="lamp", product_category="X › Y")
    assert reward(p, goal()) == 0.0


def test_low_title_score_gives_a_tenth():
    g = goal(name="Velora Hat Cap Bag Kit Box Case Sofa Rug Towel Lamp Sheet")  # 1 of 12 nouns shared
    info = type_reward(product(), g, TAGGER)
    assert 0 < info["title_score"] < 0.1 and info["r_type"] == 0.1


def test_goal_without_nouns_scores_point_two():
    info = type_reward(product(), goal(name="soft and premium"), TAGGER)
    assert info["title_score"] == 0.2 and info["r_type"] == 1.0  # query match keeps 1.0


def test_title_score_divides_by_the_goal_noun_list_not_its_set():
    info = type_reward(product(name="Velora Shirt"), goal(name="Shirt Shirt Velora Bag"), TAGGER)
    assert info["title_score"] == pytest.approx(2 / 4)


def test_price_over_cap_loses_one_share():
    assert reward(product(), goal(), price=31.0) == pytest.approx(4 / 5)


def test_attribute_substring_fallback():
    assert reward(product(Attributes=["DUMMY_ATTR"]), goal(attributes=["regular fit"])) == 1.0


def test_tuple_quirk_of_synthetic_options():
    assert ratio("xl", ("size", "XL")) == 100
    assert ratio("x-large", ("size", "large")) < 85
    assert option_matches(["x-large"], [("size", "large")]) == 0
    assert option_matches(["xl"], [("size", "xl")]) == 1


def test_normalize_color_substring_pitfalls():
    assert normalize_color("redwood") == "red"
    assert normalize_color("standard") == "tan"
    assert normalize_color("white | grey") == "grey"  # alphabetical first
    assert normalize_color(("color", "black")) == "black"  # tuple: membership
    assert normalize_color(("color", "dark blue")) == ("color", "dark blue")
    assert normalize_color("xyz") == "xyz"


def test_verbose_reports_parts():
    total, info = get_reward(product(), goal(), 20.0, {"color": "black"}, tagger=TAGGER, verbose=True)
    assert total == pytest.approx(4 / 5)
    assert info["r_option"] == 0.5 and info["r_att"] == 1.0 and info["r_price"] is True
    assert info["w_price"] == pytest.approx(1 / 5)

"""SynShop generator (upstream file formats, determinism) and the upstream loader rules."""

from __future__ import annotations

import json
import random
import re

from seed_gym.envs.webshop import catalog, goals as goal_lib


def test_generator_is_deterministic_and_in_upstream_formats():
    items, ins, human = catalog.generate_catalog(120, seed=3)
    again = catalog.generate_catalog(120, seed=3)
    assert json.dumps([items, ins, human]) == json.dumps(list(again))
    assert json.dumps(items) != json.dumps(catalog.generate_catalog(120, seed=4)[0])
    assert len(items) == 120 and len({i["asin"] for i in items}) == 120
    for item in items:
        assert re.fullmatch(r"B0[0-9A-Z]{8}", item["asin"])
        assert {"asin", "name", "full_description", "small_description", "pricing", "customization_options",
                "images", "category", "query", "product_category"} <= set(item)
        assert item["category"] in {"beauty", "electronics", "fashion", "garden", "grocery"}
        assert " › " in item["product_category"]
        assert set(ins[item["asin"]]) == {"attributes", "instruction", "instruction_attributes"}
    with_ins = [a for a, v in ins.items() if v["instruction"]]
    assert 0 < len(with_ins) < len(items)  # hard negatives carry no instruction
    for entries in human.values():
        for e in entries:
            assert e["instruction"] == e["instruction"].lower() and "'" not in e["instruction"]
            assert set(e) >= {"asin", "instruction", "attributes", "options", "instruction_attributes",
                              "instruction_options", "assignment_id", "worker_id"}


def test_loader_rules():
    items = [
        {"asin": "nan", "name": "x"},
        {"asin": "B0TOOLONG123", "name": "x"},
        {"asin": "B000000001", "name": "One", "pricing": "$12.99", "small_description": "only bullet",
         "customization_options": {"Color": [{"value": "Black/White", "image": None}]}, "query": " Shirts "},
        {"asin": "B000000001", "name": "Duplicate", "pricing": ""},
        {"asin": "B000000002", "name": "Two", "pricing": "$10.00$20.00", "small_description": ["a", "b"]},
        {"asin": "B000000003", "name": "Three", "pricing": ""},
    ]
    ins = {"B000000001": {"attributes": ["machine wash"], "instruction": "Find me x", "instruction_attributes": ["machine wash"]}}
    products, prices = catalog.load_products(items, ins, random.Random(0))
    assert list(products) == ["B000000001", "B000000002", "B000000003"]
    one, two, three = products.values()
    assert one["Title"] == "One" and one["BulletPoints"] == ["only bullet"] and one["Price"] == "$12.99"
    assert one["options"] == {"color": ["black | white"]} and one["query"] == "shirts"
    assert one["Attributes"] == ["machine wash"] and two["Attributes"] == ["DUMMY_ATTR"]
    assert two["Price"] == "$10.0 to $20.0" and 10.0 <= prices["B000000002"] <= 20.0
    assert three["Price"] == 100.0 and prices["B000000003"] == 100.0 and one["Rating"] == "N.A."


def test_price_cap_rule():
    rng = random.Random(0)
    for price in (0.5, 12.3, 55.0, 975.0):
        upper, text = goal_lib.price_cap(price, rng)
        candidates = [p for p in goal_lib.PRICE_RANGE if p > price][:4]
        assert upper in candidates[1:] and text == f", and price lower than {upper:.2f} dollars"
    assert goal_lib.price_cap(985.0, rng) == (goal_lib.NO_CAP, "")


def test_synthetic_goals_cover_every_combination_and_weights():
    items, ins, _ = catalog.generate_catalog(60, seed=1)
    products, prices = catalog.load_products(items, ins, random.Random(0))
    goals = goal_lib.synthetic_goals(products, prices, random.Random(0))
    expected = sum(len(catalog.option_combinations(p["options"])) for p in products.values() if p["instruction_text"])
    assert len(goals) == expected
    g = next(g for g in goals if g["goal_options"])
    assert " with " in g["instruction_text"] and all(f"{k}: {v}" in g["instruction_text"] for k, v in g["goal_options"].items())
    assert all(0 < g["weight"] <= 1 for g in goals)
    assert all(len(catalog.option_combinations(p["options"])) <= catalog.MAX_COMBINATIONS for p in products.values())


def test_search_document_format():
    p = {"Title": "Velora Shirt", "Description": "Soft.", "BulletPoints": ["Machine wash", "x"],
         "options": {"color": ["black", "white"], "size": ["s"]}}
    assert catalog.search_document(p) == "velora shirt soft. machine wash color: black, white, and size: s"


def test_reads_upstream_file_names(tmp_path):
    import pytest

    from seed_gym.core import MissingDataError

    items, ins, _ = catalog.generate_catalog(30, seed=2)
    with pytest.raises(MissingDataError):
        catalog.read_files(tmp_path)
    (tmp_path / "items_shuffle_1000.json").write_text(json.dumps(items))
    (tmp_path / "items_ins_v2_1000.json").write_text(json.dumps(ins))
    got_items, got_ins, human = catalog.read_files(tmp_path)  # the public 1k names; no human file
    assert got_items == items and got_ins == ins and human == {}

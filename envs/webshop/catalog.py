"""SynShop catalogue generator and the loader for real (upstream) WebShop product files.

Generator rules (``generate_catalog``), all from one seed:

* products are ``B0`` + 8 base-36 asins, a fictional brand + 1–2 descriptors + the type's head
  noun, 2–4 attributes of the type's pool (one of them sometimes only in the bullets, never in
  ``Attributes``), 0–2 option groups with at most 20 value combinations, log-normal prices with
  about 30% ranges (``"$lo$hi"``);
* about 25% are hard negatives derived from another product: one attribute fewer, a different
  head noun, a missing option value, or a price twin just above/below a price cap boundary.
  Negatives carry no instruction, so no goal targets them;
* output is exactly upstream's three formats: ``items_shuffle`` (list), ``items_ins_v2``
  (``{asin: {attributes, instruction, instruction_attributes}}``) and ``items_human_ins``
  (``{asin: [{asin, instruction, attributes, options, instruction_attributes,
  instruction_options, assignment_id, worker_id}]}``), and every file loads in upstream's own
  ``load_products`` / ``get_goals`` unchanged: every product has one image (upstream reads
  ``images[0]``; here an inline 1x1 GIF, so nothing is fetched), an ``items_ins_v2`` entry and a
  ``customization_options`` dict, and every product with an instruction has instruction attributes.

Loader rules (``load_products``, upstream ``engine.load_products``): skip asins that are ``nan``
or longer than 10 characters, keep the first of duplicates; Title = name, Description =
full_description, BulletPoints = small_description as a list, Rating ``N.A.``, no reviews;
prices are the numbers after each ``$`` (none → 100.0; one → ``$p``; two or more →
``"$lo to $hi"``, and the reward price is ``rng.uniform(lo, hi)``); option names and values are
lower-cased with ``/`` → `` | ``; Attributes come from ins_v2, else ``['DUMMY_ATTR']``.
Files are checked as they are read (:func:`read_files`): UTF-8 JSON of the right shape, every
product an object with :data:`REQUIRED_PRODUCT_FIELDS` (upstream's loader reads them all); anything
else is a :class:`~seed_gym.core.DataError` naming the file, the line or product, and the fix.
"""

from __future__ import annotations

import itertools
import json
import math
import random
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from seed_gym.envs.webshop import taxonomy as tx

SHUFFLE_FILE, INS_FILE, HUMAN_FILE = "items_shuffle.json", "items_ins_v2.json", "items_human_ins.json"
MAX_COMBINATIONS = 20
_B36 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_PRICE_RE = re.compile(r"\$([\d,]+(?:\.\d+)?)")
#: The one image of every generated product: a transparent 1x1 GIF, inline (no network, no file).
PLACEHOLDER_IMAGE = "data:image/gif;base64,R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7"

Product = dict[str, Any]


# -- generation ------------------------------------------------------------------------------
def _asin(rng: random.Random, used: set[str]) -> str:
    while True:
        asin = "B0" + "".join(rng.choice(_B36) for _ in range(8))
        if asin not in used:
            used.add(asin)
            return asin


def _brand(rng: random.Random) -> str:
    return "".join(rng.choice(tx.BRAND_SYLLABLES) for _ in range(rng.randint(2, 3))).capitalize()


def _pricing(rng: random.Random, category: str) -> tuple[str, float]:
    price = round(tx.MEDIAN_PRICE[category] * math.exp(rng.gauss(0.0, 0.6)), 2)
    price = max(price, 1.99)
    if rng.random() < 0.3:
        return f"${price:.2f}${price * rng.uniform(1.1, 1.6):.2f}", price
    return f"${price:.2f}", price


def _options(rng: random.Random, ptype: tx.ProductType) -> dict[str, list[str]]:
    groups = [g for g in ptype.options if rng.random() < 0.8][:2]
    options: dict[str, list[str]] = {}
    for group in groups:
        values = tx.OPTION_VALUES[group]
        options[group] = rng.sample(values, rng.randint(1, min(5, len(values))))
    while math.prod(len(v) for v in options.values()) > MAX_COMBINATIONS:
        longest = max(options, key=lambda g: len(options[g]))
        options[longest].pop()
    return options


def _bullets(rng: random.Random, ptype: tx.ProductType, bullet_attrs: Sequence[str]) -> list[str]:
    lines = [f"{attr.capitalize()}: designed for everyday {ptype.name} use" for attr in bullet_attrs]
    lines.append(f"Satisfaction guaranteed with every {ptype.nouns[0]}")
    rng.shuffle(lines)
    return lines


def _raw_item(asin: str, name: str, ptype: tx.ProductType, attrs: Sequence[str], bullet_attrs: Sequence[str],
              options: Mapping[str, Sequence[str]], pricing: str, rng: random.Random) -> dict[str, Any]:
    bullets = _bullets(rng, ptype, bullet_attrs)
    return {
        "asin": asin, "name": name, "category": ptype.category, "query": ptype.query,
        "product_category": " › ".join(ptype.breadcrumb), "pricing": pricing,
        "full_description": f"{name}. A {ptype.name} made to last. " + " ".join(
            f"It is {a}." for a in attrs[:1]),
        "small_description": bullets,
        "customization_options": {g: [{"value": v, "image": None} for v in vals] for g, vals in options.items()},
        "images": [PLACEHOLDER_IMAGE], "product_type": ptype.name,
    }


def _instruction(rng: random.Random, ptype: tx.ProductType, attrs: Sequence[str]) -> str:
    template = rng.choice(("Find me {a} {t}", "I need {a} {t}", "I am looking for {a} {t}"))
    return template.format(a=" and ".join(attrs), t=ptype.query)


_HUMAN_TEMPLATES = ("i am looking for {a} {t}", "im looking for {a} {t}", "i would like {a} {t}",
                    "i need a {t} that is {a}")


def _human(rng: random.Random, item: dict[str, Any], goal_attrs: Sequence[str],
           options: Mapping[str, Sequence[str]], worker: int) -> dict[str, Any]:
    chosen = [rng.choice(list(v)) for v in options.values()]
    text = rng.choice(_HUMAN_TEMPLATES).format(a=" and ".join(goal_attrs), t=item["query"].replace("'", ""))
    if chosen:
        text += " in " + " and ".join(chosen)
    return {"asin": item["asin"], "instruction": text, "attributes": list(goal_attrs), "options": chosen,
            "instruction_attributes": list(goal_attrs), "instruction_options": chosen,
            "assignment_id": f"A{worker:06d}", "worker_id": f"W{worker % 97:04d}"}


def _negative(rng: random.Random, base: dict[str, Any], base_ins: dict[str, Any], asin: str,
              ptype: tx.ProductType) -> tuple[dict[str, Any], dict[str, Any]]:
    """A near miss of ``base``: one attribute fewer, other head noun, a value missing, or a price twin."""
    item = json.loads(json.dumps(base))
    item["asin"] = asin
    attrs = list(base_ins["attributes"])
    kind = rng.choice(("attribute", "noun", "option", "price"))
    if kind == "attribute" and len(attrs) > 1:
        dropped = attrs.pop(rng.randrange(len(attrs)))
        item["small_description"] = [b for b in item["small_description"] if dropped not in b.lower()]
        item["full_description"] = item["full_description"].replace(dropped, "reliable")
    elif kind == "noun":
        noun = ptype.nouns[0]
        item["name"] = re.sub(rf"\b{re.escape(noun.capitalize())}\b", tx.ALT_NOUNS[noun].capitalize(), item["name"])
    elif kind == "option" and item["customization_options"]:
        group = rng.choice(sorted(item["customization_options"]))
        values = item["customization_options"][group]
        if len(values) > 1:
            values.pop(rng.randrange(len(values)))
    else:
        low = _PRICE_RE.findall(base["pricing"])
        price = float(low[0].replace(",", "")) if low else 20.0
        boundary = (math.floor(price / 10) + 1) * 10
        item["pricing"] = f"${boundary + rng.choice((-0.01, 0.01)):.2f}"
    return item, {"attributes": attrs, "instruction": None, "instruction_attributes": []}


def generate_catalog(num_products: int = 1000, seed: int = 0, *, negative_share: float = 0.25,
                     human_share: float = 0.3) -> tuple[list[dict], dict[str, dict], dict[str, list]]:
    """The three upstream files' contents for a SynShop catalogue (see the module rules)."""
    if num_products < 1:
        raise ValueError(f"num_products must be >= 1, got {num_products}")
    rng = random.Random(f"synshop:{seed}")
    used: set[str] = set()
    items: list[dict] = []
    ins: dict[str, dict] = {}
    human: dict[str, list] = {}
    bases: list[tuple[dict, dict, tx.ProductType]] = []
    worker = 0
    for index in range(num_products):
        asin = _asin(rng, used)
        if bases and rng.random() < negative_share:
            base, base_ins, ptype = rng.choice(bases)
            item, item_ins = _negative(rng, base, base_ins, asin, ptype)
            items.append(item)
            ins[asin] = item_ins
            continue
        ptype = tx.TYPES[index % len(tx.TYPES)] if index < len(tx.TYPES) else rng.choice(tx.TYPES)
        pool = list(ptype.attributes)
        rng.shuffle(pool)
        attrs = pool[:rng.randint(2, 4)]
        listed = list(attrs)
        if len(attrs) > 2 and rng.random() < 0.3:
            listed.pop()  # the last attribute appears only in the bullets
        descriptors = rng.sample(tx.DESCRIPTORS, rng.randint(1, 2))
        name = " ".join([_brand(rng), *descriptors, *(n.capitalize() for n in ptype.nouns)])
        pricing, _ = _pricing(rng, ptype.category)
        options = _options(rng, ptype)
        item = _raw_item(asin, name, ptype, attrs, attrs, options, pricing, rng)
        goal_attrs = rng.sample(attrs, rng.randint(1, min(3, len(attrs))))
        items.append(item)
        ins[asin] = {"attributes": listed, "instruction": _instruction(rng, ptype, goal_attrs),
                     "instruction_attributes": goal_attrs}
        bases.append((item, ins[asin], ptype))
        if rng.random() < human_share:
            worker += 1
            human[asin] = [_human(rng, item, goal_attrs, options, worker)]
    return items, ins, human


def write_catalog(out: str | Path, num_products: int = 1000, seed: int = 0) -> Path:
    """Generate a catalogue and write the three upstream files into ``out``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    items, ins, human = generate_catalog(num_products, seed)
    for name, value in ((SHUFFLE_FILE, items), (INS_FILE, ins), (HUMAN_FILE, human)):
        tmp = out / (name + ".tmp")
        tmp.write_text(json.dumps(value))
        tmp.replace(out / name)
    return out


# -- loading ---------------------------------------------------------------------------------
def parse_prices(pricing: str) -> list[float]:
    """The numbers after each ``$`` in an upstream ``pricing`` string."""
    return [float(p.replace(",", "")) for p in _PRICE_RE.findall(pricing or "")]


def _price_fields(pricing: str, rng: random.Random) -> tuple[str | float, float]:
    prices = parse_prices(pricing)
    if not prices:
        return 100.0, 100.0
    if len(prices) == 1:
        return f"${prices[0]}", prices[0]
    low, high = prices[0], prices[1]
    return f"${low} to ${high}", rng.uniform(low, high)


def _options_of(raw: Mapping[str, Any]) -> dict[str, list[str]]:
    options: dict[str, list[str]] = {}
    for name, values in (raw or {}).items():
        options[name.lower()] = [str(v["value"]).strip().lower().replace("/", " | ") for v in values]
    return options


def load_products(items: Sequence[Mapping[str, Any]], ins: Mapping[str, Mapping[str, Any]],
                  rng: random.Random) -> tuple[dict[str, Product], dict[str, float]]:
    """Upstream's product dicts keyed by asin, and the reward price of each product."""
    products: dict[str, Product] = {}
    prices: dict[str, float] = {}
    for raw in items:
        asin = str(raw.get("asin"))
        if asin == "nan" or len(asin) > 10 or asin in products:
            continue
        bullets = raw.get("small_description") or []
        if isinstance(bullets, str):
            bullets = [bullets]
        shown, price = _price_fields(raw.get("pricing", ""), rng)
        info = ins.get(asin) or {}
        product = dict(raw)
        product.update({
            "asin": asin, "Title": raw.get("name", ""), "Description": raw.get("full_description", "") or "",
            "BulletPoints": list(bullets), "Price": shown, "Rating": "N.A.", "Reviews": [],
            "options": _options_of(raw.get("customization_options") or {}),
            "option_to_image": {}, "query": str(raw.get("query", "")).lower().strip(),
            "Attributes": list(info.get("attributes") or ["DUMMY_ATTR"]),
            "instruction_text": info.get("instruction"),
            "instruction_attributes": list(info.get("instruction_attributes") or []),
        })
        products[asin] = product
        prices[asin] = price
    return products, prices


#: What every product needs: upstream's ``load_products`` and goal builder read these unconditionally.
REQUIRED_PRODUCT_FIELDS = ("asin", "name", "category", "query", "product_category")
FIX_FILES = ("point data= at upstream WebShop's files as released (items_shuffle*.json: a list of products; "
             "items_ins_v2*.json and items_human_ins.json: objects keyed by asin), or generate a catalogue "
             "with `seed-gym data webshop --out DIR`")


def catalog_paths(root: str | Path) -> tuple[Path, Path, Path | None]:
    """The products, instructions and (optional) human-instructions files in ``root``
    (``*_1000`` variants accepted)."""
    root = Path(root)

    def pick(stem: str) -> Path | None:
        for candidate in (f"{stem}.json", f"{stem}_1000.json"):
            if (root / candidate).is_file():
                return root / candidate
        return None

    shuffle, ins_path = pick("items_shuffle"), pick("items_ins_v2")
    if shuffle is None or ins_path is None:
        from seed_gym.core import MissingDataError
        raise MissingDataError(f"no WebShop data at {root}: need items_shuffle*.json and items_ins_v2*.json")
    human_path = root / HUMAN_FILE
    return shuffle, ins_path, human_path if human_path.is_file() else None


def read_files(root: str | Path) -> tuple[list[dict], dict[str, dict], dict[str, list]]:
    """Read and check the three upstream files from ``root`` (see :func:`catalog_paths`): a
    :class:`~seed_gym.core.DataError` names the file (and line or item) of anything unusable."""
    from seed_gym.datafiles import read_json

    shuffle, ins_path, human_path = catalog_paths(root)
    items = read_json(shuffle, list, FIX_FILES)
    ins = read_json(ins_path, dict, FIX_FILES)
    human = read_json(human_path, dict, FIX_FILES) if human_path else {}
    check_files(shuffle, items, ins_path, ins, human_path, human)
    return items, ins, human


def check_files(shuffle: Path, items: list, ins_path: Path, ins: dict, human_path: Path | None, human: dict) -> None:
    """Every product an object with :data:`REQUIRED_PRODUCT_FIELDS` and well-formed options; every
    instruction entry an object; every human entry a list of objects."""
    from seed_gym.core import DataError
    from seed_gym.datafiles import require_fields

    if not items:
        raise DataError(shuffle, "the product list is empty", FIX_FILES)
    for index, item in enumerate(items):
        what = f"product #{index}" + (f" (asin {item.get('asin')!r})" if isinstance(item, dict) and "asin" in item else "")
        require_fields(shuffle, item, REQUIRED_PRODUCT_FIELDS, what, FIX_FILES)
        options = item.get("customization_options")
        if options is not None and not (isinstance(options, dict) and all(
                isinstance(values, list) and all(isinstance(v, dict) and "value" in v for v in values)
                for values in options.values())):
            raise DataError(shuffle, f"{what}: customization_options must map each option name to a list of "
                                     "{\"value\": ...} objects", FIX_FILES)
    for asin, entry in ins.items():
        if not isinstance(entry, dict):
            raise DataError(ins_path, f"the entry of asin {asin!r} is not an object", FIX_FILES)
    for asin, entries in human.items():
        if not (isinstance(entries, list) and all(isinstance(e, dict) and "instruction" in e for e in entries)):
            raise DataError(human_path or HUMAN_FILE, f"the entry of asin {asin!r} is not a list of objects with "
                                                      "an 'instruction'", FIX_FILES)


def option_text(options: Mapping[str, Sequence[str]]) -> str:
    """``"name: v1, v2, and name2: …"`` as upstream's search documents write it."""
    return ", and ".join(f"{name}: {', '.join(values)}" for name, values in options.items())


def search_document(product: Product) -> str:
    """The indexed text: lower(Title + Description + BulletPoints[0] + option text)."""
    bullets = product.get("BulletPoints") or [""]
    parts = [product.get("Title", ""), product.get("Description", ""), bullets[0] if bullets else "",
             option_text(product.get("options") or {})]
    return " ".join(p for p in parts if p).lower()


def option_combinations(options: Mapping[str, Sequence[str]]) -> list[dict[str, str]]:
    """Every option-value combination, names in sorted order (upstream's synthetic goals)."""
    names = sorted(options)
    return [dict(zip(names, combo)) for combo in itertools.product(*(options[n] for n in names))]

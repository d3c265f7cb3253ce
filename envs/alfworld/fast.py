"""The fast engine: the same ALFWorld/TextWorld stack, minus the work it repeats.

``engine=fast`` (the default) plays on the real ``PddlEnv``; only three things change, and each is
a pure function of its input, so the caches are keyed by content:

* **text templates** — TextWorld re-parses every grammar string with tatsu on every ``derive``
  (every admissible command's template, every feedback rule, every step). Here each distinct
  string is parsed once per process by TextWorld's own parser and kept as an immutable tree.
* **contexts** — TextWorld deep-copies the text-generation context (variables, mapping) for every
  symbol it expands. Nothing mutates those dicts or their values during a derivation (a query
  makes new dicts, the grammar's expressions only read attributes), so here contexts are shared
  and a query builds new dicts (copy-on-write). The derivation visits symbols in the same order.
* **the game's logic and SAS translation** — a load plus a reset parses the grammar with tatsu and
  runs fast-downward's ``pddl2sas`` four times, all functions of the game file. Here the parsed
  :class:`GameLogic` is kept per (domain, grammar) sha256 and the translation per
  (domain, problem) sha256, in memory per process (LRU, ``SEED_GYM_ALFWORLD_CACHE`` games,
  default 64). The downward library still loads the SAS text on every reset, as stock does.

Nothing in site-packages is edited: these are subclasses used only by engines built with
``engine="fast"``; a stock engine in the same process is untouched. The fast path is pinned to
alfworld 0.4.2 / textworld 1.7.0 and refuses other versions (:func:`check_versions`).
``seed-gym data alfworld --check-engine DIR`` proves it plays identically (:mod:`.check`).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections import Counter, OrderedDict, defaultdict
from typing import Any

PINNED = {"alfworld": "0.4.2", "textworld": "1.7.0"}
FAST_TAG = "fast1"


class EngineVersionError(RuntimeError):
    pass


def installed_versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for package in PINNED:
        try:
            found[package] = version(package)
        except PackageNotFoundError:
            found[package] = "missing"
    return found


def check_versions() -> None:
    """Refuse the fast path unless the pinned versions are installed."""
    found = installed_versions()
    if found != PINNED:
        raise EngineVersionError(
            f"the fast ALFWorld engine is written for alfworld {PINNED['alfworld']} / textworld "
            f"{PINNED['textworld']}, found alfworld {found['alfworld']} / textworld {found['textworld']}; "
            "use --env-arg engine=stock (the untouched stack) or install the pinned versions")


def _sha(*parts: str) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode("utf-8"))
        digest.update(b"\0")
    return digest.hexdigest()


class _LRU:
    def __init__(self, size: int) -> None:
        self.size = size
        self.items: OrderedDict[str, Any] = OrderedDict()
        self.hits = self.misses = 0

    def get(self, key: str, build: Any) -> Any:
        if key in self.items:
            self.hits += 1
            self.items.move_to_end(key)
            return self.items[key]
        self.misses += 1
        value = build()
        self.items[key] = value
        while len(self.items) > self.size:
            self.items.popitem(last=False)
        return value


def _cache_size() -> int:
    try:
        return max(1, int(os.environ.get("SEED_GYM_ALFWORLD_CACHE", "64")))
    except ValueError:
        return 64


_LOGICS = _LRU(16)
_TRANSLATIONS = _LRU(_cache_size())


def cache_stats() -> dict[str, int]:
    return {"logic_hits": _LOGICS.hits, "logic_misses": _LOGICS.misses,
            "translation_hits": _TRANSLATIONS.hits, "translation_misses": _TRANSLATIONS.misses}


# -- text generation -------------------------------------------------------------------------
# Immutable trees: ("t", literal) | ("n", name) | ("e", statement, code) | ("c", expr, given)
# | ("l", conditional). Built from the symbols TextWorld's own parser returns.

def _node(symbol: Any) -> tuple:
    from textworld.envs.pddl import textgen as tg

    if isinstance(symbol, tg.TerminalSymbol):
        return ("t", symbol.symbol)
    if isinstance(symbol, tg.NonterminalSymbol):
        return ("n", symbol.symbol)
    if isinstance(symbol, tg.EvalSymbol):
        return ("e", symbol.expression, compile(symbol.expression, "<string>", "eval"))
    if isinstance(symbol, tg.ConditionalSymbol):
        return ("c", _node(symbol.expression), symbol.given)
    if isinstance(symbol, tg.ListSymbol):
        return ("l", _node(symbol.symbol))
    raise NotImplementedError(f"Unknown symbol: {type(symbol)}")


_TEMPLATES: dict[str, tuple] = {}
_QUERIES: dict[str, Any] = {}


def parsed_template(text: str) -> tuple:
    """``text`` parsed once per process (TextWorld's parser), as a tuple of nodes."""
    nodes = _TEMPLATES.get(text)
    if nodes is None:
        from textworld.envs.pddl import textgen as tg

        nodes = tuple(_node(s) for s in tg._parse_and_convert(text, rule_name="symbols", trace=False))
        _TEMPLATES[text] = nodes
    return nodes


def parsed_query(text: str) -> Any:
    rule = _QUERIES.get(text)
    if rule is None:
        from textworld.logic import Rule

        rule = _QUERIES[text] = Rule.parse_conjunctive_query(text)
    return rule


class _Ctx:
    """A text-generation context whose dicts are never mutated once built (copy-on-write)."""

    __slots__ = ("state", "facts", "variables", "mapping", "entity_infos")

    def __init__(self, state: Any, facts: Any, variables: dict, mapping: dict, entity_infos: Any) -> None:
        self.state, self.facts, self.variables = state, facts, variables
        self.mapping, self.entity_infos = mapping, entity_infos

    def as_dict(self) -> dict:
        return {"state": self.state, "facts": self.facts, "variables": dict(self.variables),
                "mapping": dict(self.mapping), "entity_infos": self.entity_infos}


def _fast_grammar_class() -> type:
    from textworld.envs.pddl import textgen as tg
    from textworld.utils import check_flag

    module_globals = vars(tg)

    class FastGrammar(tg.ContextSensitiveGrammar):
        """TextWorld's grammar with a derivation over parsed, shared trees (same output)."""

        def __init__(self, grammar: Any) -> None:
            super().__init__()
            self.update(grammar)
            self._compiled: dict[str, list[tuple[str, tuple]]] = {}

        def _rules_for(self, name: str) -> list[tuple[str, tuple]] | None:
            compiled = self._compiled.get(name)
            if compiled is None:
                rules = self._rules.get(name)
                if not rules:
                    return None
                compiled = [(rule.condition, tuple(_node(s) for s in rule.rhs)) for rule in rules]
                self._compiled[name] = compiled
            return compiled

        def derive(self, start: str, context: dict = {}) -> str:  # noqa: B006 (stock signature)
            if check_flag("TW_CSG_TRACE") or check_flag("TW_CSG_DEBUG"):
                return super().derive(start, context)
            root = _Ctx(context["state"], context["facts"], dict(context["variables"]),
                        dict(context["mapping"]), context["entity_infos"])
            stack = [(node, root) for node in reversed(parsed_template(start))]
            out: list[Any] = []
            while stack:
                node, ctx = stack.pop()
                kind = node[0]
                if kind == "t":
                    out.append(node[1])
                elif kind == "n":
                    stack.extend((child, ctx) for child in reversed(self._expand(node[1], ctx)))
                elif kind == "e":
                    out.append(self._eval(node, ctx))
                elif kind == "c":
                    stack.extend((node[1], c) for c in reversed(self._contexts(node[2], ctx)))
                else:  # "l": a list of the conditional's expansions, with separators
                    inner = node[1]
                    items = [(inner[1], c) for c in self._contexts(inner[2], ctx)]
                    if not items:
                        seq = [(("n", "list_empty"), ctx)]
                    elif len(items) == 1:
                        seq = items
                    else:
                        seq = []
                        for item in items[:-2]:
                            seq += [item, (("n", "list_separator"), ctx)]
                        seq += [items[-2], (("n", "list_last_separator"), ctx), items[-1]]
                    stack.extend(reversed(seq))
            return "".join(map(str, out))

        def _expand(self, name: str, ctx: _Ctx) -> tuple:
            rules = self._rules_for(name)
            if not rules:
                raise tg.CSGUnknownSymbolError(tg.NonterminalSymbol(name))
            for condition, rhs in rules:
                if not condition or any(True for _ in ctx.state.all_assignments(parsed_query(condition), ctx.mapping)):
                    return rhs
            raise IndexError("list index out of range")  # what the stock grammar raises

        @staticmethod
        def _contexts(given: str | None, ctx: _Ctx) -> list[_Ctx]:
            if not given:
                return [ctx]
            found = []
            for mapping in ctx.state.all_assignments(parsed_query(given), ctx.mapping):
                variables = dict(ctx.variables)
                variables.update({ph.name: ctx.entity_infos[var.name] for ph, var in mapping.items()})
                merged = dict(ctx.mapping)
                merged.update(mapping)
                found.append(_Ctx(ctx.state, ctx.facts, variables, merged, ctx.entity_infos))
            return found

        @staticmethod
        def _eval(node: tuple, ctx: _Ctx) -> Any:
            # The stock symbol evaluates with its frame's locals, updated with the variables:
            # the variables, minus an unbound local ``value``, with ``self`` and ``context`` on top.
            scope = dict(ctx.variables)
            scope.pop("value", None)
            as_dict = ctx.as_dict()
            scope["self"] = tg.EvalSymbol(node[1], as_dict)
            scope["context"] = as_dict
            return eval(node[2], module_globals, scope)  # noqa: S307 (the game's own grammar)

    return FastGrammar


_FAST_GRAMMAR: type | None = None


def cached_logic(domain: str, grammar: str) -> Any:
    """The parsed game logic for (domain, grammar), shared by every fast engine of the process."""
    global _FAST_GRAMMAR
    from textworld.envs.pddl import logic as pddl_logic

    if _FAST_GRAMMAR is None:
        _FAST_GRAMMAR = _fast_grammar_class()

    def build() -> Any:
        logic = pddl_logic.GameLogic(domain=domain, grammar=grammar)
        logic.grammar = _FAST_GRAMMAR(logic.grammar)
        return logic

    return _LOGICS.get(_sha(domain, grammar), build)


def cached_translation(domain: str, problem: str) -> tuple[Any, str, str]:
    """fast-downward's (task, sas) and optimised sas for (domain, problem)."""
    import fast_downward

    def build() -> tuple[Any, str, str]:
        task, sas = fast_downward.pddl2sas(domain, problem, verbose=False)
        _, sas_replan = fast_downward.pddl2sas(domain, problem, verbose=False, optimize=True)
        return task, sas, sas_replan

    result = _TRANSLATIONS.get(_sha(domain, problem), build)
    sys.argv = ["translate.py", "domain", "task"]  # pddl2sas leaves this behind; keep it so
    return result


# -- the state and the env -------------------------------------------------------------------

def _fast_classes() -> tuple[type, type]:
    import fast_downward
    import textworld
    from textworld.envs.pddl import PddlEnv
    from textworld.envs.pddl import logic as pddl_logic
    from textworld.logic import Proposition, Variable
    from textworld.utils import check_flag

    class FastPddlState(pddl_logic.PddlState):
        """A ``PddlState`` built from the cached translation (same facts, same C-side state)."""

        def __init__(self, downward_lib: Any, pddl_problem: str, logic: Any) -> None:
            self._facts = defaultdict(set)
            self._vars_by_name = {}
            self._vars_by_type = defaultdict(set)
            self._var_counts = Counter()
            self._logic = logic
            self.downward_lib = downward_lib
            self.pddl_problem = pddl_problem
            self.task, self.sas, self.sas_replan = cached_translation(logic.domain, pddl_problem)
            self._actions = {a.name: a for a in self.task.actions}
            for type_ in self.task.types:
                try:
                    logic.types.add(textworld.logic.Type(type_.name, type_.supertype_names))
                except ValueError:
                    pass
            downward_lib.load_sas(self.sas.encode("utf-8"))
            downward_lib.load_sas_replan(self.sas_replan.encode("utf-8"))
            self.name2type = {o.name: o.type_name for o in self.task.objects}
            self.add_facts([f for f in map(self._init_fact, self.task.init) if f is not None])
            atoms = (pddl_logic.Atom * downward_lib.get_state_size())()
            downward_lib.get_state(atoms)
            current = (atom.get_fact(self.name2type) for atom in atoms)
            self.add_facts([fact for fact in current if not fact.is_negation])

        def _init_fact(self, atom: Any) -> Any:
            translate_pddl = fast_downward.translate.pddl  # imported by pddl2sas

            def args(names: Any) -> list:
                return [Variable(name, self.name2type[name]) for name in names]

            if isinstance(atom, translate_pddl.conditions.Atom):
                return None if atom.predicate == "=" else Proposition(atom.predicate, args(atom.args))
            if isinstance(atom, translate_pddl.f_expression.Assign):
                if atom.fluent.symbol == "total-cost":
                    return None
                value = f"{atom.expression.value}"
                return None if value.isdigit() else Proposition(value, args(atom.fluent.args))
            return None

    class FastPddlEnv(PddlEnv):
        """``PddlEnv`` on the cached logic and translation; its step and infos are the stock ones."""

        def _new_state(self) -> Any:
            if check_flag("TW_PDDL_DEBUG"):
                return pddl_logic.PddlState(self.downward_lib, self._game_data["pddl_problem"], self._logic)
            return FastPddlState(self.downward_lib, self._game_data["pddl_problem"], self._logic)

        def load(self, filename_or_data: Any) -> None:
            if isinstance(filename_or_data, (str, os.PathLike)):
                with open(filename_or_data) as handle:
                    data = json.load(handle)
                self._game_file = filename_or_data
            else:
                data, self._game_file = filename_or_data, None
            self._game_data = data
            self.walkthrough = data.get("walkthrough", None)
            self._logic = cached_logic(data["pddl_domain"], data["grammar"])
            self._pddl_state = self._new_state()
            self._entity_infos = self._get_entity_infos()

        def reset(self) -> Any:
            self._pddl_state = self._new_state()
            self.prev_state = None
            self.state = textworld.core.GameState()
            self._last_action = None
            self._moves = 0
            intro_context = {"state": self._pddl_state, "facts": list(self._pddl_state.facts),
                             "variables": {}, "mapping": {}, "entity_infos": self._entity_infos}
            self.state.feedback = self._logic.grammar.derive("#intro#", intro_context)
            self.state.raw = self.state.feedback
            self._gather_infos()
            if "walkthrough" in self.request_infos.extras:
                self.state["extra.walkthrough"] = self.walkthrough or self._pddl_state.replan(self._entity_infos)
            return self.state

    return FastPddlState, FastPddlEnv


_CLASSES: tuple[type, type] | None = None


def fast_pddl_env(infos: Any) -> Any:
    global _CLASSES
    check_versions()
    if _CLASSES is None:
        _CLASSES = _fast_classes()
    return _CLASSES[1](infos)

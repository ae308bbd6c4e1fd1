"""CRAG-MM as lmms-eval tasks: the documents, the prompts, the turn records and the scores.

One `CragMMTask` is what one task (crag_mm_single, crag_mm_single_rag, crag_mm_multi) does in an
lmms-eval run, over this package's own code: the split `local_evaluation.py` would read
(evaluator/harness/dataset.py's loaders: the mini benchmark by default, a hub id or folder, the
validation or public-test split, CRAG-MM-Diagnostics' layout), the image as the official batch
iterator hands it over, the baseline's answer prompt (agents/stages/baseline_prompt.py; for
crag_mm_single_rag with the search pipeline's image and web results, as the CRAG-MM paper's
straightforward RAG), the model's own earlier answers cut to 75 tokens as a conversation's
history, and the scores: each document's turns become the records `answers.jsonl` holds, and the
aggregation scores them all as local_evaluation.py scores a run (evaluator/imported_runs.py:
its judge, rule set, early stop, ego subset and intervals). Nothing here imports lmms-eval:
cruise_lmms_eval/task.py binds these methods into lmms-eval's task class.

What a task is told comes from its YAML (lmms-eval's channel for a task's settings; a YAML of
your own that `include`s ours changes them): `dataset_path` (local_evaluation.py's --dataset; empty:
the profile's), `dataset_kwargs.revision`, `test_split` (--split), and under `metadata` the fields
of `TaskSettings` and of the evaluator's `ScoringSettings` (rules, eval_model, eval_base_url,
judge_prompt_from, ...).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import re
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console

from agents.base_agent import IDK_ANSWER
from agents.profiles import default_dataset, resolve_profile
from agents.stages.baseline_prompt import HISTORY_CLOSE, HISTORY_OPEN, baseline_messages
from agents.stages.prompts import load_prompt_lines
from agents.stages.types import Turn
from evaluator.harness.dataset import (
    Conversation,
    conversation_from_row,
    image_for_agent,
    label_vocabularies,
    load_split,
)
from evaluator.harness.runner import answer_record
from evaluator.imported_runs import TURNS_KEY, imported_run_config, score_turns
from evaluator.scoring.rules import rule_set
from evaluator.settings import DATASET_TYPES, ScoringSettings

log = logging.getLogger(__name__)

# the model alone; the search pipeline's results in the prompt; the search pipeline as tools the
# model calls (crag_mm_agentic, lmms-eval's generate_until_agentic)
PROMPTS = ("question", "rag", "agentic")
TOOL_CALL = re.compile(r"<tool_call>\s*(\{.*?\})\s*</tool_call>", re.DOTALL)
# The two tools in OpenAI's function-calling schema, as the model is shown them.
TOOLS = [
    {"type": "function", "function": {
        "name": "image_search",
        "description": "Search the image index with the photo, or with the part of it inside a box, for the "
                       "entities it shows.",
        "parameters": {"type": "object", "properties": {
            "box": {"type": "array", "items": {"type": "number"}, "minItems": 4, "maxItems": 4,
                    "description": "optional crop [x1, y1, x2, y2] in the photo's pixels"}},
            "required": []}}},
    {"type": "function", "function": {
        "name": "web_search",
        "description": "Search the web index with a text query.",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}},
]
TASK_FIELDS_OF_LMMS_EVAL = {"task": "task", "dataset_path": "dataset", "test_split": "split"}
NO_REPLY = "the model gave no reply for this turn (its conversation ended early): scored as I don't know"


def figure(result, path: tuple[str, ...]):
    """The figure at `path` of a scored run (an EvaluationResult: its scores and run summary)."""
    value = {"scores": result.scores, "summary": result.summary}
    for key in path:
        value = value[key]
    return value


# Each metric a task reports in lmms-eval's results, read from the scored run (the evaluator's
# EvaluationResult): name -> (where it is, higher is better). The multi-turn task adds both rule
# sets' truthfulness, the conversation score and what the early stop took away.
METRICS = {
    TURNS_KEY: (("summary", "turns_answered"), True),  # how many turns were scored (each sample keeps its turns)
    "truthfulness": (("scores", "all", "truthfulness_score"), True),
    "accuracy": (("scores", "all", "accuracy"), True),
    "missing": (("scores", "all", "missing"), False),
    "hallucination": (("scores", "all", "hallucination_rate"), False),
    "truthfulness_ci95": (("summary", "intervals_95", "all", "truthfulness_score"), True),
    "ego_truthfulness": (("scores", "ego", "truthfulness_score"), True),
}
MULTI_TURN_METRICS = {
    "conversation_score": (("scores", "all", "mean_multi_turn_conversation_score"), True),
    "truthfulness_kddcup2025": (("summary", "multi_turn", "rule_sets", "kddcup2025", "scores", "truthfulness_score"),
                                True),
    "truthfulness_crag_mm": (("summary", "multi_turn", "rule_sets", "crag-mm", "scores", "truthfulness_score"), True),
    "early_stop": (("summary", "multi_turn", "early_stop"), False),
}


@dataclass(frozen=True)
class TaskSettings:
    """A task's settings, as its YAML gives them (module notes)."""

    task: str = "crag_mm"  # its name in lmms-eval
    dataset_type: str = "single-turn"
    prompt: str = "question"  # question | rag
    # the machine, as local_evaluation.py's --profile: whose dataset is the default and whose
    # search pipeline a RAG prompt reads (cpu: the mini benchmark and its local indices)
    profile: str = "cpu"
    dataset: str | None = None  # a hub id or a folder; None: the profile's
    revision: str = "v0.1.2"
    split: str = "validation"
    search_hits: int = 3  # hits per search (the image, the question) a RAG prompt shows
    context_chars: int = 4000  # at most this much of them
    max_tool_calls: int = 4  # crag_mm_agentic: tool calls a turn may make (lmms-eval's max_agentic_steps bounds the rounds)
    output_dir: str | None = None  # the scored run is kept in output_dir/<task> (None: scored in a folder then removed)
    scoring: ScoringSettings = field(default_factory=ScoringSettings)

    def __post_init__(self):
        if self.dataset_type not in DATASET_TYPES:
            raise ValueError(f"dataset_type {self.dataset_type!r}: choose one of {list(DATASET_TYPES)}")
        if self.prompt not in PROMPTS:
            raise ValueError(f"prompt {self.prompt!r}: choose one of {list(PROMPTS)}")
        if self.prompt in ("rag", "agentic") and self.dataset_type == "multi-turn":
            raise ValueError(f"prompt {self.prompt!r} is for single-turn tasks")
        rule_set(self.scoring.rules)  # an unknown rule set stops here, in one line
        resolve_profile(self.profile)

    @property
    def multi_turn(self) -> bool:
        return self.dataset_type == "multi-turn"

    @property
    def metrics(self) -> dict:
        return {**METRICS, **(MULTI_TURN_METRICS if self.multi_turn else {})}

    @classmethod
    def from_task_config(cls, config: dict) -> TaskSettings:
        """From a task's YAML fields (lmms-eval's config dict); a metadata key that is no setting
        is refused in one line, as a misspelt --set is."""
        metadata = dict(config.get("metadata") or {})
        metadata.pop("version", None)  # lmms-eval's own
        metadata.pop("crag_mm", None)  # what a task recorded of itself (CragMMTask.described)
        given = {mine: config[theirs] for theirs, mine in TASK_FIELDS_OF_LMMS_EVAL.items() if config.get(theirs)}
        revision = (config.get("dataset_kwargs") or {}).get("revision")
        if revision:
            given["revision"] = revision
        scoring_names = {f.name for f in dataclasses.fields(ScoringSettings)}
        own_names = {f.name for f in dataclasses.fields(cls)} - {"scoring", "revision", *TASK_FIELDS_OF_LMMS_EVAL.values()}
        unknown = sorted(set(metadata) - scoring_names - own_names)
        if unknown:
            raise ValueError(f"unknown metadata of a CRAG-MM task: {unknown} (settings: {sorted(own_names)}; "
                             f"judge: {sorted(scoring_names)})")
        scoring = ScoringSettings(**{k: v for k, v in metadata.items() if k in scoring_names})
        return cls(**given, **{k: v for k, v in metadata.items() if k in own_names}, scoring=scoring)


@dataclass(frozen=True)
class LoadedSplit:
    """What loading the split found out: what the docs are read with."""

    dataset: str  # the dataset read (the profile's default, resolved)
    split: str  # the split read (a missing one falls back to the first, with a notice)
    notice: str | None
    vocabularies: dict  # label field -> class names, where the data holds class labels
    image_urls: dict  # session_id -> image_url, the rule set's fixes of broken links


def prompt_text(messages: list[dict]) -> str:
    """The baseline's role/content messages as one text (an lmms-eval model takes one text and the
    image, and adds its own system prompt): each message a paragraph, the conversation's turns
    inside the history block named by their role."""
    parts, in_history = [], False
    for message in messages:
        content = message["content"]
        if content in (HISTORY_OPEN, HISTORY_CLOSE):
            in_history = content == HISTORY_OPEN
            parts.append(content)
        elif in_history:
            parts.append(f"{message['role'].capitalize()}: {content}")
        else:
            parts.append(content)
    return "\n\n".join(parts)


def search_chunks(pipeline, image, query: str, cfg, hits: int) -> tuple[list[str], dict]:
    """The search pipeline's results for one turn as the baseline reads them: image search on
    the photo, web search on the question (where the pipeline searches the web), each hit made
    into our passages (agents/stages/s4_chunk.py), duplicates dropped; and what was found: the
    hits in order as `retrieved` (an image hit with its entities' names, which the diagnostics
    match against a labelled target). A search that fails costs only its own results."""
    from agents.stages.s3_retrieve import safe_text_query, web_search_enabled
    from agents.stages.s4_chunk import chunks_from_image_hit, chunks_from_web_hit, dedupe, hit_entity_names

    found = {"image_hits": 0, "web_hits": 0, "errors": [], "retrieved": []}
    chunks: list[str] = []
    searches = [("image", image, lambda hit: chunks_from_image_hit(hit, cfg))]
    if web_search_enabled(pipeline):
        searches.append(("web", safe_text_query(query), lambda hit: chunks_from_web_hit(hit, cfg, query)))
    for source, what, read in searches:
        try:
            results = [h for h in (pipeline(what, k=hits) or []) if isinstance(h, dict)]
        except Exception as exc:  # noqa: BLE001 - an index or model error costs this search only
            found["errors"].append(f"{source} search: {type(exc).__name__}: {str(exc)[:200]}")
            continue
        found[f"{source}_hits"] = len(results)
        for hit in results:
            chunks.extend(read(hit))
            found["retrieved"].append({"source": "image", "entities": hit_entity_names(hit)} if source == "image"
                                      else {"source": "web", "name": str(hit.get("page_name") or hit.get("page_url")
                                                                         or "")})
    kept, _ = dedupe(chunks, chunks)
    return kept, found


def within(chunks: list[str], chars: int) -> list[str]:
    """The first chunks that fit in `chars` together (a first chunk longer than that is cut)."""
    kept, used = [], 0
    for chunk in chunks:
        if used + len(chunk) > chars:
            if not kept:
                kept.append(chunk[:chars])
            break
        kept.append(chunk)
        used += len(chunk) + 2
    return kept


class CragMMTask:
    """One CRAG-MM task in one lmms-eval run (module notes). `pipeline_factory(profile)` builds the
    search pipeline a RAG prompt reads (default: the evaluator's, for the profile's search)."""

    def __init__(self, settings: TaskSettings, *, pipeline_factory=None, console: Console | None = None):
        self.settings = settings
        self.loaded: LoadedSplit | None = None  # pragma: no mutate: "" reads as None (falsy) wherever it is read
        self._pipeline_factory = pipeline_factory or default_pipeline
        self._search = None  # (pipeline, chunking config), built at the first RAG prompt
        self._contexts: dict[str, tuple[str, dict]] = {}  # interaction_id -> (context, trace)
        self._images: dict[str, bool] = {}  # session_id -> whether its image could be loaded
        self._media, self._positions = None, {}  # the split with its images; session_id -> its row
        self._truncator = None
        self._lock = threading.Lock()  # lmms-eval scores documents on several threads
        self._scored: dict[str, object] = {}  # digest of the turns -> the scored run
        self.console = console or Console(quiet=True)

    def __deepcopy__(self, memo):
        # lmms-eval deep-copies a task's config, which holds this task's methods: one task, one
        # run's state (its search pipeline, what it searched, what it scored) is not copied
        return self

    # ------------------------------------------------------------------ the documents
    def load(self):
        """The split as a datasets.Dataset (one document per row: a conversation)."""
        s = self.settings
        dataset = s.dataset or default_dataset(s.profile, s.dataset_type)
        ds, split, notice = load_split(dataset, s.revision, s.split)
        if notice:
            log.warning("%s", notice)
        meta = ds.remove_columns([c for c in ("image",) if c in ds.column_names])
        rules = rule_set(s.scoring.rules)
        self.loaded = LoadedSplit(dataset, split, notice, label_vocabularies(meta.features),
                                  dict(rules.image_url_updates.get(s.dataset_type, {})))
        # lmms-eval builds the prompts from the documents without their images: a RAG prompt's
        # image search finds its photo here
        self._media = ds
        key = "session_id" if "session_id" in meta.column_names else "id"  # CRAG-MM-Diagnostics: `id`
        self._positions = {str(value): i for i, value in enumerate(meta[key])} if key in meta.column_names else {}
        return ds

    def conversation(self, doc: dict) -> Conversation:
        conv = conversation_from_row(0, doc, self.loaded.vocabularies)
        conv.image_url = self.loaded.image_urls.get(conv.session_id, conv.image_url)
        return conv

    def described(self) -> dict:
        """What this task read and how it scores: the lmms-eval results file keeps it (the task
        config's metadata), and `local_evaluation.py from-lmms-eval` reads it back."""
        s = self.settings
        return {"dataset": self.loaded.dataset if self.loaded else s.dataset, "split": self.loaded.split
                if self.loaded else s.split, "revision": s.revision, "dataset_type": s.dataset_type,
                "prompt": s.prompt, "profile": s.profile, **dataclasses.asdict(s.scoring)}

    # ------------------------------------------------------------------ what the model is given
    def doc_to_visual(self, doc: dict, lmms_eval_specific_kwargs=None) -> list:
        """The conversation's image as the official iterator hands it over (egocentric frames
        resized to 960 x 1280); none where it cannot be loaded (said in the log)."""
        conv = self.conversation(doc)
        raw = doc.get("image")
        if raw is None and conv.session_id in self._positions:  # a document without its media
            raw = self._media[self._positions[conv.session_id]].get("image")
        try:
            images = [image_for_agent(raw, conv.image_url)]
        except Exception as exc:  # noqa: BLE001 - an unreachable URL or corrupt bytes cost the image only
            log.warning("session %s: image not loaded (%s: %s)", conv.session_id, type(exc).__name__, exc)
            images = []
        self._images[conv.session_id] = bool(images)
        return images

    def doc_to_target(self, doc: dict) -> str:
        return "\n".join(turn.ground_truth for turn in self.conversation(doc).turns)

    def doc_to_text(self, doc: dict, lmms_eval_specific_kwargs=None, previous_output=None, round_idx=None,
                    previous_round_info=None):
        """The first turn's prompt; for a conversation, lmms-eval's later rounds (round_idx >= 1)
        get (visuals, the turn's prompt with the model's earlier answers cut to the judged length
        as history, ended?, previous_output, previous_round_info)."""
        conv = self.conversation(doc)
        if not round_idx:
            return self.turn_prompt(conv, 0, doc, [])
        if self.settings.prompt == "agentic":
            return self.agentic_step(conv, doc, list(previous_output or []), previous_round_info)
        if round_idx >= len(conv.turns):
            return None, None, True, previous_output, previous_round_info
        answers = self.cut(list(previous_output or [])[:round_idx])
        answers += [IDK_ANSWER] * (round_idx - len(answers))
        history = []
        for turn, answer in zip(conv.turns[:round_idx], answers):
            history += [{"role": "user", "content": turn.query}, {"role": "assistant", "content": answer}]
        return self.doc_to_visual(doc), self.turn_prompt(conv, round_idx, doc, history), False, previous_output, \
            previous_round_info

    def turn_prompt(self, conv: Conversation, turn_idx: int, doc: dict, history: list[dict]) -> str:
        context = self.context(conv, doc)[0] if self.settings.prompt == "rag" else ""
        turn = Turn(query=conv.turns[turn_idx].query, image=None, history=history)
        text = prompt_text(baseline_messages(turn, context, "open"))
        if self.settings.prompt != "agentic":
            return text
        return "\n\n".join([load_prompt_lines("lmms_agentic_tools"), json.dumps(TOOLS),
                             load_prompt_lines("lmms_agentic_call"), text])

    # ------------------------------------------------------------------ the search pipeline as tools
    def agentic_step(self, conv: Conversation, doc: dict, outputs: list[str], state: dict | None):
        """One round of lmms-eval's generate_until_agentic after the model's reply `outputs[-1]`:
        a tool call (within the budget) is run and the prompt grows by its results; a reply without
        one ends the turn, as JSON {"answer", "calls"} (lmms-eval replaces a last reply that is not
        JSON by its own fallback record once a task keeps a round state). Returns lmms-eval's
        (visuals, next prompt, ended, outputs, state); None as visuals keeps the photo."""
        state = dict(state or {"calls": [], "transcript": []})
        reply = outputs[-1] if outputs else ""
        found = TOOL_CALL.search(reply or "")
        if found is None or len(state["calls"]) >= self.settings.max_tool_calls:
            # a call past the budget ends the turn unanswered: "I don't know", a miss
            answer = (reply or "").strip() if found is None else IDK_ANSWER
            final = json.dumps({"answer": answer, "calls": state["calls"]})
            return None, None, True, [*outputs[:-1], final], {**state, "state": {"calls": state["calls"]}}
        call, result = self.run_tool(doc, found.group(1))
        state["calls"] = [*state["calls"], call]
        state["transcript"] = [*state["transcript"], f"{found.group(0)}\n<tool_result>\n{result}\n</tool_result>"]
        parts = [self.turn_prompt(conv, 0, doc, []), *state["transcript"]]
        if len(state["calls"]) >= self.settings.max_tool_calls:
            parts.append(load_prompt_lines("lmms_agentic_last"))
        return None, "\n\n".join(parts), False, outputs, {**state, "state": {"calls": state["calls"]}}

    def run_tool(self, doc: dict, text: str) -> tuple[dict, str]:
        """A tool call's record (tool, arguments, hits, image hits' entity names, error) and the
        passages it returns to the model (within context_chars); a malformed call is an error the
        model reads, not a crash."""
        call = {"tool": None, "arguments": None, "hits": 0, "entities": [], "error": None}
        try:
            parsed = json.loads(text)
            name, arguments = parsed.get("name"), parsed.get("arguments") or {}
            if isinstance(arguments, str):
                arguments = json.loads(arguments)
            call.update(tool=name, arguments=arguments)
            with self._lock:
                if self._search is None:
                    self._search = self._pipeline_factory(self.settings.profile)
            pipeline, cfg = self._search
            from agents.stages.s4_chunk import chunks_from_image_hit, chunks_from_web_hit, dedupe, hit_entity_names

            if name == "image_search":
                images = self.doc_to_visual(doc)
                if not images:
                    raise ValueError("no image")
                image, box = images[0], arguments.get("box")
                if box:
                    image = image.crop(tuple(float(v) for v in box))
                hits = [h for h in (pipeline(image, k=self.settings.search_hits) or []) if isinstance(h, dict)]
                call["entities"] = [hit_entity_names(h) for h in hits]
                chunks = [c for h in hits for c in chunks_from_image_hit(h, cfg)]
            elif name == "web_search":
                query = str(arguments["query"])
                hits = [h for h in (pipeline(query, k=self.settings.search_hits) or []) if isinstance(h, dict)]
                chunks = [c for h in hits for c in chunks_from_web_hit(h, cfg, query)]
            else:
                raise ValueError(f"unknown tool {name!r}: image_search or web_search")
            call["hits"] = len(hits)
            kept = within(dedupe(chunks, chunks)[0], self.settings.context_chars)
            return call, "\n\n".join(kept) or "nothing found"
        except Exception as exc:  # noqa: BLE001 - a bad call or a failed search costs this call only
            call["error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
            return call, f"error: {call['error']}"

    def context(self, conv: Conversation, doc: dict) -> tuple[str, dict]:
        """The search results a RAG prompt shows for the conversation's first turn, and the trace
        of what was found; searched once per turn."""
        iid = conv.turns[0].interaction_id
        with self._lock:
            if iid not in self._contexts:
                if self._search is None:
                    self._search = self._pipeline_factory(self.settings.profile)
                pipeline, cfg = self._search
                images = self.doc_to_visual(doc)
                chunks, found = search_chunks(pipeline, images[0], conv.turns[0].query, cfg,
                                              self.settings.search_hits) if images else ([], {"errors": ["no image"]})
                kept = within(chunks, self.settings.context_chars)
                trace = {"funnel": {"image loaded": bool(images), "search found passages": bool(chunks),
                                    "passages in the prompt": bool(kept)},
                         **found, "passages": kept}
                self._contexts[iid] = ("\n\n".join(kept), trace)
            return self._contexts[iid]

    # ------------------------------------------------------------------ scoring
    def cut(self, replies: list[str]) -> list[str]:
        """Replies cut to the judged length (75 tokens), as the official evaluators cut them."""
        if self._truncator is None:
            from evaluator.scoring.truncate import load_truncator

            self._truncator = load_truncator()
        return self._truncator.truncate([str(r) if r is not None else "" for r in replies])

    def process_results(self, doc: dict, results: list) -> dict:
        """The document's turns, their answer records and traces, under every metric, for the
        aggregation to score (TURNS_KEY's is what `local_evaluation.py from-lmms-eval` reads back
        from the logged samples)."""
        conv = self.conversation(doc)
        # No result at all is no reply (its turns answer I don't know, with the reason); a result
        # of None is the model's empty answer.
        replies = [] if not results else results[0]
        if results and (not self.settings.multi_turn or isinstance(replies, str)):
            replies = [replies]
        raw = [str(r) if r is not None else "" for r in list(replies or [])[:len(conv.turns)]]
        calls = None
        if self.settings.prompt == "agentic" and raw:
            raw[0], calls = agentic_answer(raw[0])
        if len(raw) < len(conv.turns):
            log.warning("session %s: %d of %d turns without a reply", conv.session_id, len(conv.turns) - len(raw),
                        len(conv.turns))
        cut = self.cut(raw)
        records, traces = [], []
        for t, turn in enumerate(conv.turns):
            answered = t < len(raw)
            records.append(answer_record(conv, t, cut[t] if answered else IDK_ANSWER, raw[t] if answered else "",
                                         None if answered else NO_REPLY))
            trace = self.trace(conv, t)
            if calls is not None:
                trace = agentic_trace(trace, calls)
            if trace is not None:
                traces.append({"interaction_id": turn.interaction_id, "session_id": conv.session_id, "turn_idx": t,
                               **trace})
        return dict.fromkeys(self.settings.metrics, {"records": records, "traces": traces})

    def trace(self, conv: Conversation, turn_idx: int) -> dict | None:
        """What the task knows of a turn's prompt, as a trace the report shows (its funnel first)."""
        if self.settings.prompt == "rag":
            return self._contexts.get(conv.turns[turn_idx].interaction_id, (None, None))[1]
        loaded = self._images.get(conv.session_id)
        return None if loaded is None else {"funnel": {"image loaded": loaded}}

    def scored(self, items: list[dict]):
        """The documents' turns scored as local_evaluation.py scores a run (once per set of turns:
        every metric's aggregation reads the same scored run)."""
        records = [r for turns in items for r in turns["records"]]
        traces = [t for turns in items for t in turns["traces"]]
        digest = hashlib.sha256(json.dumps(records, sort_keys=True, default=str).encode()).hexdigest()
        with self._lock:
            if digest not in self._scored:
                d = self.described()
                run_config = imported_run_config(
                    dataset=d["dataset"], dataset_type=d["dataset_type"], split=d["split"], revision=d["revision"],
                    rules=rule_set(self.settings.scoring.rules).name, agent="a model run by lmms-eval",
                    turns=len(records), conversations=len({r["session_id"] for r in records}), task=self.settings.task,
                    model="named in lmms-eval's results file")
                self._scored[digest] = self._score(records, traces, run_config)
            return self._scored[digest]

    def _score(self, records, traces, run_config):
        kept = self.settings.output_dir
        if kept:
            return score_turns(Path(kept) / self.settings.task, records, traces, run_config, self.settings.scoring,
                               self.console)
        with tempfile.TemporaryDirectory(prefix="crag_mm_scored_") as folder:
            return score_turns(Path(folder) / "run", records, traces, run_config, self.settings.scoring, self.console)

    def aggregate(self, metric: str, items: list[dict]):
        """lmms-eval's aggregation of `metric` over the documents' records."""
        path, _ = self.settings.metrics[metric]
        return figure(self.scored(items), path)


def agentic_answer(reply: str) -> tuple[str, list[dict]]:
    """The answer and the tool calls of crag_mm_agentic's final reply: the task's JSON, or
    lmms-eval's fallback once the rounds ran out (no answer: "I don't know", scored as a miss)."""
    try:
        payload = json.loads(reply)
    except ValueError:
        return reply, []
    if not isinstance(payload, dict):
        return reply, []
    if "answer" in payload:
        return str(payload.get("answer") or ""), list(payload.get("calls") or [])
    state = payload.get("state") if isinstance(payload.get("state"), dict) else {}
    return IDK_ANSWER, list(state.get("calls") or [])  # max_agentic_steps_reached: no answer, a miss


def agentic_trace(trace: dict | None, calls: list[dict]) -> dict:
    """A turn's trace with its tool calls: what the report's funnel and diagnostics read (image
    hits as `retrieved`, in call order)."""
    trace = dict(trace or {})
    image_calls = [c for c in calls if c.get("tool") == "image_search" and not c.get("error")]
    trace["tool_calls"] = calls
    trace["retrieved"] = [{"source": "image", "entities": names} for c in image_calls for names in c["entities"]] + \
        [{"source": "web"} for c in calls if c.get("tool") == "web_search" and not c.get("error")
         for _ in range(int(c.get("hits") or 0))]
    trace["image_hits"] = sum(int(c.get("hits") or 0) for c in image_calls)
    trace["branch"] = "called tools" if calls else "answered without a tool"
    trace["funnel"] = {**(trace.get("funnel") or {}), "called a tool": bool(calls),
                       "a search found something": any(c.get("hits") for c in calls)}
    return trace


def default_pipeline(profile: str):
    """The search pipeline of `profile` (evaluator/search/pipeline.py, as local_evaluation.py
    builds it) and the chunking settings of its rag_baseline configuration."""
    from agents.config.loading import load_config
    from evaluator.harness.resolved import resolve_run
    from evaluator.search.pipeline import build_search_pipeline

    run = resolve_run(profile)
    return build_search_pipeline(run.search, web=True), load_config(profile, preset="rag_baseline")

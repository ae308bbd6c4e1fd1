"""One CRAG-MM task in one lmms-eval run: what crag_mm_single, crag_mm_single_rag,
crag_mm_agentic or crag_mm_multi does with its documents, over this package's parts.

`CragMMTask` holds a task's run: its settings (settings.py), the split it read (documents.py),
its search pipeline, built at the first search (search.py), the search results each RAG prompt
showed and the photos it could load, and its scored runs (metrics.py). Its methods are lmms-eval's
hooks for its documents: the photo, the prompt of each round (prompts.py; crag_mm_agentic's tool
rounds in tools.py), the target, each document's results (results.py) and each metric's figure.
A task is registered by its name (`register`), and its documents carry that name in the column
TASK_COLUMN, so that the functions a task YAML names (hooks.py) find it. Nothing here imports
lmms-eval: cruise_lmms_eval/task.py makes the task from lmms-eval's config.
"""
from __future__ import annotations

import dataclasses
import threading

from rich.console import Console

from evaluator.harness.dataset import Conversation

from .documents import LoadedSplit, conversation, load_documents, photo, session_key
from .metrics import Scorer, figure
from .prompts import agentic_prompt, history, question_prompt
from .results import answers_for_history, document_turns, turn_replies
from .search import default_pipeline, rag_context
from .settings import TaskSettings
from .tools import agentic_answer, agentic_round, agentic_trace, run_tool

TASK_COLUMN = "crag_mm_task"  # the column that names a document's task
TASKS: dict[str, CragMMTask] = {}  # task name -> the task of this run


def register(task: CragMMTask) -> CragMMTask:
    TASKS[task.settings.task] = task
    return task


def task_of(doc: dict) -> CragMMTask:
    """The task a document belongs to (a document of no registered CRAG-MM task: one line)."""
    name = doc.get(TASK_COLUMN)
    if name not in TASKS:
        raise ValueError(f"a document of task {name!r}, which no CRAG-MM task of this run registered "
                         f"(registered: {sorted(TASKS)}): name cruise_lmms_eval.task.CragMMTaskClass as the YAML's class")
    return TASKS[name]


class CragMMTask:
    """One CRAG-MM task in one lmms-eval run (module notes). `pipeline_factory(profile)` builds the
    search pipeline a RAG prompt or a tool reads (default: the evaluator's, for the profile's
    search)."""

    def __init__(self, settings: TaskSettings, *, pipeline_factory=None, console: Console | None = None):
        self.settings = settings
        self.loaded: LoadedSplit | None = None  # pragma: no mutate: "" reads as None (falsy) wherever it is read
        self._pipeline_factory = pipeline_factory or default_pipeline
        self._search = None  # (pipeline, chunking config), built at the first search
        self._contexts: dict[str, tuple[str, dict]] = {}  # interaction_id -> (context, trace)
        self._images: dict[str, bool] = {}  # session_id -> whether its image could be loaded
        self._media, self._positions = None, {}  # the split with its images; session_id -> its row
        self._truncator = None
        self._lock = threading.Lock()  # lmms-eval scores documents on several threads
        self.console = console or Console(quiet=True)
        self.scorer = Scorer(settings.task, settings.scoring, settings.output_dir, self.console)

    def __deepcopy__(self, memo):
        # lmms-eval deep-copies a task's config, which holds this task's methods: one task, one
        # run's state (its search pipeline, what it searched, what it scored) is not copied
        return self

    # ------------------------------------------------------------------ the documents
    def load(self):
        """The split as a datasets.Dataset (one document per row: a conversation), each document
        naming this task (process_docs)."""
        ds, self.loaded = load_documents(self.settings)
        return self.process_docs(ds)

    def process_docs(self, ds):
        """The split as lmms-eval loaded it, each document given this task's name; its images are
        kept, for a RAG prompt's or a tool's search on a document handed over without them."""
        if TASK_COLUMN in ds.column_names:
            ds = ds.remove_columns([TASK_COLUMN])
        ds = ds.add_column(TASK_COLUMN, [self.settings.task] * len(ds))
        self._media = ds
        meta = ds.remove_columns([c for c in ("image",) if c in ds.column_names])
        key = session_key(meta.column_names)
        self._positions = {str(value): i for i, value in enumerate(meta[key])} if key else {}
        return ds

    def conversation(self, doc: dict) -> Conversation:
        return conversation(doc, self.loaded)

    def described(self) -> dict:
        """What this task read and how it scores: the lmms-eval results file keeps it (the task
        config's metadata), and `local_evaluation.py from-lmms-eval` reads it back."""
        s = self.settings
        return {"dataset": self.loaded.dataset if self.loaded else s.dataset, "split": self.loaded.split
                if self.loaded else s.split, "revision": s.revision, "dataset_type": s.dataset_type,
                "prompt": s.prompt, "profile": s.profile, **dataclasses.asdict(s.scoring)}

    # ------------------------------------------------------------------ what the model is given
    def doc_to_visual(self, doc: dict, lmms_eval_specific_kwargs=None) -> list:
        """The conversation's image as the official iterator hands it over; none where it cannot
        be loaded (said in the log)."""
        conv = self.conversation(doc)
        raw = doc.get("image")
        if raw is None and conv.session_id in self._positions:  # a document without its media
            raw = self._media[self._positions[conv.session_id]].get("image")
        images = photo(conv, raw)
        self._images[conv.session_id] = bool(images)
        return images

    def doc_to_target(self, doc: dict) -> str:
        return "\n".join(turn.ground_truth for turn in self.conversation(doc).turns)

    def doc_to_text(self, doc: dict, lmms_eval_specific_kwargs=None, previous_output=None, round_idx=None,
                    previous_round_info=None):
        """The first turn's prompt; for a conversation, lmms-eval's later rounds (round_idx >= 1)
        get (visuals, the turn's prompt with the model's earlier answers cut to the judged length
        as history, ended?, previous_output, previous_round_info); crag_mm_agentic's, the next
        tool round (tools.py)."""
        conv = self.conversation(doc)
        if not round_idx:
            return self.turn_prompt(conv, 0, doc, [])
        if self.settings.prompt == "agentic":
            return agentic_round(self.turn_prompt(conv, 0, doc, []), list(previous_output or []), previous_round_info,
                                 lambda text: self.run_tool(doc, text), self.settings.max_tool_calls)
        if round_idx >= len(conv.turns):
            return None, None, True, previous_output, previous_round_info
        earlier = history(conv, round_idx, self.cut(answers_for_history(list(previous_output or [])[:round_idx])))
        return self.doc_to_visual(doc), self.turn_prompt(conv, round_idx, doc, earlier), False, previous_output, \
            previous_round_info

    def turn_prompt(self, conv: Conversation, turn_idx: int, doc: dict, earlier: list[dict]) -> str:
        context = self.context(conv, doc)[0] if self.settings.prompt == "rag" else ""
        text = question_prompt(conv, turn_idx, earlier, context)
        return agentic_prompt(text) if self.settings.prompt == "agentic" else text

    # ------------------------------------------------------------------ the search pipeline
    def search(self):
        """The search pipeline and its chunking settings, built once."""
        with self._lock:
            if self._search is None:
                self._search = self._pipeline_factory(self.settings.profile)
            return self._search

    def run_tool(self, doc: dict, text: str) -> tuple[dict, str]:
        s = self.settings
        return run_tool(text, self.search, lambda: self.doc_to_visual(doc), s.search_hits, s.context_chars)

    def context(self, conv: Conversation, doc: dict) -> tuple[str, dict]:
        """The search results a RAG prompt shows for the conversation's first turn, and the trace
        of what was found; searched once per turn."""
        iid = conv.turns[0].interaction_id
        pipeline, cfg = self.search()
        with self._lock:
            if iid not in self._contexts:
                self._contexts[iid] = rag_context(pipeline, cfg, self.doc_to_visual(doc), conv.turns[0].query,
                                                  self.settings.search_hits, self.settings.context_chars)
            return self._contexts[iid]

    # ------------------------------------------------------------------ results and scores
    def cut(self, replies: list[str]) -> list[str]:
        """Replies cut to the judged length (75 tokens), as the official evaluators cut them."""
        if self._truncator is None:
            from evaluator.scoring.truncate import load_truncator

            self._truncator = load_truncator()
        return self._truncator.truncate([str(r) if r is not None else "" for r in replies])

    def process_results(self, doc: dict, results: list) -> dict:
        """The document's turns (results.py) under every metric, for the aggregation to score
        (TURNS_KEY's is what `local_evaluation.py from-lmms-eval` reads back from the logged
        samples); each names this task, which the aggregation (hooks.py) finds by it."""
        conv = self.conversation(doc)
        raw = turn_replies(results, self.settings.multi_turn, len(conv.turns))
        ending = None
        if self.settings.prompt == "agentic" and raw and isinstance(raw[0], str):
            raw[0], ending = agentic_answer(raw[0])
        traces = [self.trace(conv, t) for t in range(len(conv.turns))]
        if ending is not None:
            traces = [agentic_trace(trace, ending) for trace in traces]
        turns = {"task": self.settings.task, **document_turns(conv, raw, self.cut(raw), traces)}
        return dict.fromkeys(self.settings.metrics, turns)

    def trace(self, conv: Conversation, turn_idx: int) -> dict | None:
        """What the task knows of a turn's prompt, as a trace the report shows (its funnel first)."""
        if self.settings.prompt == "rag":
            return self._contexts.get(conv.turns[turn_idx].interaction_id, (None, None))[1]
        loaded = self._images.get(conv.session_id)
        return None if loaded is None else {"funnel": {"image loaded": loaded}}

    def scored(self, items: list[dict]):
        """The documents' turns scored as local_evaluation.py scores a run (metrics.py)."""
        return self.scorer.scored(items, self.described())

    def aggregate(self, metric: str, items: list[dict]):
        """lmms-eval's aggregation of `metric` over the documents' turns."""
        path, _ = self.settings.metrics[metric]
        return figure(self.scored(items), path)

"""The official judge's own words, read at run time from a checkout the user has
(`--judge-prompt-from DIR`), and where a run's judge prompt came from.

facebookresearch/CRAG-MM is licensed CC BY-NC 4.0, so this package holds none of its text. A user
who has cloned it points us at the clone; we then let its own code build each judge request:
- `evaluation/evaluation_prompt.py` is imported by path (it imports nothing), which gives
  `CRAGMultiModalPrompts` (the instructions and worked examples);
- `evaluation/llm_judge.py` is not imported: it imports the `evaluation` package, whose
  `__init__` pulls the whole evaluator (pandas, datasets, the search pipeline), plus openai and
  rich. Its class `LLMJudge` alone is compiled from the file and run against a recording client:
  `evaluate(query, ground_truth, agent_response)` assembles the messages as it always does and
  hands them, with its sampling parameters, to `client.chat.completions.create`, which records
  them and answers nothing. Its `parse_response` reads the judge's reply;
- `evaluation/config.py` gives the names the class takes from it (`MAX_EVAL_TOKENS`,
  `MAX_API_RETRIES`) and `DEFAULT_EVAL_MODEL`, read as literal assignments (the file also reads an
  environment variable for a batch size we do not use).
So the messages sent are, byte for byte, what that checkout's code builds for the same turn.

The 2025 starter kit (`--rules kddcup2025`) is read the same way from a checkout of the kit:
its judge is written inside its `local_evaluation.py` (`CRAGEvaluator.get_system_message`, the
messages `evaluate_response` assembles, the structured-output request of `attempt_api_call` and
the verdict model `CRAGTurnEvaluationResult`); that module loads the agent, datasets and the
search pipeline at import, so those pieces alone are compiled from the file
(`load_starter_kit_judge`).

A missing file, class, method or name stops with one line naming what was not found
(`JudgePromptError`). Each prompt has an origin record (`Judge.prompt_origin`): official (the folder,
its git commit where it is a clone, the SHA-256 of the text) or this package's wording; it goes
into run_config.json, run_summary.json, the report and the resume check.
"""
from __future__ import annotations

import ast
import builtins
import copy
import hashlib
import importlib.util
import json
import threading
import time
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

OURS = "this package's wording"
JUDGE_MODULE = "evaluation/llm_judge.py"
PROMPT_MODULE = "evaluation/evaluation_prompt.py"
CONFIG_MODULE = "evaluation/config.py"
JUDGE_CLASS = "LLMJudge"
JUDGE_METHODS = ("evaluate", "parse_response")
# The placeholder turn whose messages stand for the prompt's text in its SHA-256: the text is
# everything a request holds besides the turn itself.
PLACEHOLDER = ("{question}", "{ground_truth}", "{prediction}")


class JudgePromptError(ValueError):
    """One line: what in the checkout was not found or not understood."""


@dataclass(frozen=True)
class OfficialJudge:
    """The judge of a CRAG-MM checkout: its messages, sampling and reading of a reply."""

    folder: Path
    commit: str | None
    default_model: str | None
    sampling: dict  # the keyword arguments of its request besides model and messages
    build: Callable[[str, str, str], tuple[list[dict], dict]]  # -> (messages, request keywords)
    read_reply: Callable[[str], bool | None]
    # the starter kit's: the pydantic model its structured-output request asks for (None: free text)
    response_format: type | None = None

    def messages(self, question: str, ground_truth: str, prediction: str) -> list[dict]:
        return self.build(question, ground_truth, prediction)[0]

    @property
    def sha256(self) -> str:
        schema = self.response_format.model_json_schema() if self.response_format else None
        return prompt_sha256(self.messages(*PLACEHOLDER), {**self.sampling, **({"schema": schema} if schema else {})})

    def origin(self) -> dict:
        return {"official": True, "path": str(self.folder), "commit": self.commit, "sha256": self.sha256}


def prompt_sha256(messages: list[dict], sampling: dict | None = None) -> str:
    blob = json.dumps({"messages": messages, "sampling": sampling or {}}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def ours_origin(messages: list[dict], sampling: dict | None = None) -> dict:
    return {"official": False, "path": None, "commit": None, "sha256": prompt_sha256(messages, sampling)}


def origin_text(origin: dict | None) -> str:
    """'official (path, commit c, sha256 s)' or "this package's wording" (also for a run that
    recorded no origin: before this record existed every prompt was ours)."""
    if not origin or not origin.get("official"):
        return OURS
    parts = [str(origin.get("path"))]
    if origin.get("commit"):
        parts.append(f"git commit {origin['commit'][:12]}")
    parts.append(f"sha256 {str(origin.get('sha256'))[:12]}")
    return f"official ({', '.join(parts)})"


def origin_identity(origin: dict | None) -> str:
    """What makes two prompts the same: the text's hash for an official one (a moved clone is the
    same prompt), else ours."""
    if not origin or not origin.get("official"):
        return OURS
    return f"official sha256 {origin.get('sha256')}"


def prompt_change(earlier: dict | None, now: dict | None) -> str | None:
    """One line when a run judged with `earlier` would now be judged with another prompt."""
    if origin_identity(earlier) == origin_identity(now):
        return None
    return f"judge prompt: {origin_text(earlier)} -> {origin_text(now)}"


def judged_with(summary: dict) -> tuple[bool, dict | None]:
    """(whether an LLM judge gave the verdicts a run_summary.json scores, its prompt's origin); a
    summary written before the origin was recorded had our wording wherever an LLM judged."""
    if "judge_prompt_origin" in summary:
        return summary["judge_prompt_origin"] is not None, summary["judge_prompt_origin"]
    return " @ " in str(summary.get("judge", "")), None


def saved_prompt_folder(flag: str | None, origin: dict | None, same_rules: bool) -> str | None:
    """The checkout a rejudge or merge reads: --judge-prompt-from if given, else the one the run
    was judged with (`origin`), if any and if the rule set is still the run's."""
    if flag:
        return flag
    if origin and origin.get("official") and same_rules:
        return origin.get("path")
    return None


def load_judge_prompt(folder: str | None, rules) -> OfficialJudge | None:
    """The checkout's judge for `rules` (crag-mm: a CRAG-MM checkout; kddcup2025: the 2025 starter
    kit), or None (this package's wording) without a folder."""
    if not folder:
        return None
    if rules.judge_protocol == "result-line":
        return load_official_judge(folder)
    return load_starter_kit_judge(folder)


# --------------------------------------------------------------------------- reading a checkout
def load_official_judge(folder: str | Path) -> OfficialJudge:
    root = Path(folder).expanduser().resolve()
    if not root.is_dir():
        raise JudgePromptError(f"--judge-prompt-from {folder}: not a folder (expected a checkout of "
                               "facebookresearch/CRAG-MM)")
    for relative in (JUDGE_MODULE, PROMPT_MODULE, CONFIG_MODULE):
        if not (root / relative).is_file():
            raise JudgePromptError(f"--judge-prompt-from {folder}: {relative} not found (expected a checkout of "
                                   "facebookresearch/CRAG-MM)")
    judge_tree = _parse(root, JUDGE_MODULE)
    judge_class = next((node for node in judge_tree.body
                        if isinstance(node, ast.ClassDef) and node.name == JUDGE_CLASS), None)
    if judge_class is None:
        raise JudgePromptError(f"{root / JUDGE_MODULE}: class {JUDGE_CLASS} not found")
    methods = {node.name for node in judge_class.body if isinstance(node, ast.FunctionDef)}
    for method in JUDGE_METHODS:
        if method not in methods:
            raise JudgePromptError(f"{root / JUDGE_MODULE}: {JUDGE_CLASS}.{method} not found")
    config = _literal_assignments(_parse(root, CONFIG_MODULE))
    prompt_module = _import_by_path(root / PROMPT_MODULE)
    sources = {"evaluation.config": (CONFIG_MODULE, config),
               "evaluation.evaluation_prompt": (PROMPT_MODULE, vars(prompt_module))}
    namespace = {"__builtins__": builtins, "__name__": "official_llm_judge", "Tuple": typing.Tuple,
                 "time": time, "OpenAI": RecordingClient, "Console": _Quiet, "console": _Quiet()}
    for node in judge_tree.body:  # the names the class takes from the evaluation package
        if isinstance(node, ast.ImportFrom) and node.module in sources:
            relative, values = sources[node.module]
            for alias in node.names:
                if alias.name not in values:
                    raise JudgePromptError(f"{root / relative}: {alias.name} not found (imported by {JUDGE_MODULE})")
                namespace[alias.asname or alias.name] = values[alias.name]
    try:
        exec(compile(ast.Module(body=[judge_class], type_ignores=[]), str(root / JUDGE_MODULE), "exec"), namespace)
    except Exception as exc:  # noqa: BLE001 - a name the class needs that this reader does not supply
        raise JudgePromptError(f"{root / JUDGE_MODULE}: class {JUDGE_CLASS} cannot be defined here "
                               f"({type(exc).__name__}: {exc})") from None
    judge_type = namespace[JUDGE_CLASS]

    def build(question: str, ground_truth: str, prediction: str) -> tuple[list[dict], dict]:
        judge = _new_judge(judge_type, root)
        try:
            judge.evaluate(question, ground_truth, prediction)
        except Exception as exc:  # noqa: BLE001
            raise JudgePromptError(f"{root / JUDGE_MODULE}: {JUDGE_CLASS}.evaluate failed "
                                   f"({type(exc).__name__}: {exc})") from None
        request = judge.client.request
        if request is None or "messages" not in request:
            raise JudgePromptError(f"{root / JUDGE_MODULE}: {JUDGE_CLASS}.evaluate sent no "
                                   "client.chat.completions.create(messages=...) request")
        return request["messages"], {k: v for k, v in request.items() if k not in ("model", "messages")}

    def read_reply(text: str) -> bool | None:
        verdict = _new_judge(judge_type, root).parse_response(text or "")
        verdict = verdict[0] if isinstance(verdict, tuple) else verdict
        return verdict if isinstance(verdict, bool) else None

    _, sampling = build(*PLACEHOLDER)  # a checkout whose class cannot build a request stops here
    default_model = config.get("DEFAULT_EVAL_MODEL")
    return OfficialJudge(root, git_commit(root), default_model if isinstance(default_model, str) else None,
                         sampling, build, read_reply)


def _new_judge(judge_type, root: Path):
    try:
        return judge_type(api_key="", model_name="")
    except Exception as exc:  # noqa: BLE001
        raise JudgePromptError(f"{root / JUDGE_MODULE}: {JUDGE_CLASS}(api_key, model_name) failed "
                               f"({type(exc).__name__}: {exc})") from None


def _parse(root: Path, relative: str) -> ast.Module:
    try:
        return ast.parse((root / relative).read_text(encoding="utf-8"), filename=str(root / relative))
    except (OSError, SyntaxError, UnicodeDecodeError) as exc:
        raise JudgePromptError(f"{root / relative}: cannot be read ({type(exc).__name__}: {exc})") from None


def _literal_assignments(tree: ast.Module) -> dict:
    """NAME = literal at the top of a module (other assignments are skipped)."""
    values = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                values[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                continue
    return values


def _import_by_path(path: Path):
    spec = importlib.util.spec_from_file_location(f"official_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001
        raise JudgePromptError(f"{path}: cannot be imported ({type(exc).__name__}: {exc})") from None
    return module


def git_commit(folder: Path) -> str | None:
    """The commit a clone's HEAD points to, read from its .git (no git program needed); None when
    the folder is not itself the top of a clone."""
    git = folder / ".git"
    try:
        if git.is_file():  # a worktree or submodule: "gitdir: PATH"
            git = (folder / git.read_text().split(":", 1)[1].strip()).resolve()
        head = (git / "HEAD").read_text().strip()
        if not head.startswith("ref:"):
            return head or None
        ref = head.split(":", 1)[1].strip()
        common = git / "commondir"
        places = [git] + ([(git / common.read_text().strip()).resolve()] if common.is_file() else [])
        for place in places:
            if (place / ref).is_file():
                return (place / ref).read_text().strip()
            if (place / "packed-refs").is_file():
                for line in (place / "packed-refs").read_text().splitlines():
                    if line.endswith(f" {ref}"):
                        return line.split()[0]
    except (OSError, IndexError):
        return None
    return None


# --------------------------------------------------------------------------- the 2025 starter kit
KIT_MODULE = "local_evaluation.py"
KIT_CLASS = "CRAGEvaluator"
KIT_METHODS = ("get_system_message", "evaluate_response", "attempt_api_call")
KIT_VERDICT = "CRAGTurnEvaluationResult"


def load_starter_kit_judge(folder: str | Path) -> OfficialJudge:
    """The judge of the 2025 starter kit (kddcup2025): `CRAGEvaluator.get_system_message`, the
    messages its `evaluate_response` assembles and the structured-output request its
    `attempt_api_call` makes, run against a recording client. The kit's module is not imported
    (it loads the agent, datasets and the search pipeline at import): those three methods and the
    verdict model `CRAGTurnEvaluationResult` are compiled from the file on their own."""
    root = Path(folder).expanduser().resolve()
    if not (root / KIT_MODULE).is_file():
        raise JudgePromptError(f"--judge-prompt-from {folder}: {KIT_MODULE} not found (expected a checkout of "
                               "the 2025 CRAG-MM starter kit, for --rules kddcup2025)")
    tree = _parse(root, KIT_MODULE)
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
    for name in (KIT_CLASS, KIT_VERDICT):
        if name not in classes:
            raise JudgePromptError(f"{root / KIT_MODULE}: class {name} not found")
    methods = {node.name: node for node in classes[KIT_CLASS].body if isinstance(node, ast.FunctionDef)}
    for method in KIT_METHODS:
        if method not in methods:
            raise JudgePromptError(f"{root / KIT_MODULE}: {KIT_CLASS}.{method} not found")
    constants = _literal_assignments(tree)
    if "MAX_API_RETRIES" not in constants:
        raise JudgePromptError(f"{root / KIT_MODULE}: MAX_API_RETRIES not found")
    from pydantic import BaseModel

    namespace = {"__builtins__": builtins, "__name__": "official_local_evaluation", "BaseModel": BaseModel,
                 "OpenAI": RecordingClient, "Console": _Quiet, "console": _Quiet(), "time": time,
                 "MAX_API_RETRIES": constants["MAX_API_RETRIES"]}
    judge_class = copy.copy(classes[KIT_CLASS])  # the class with its judge's methods only
    judge_class.bases, judge_class.keywords, judge_class.decorator_list = [], [], []
    judge_class.body = [methods[m] for m in KIT_METHODS]
    module = ast.fix_missing_locations(ast.Module(body=[classes[KIT_VERDICT], judge_class], type_ignores=[]))
    try:
        exec(compile(module, str(root / KIT_MODULE), "exec"), namespace)
    except Exception as exc:  # noqa: BLE001 - a name the methods need that this reader does not supply
        raise JudgePromptError(f"{root / KIT_MODULE}: {KIT_CLASS}'s judge cannot be defined here "
                               f"({type(exc).__name__}: {exc})") from None
    verdict_model = namespace[KIT_VERDICT]
    if getattr(verdict_model, "model_fields", {}).keys() != {"accuracy"}:
        raise JudgePromptError(f"{root / KIT_MODULE}: {KIT_VERDICT} no longer holds one field 'accuracy'")
    evaluator_type = namespace[KIT_CLASS]

    def build(question: str, ground_truth: str, prediction: str) -> tuple[list[dict], dict]:
        evaluator = evaluator_type.__new__(evaluator_type)  # its __init__ loads a tokenizer: not needed
        evaluator.eval_model_name = "judge"
        client = RecordingClient()
        asked = evaluator.attempt_api_call  # its own request, sent to the recording client

        def attempt_api_call(_client, model_name, messages, *args, **kwargs):
            return asked(client, model_name, messages, *args, **kwargs)

        evaluator.attempt_api_call = attempt_api_call
        try:
            evaluator.evaluate_response({"query": question, "ground_truth": ground_truth,
                                         "agent_response": prediction})
        except Exception as exc:  # noqa: BLE001
            raise JudgePromptError(f"{root / KIT_MODULE}: {KIT_CLASS}.evaluate_response failed "
                                   f"({type(exc).__name__}: {exc})") from None
        request = client.request
        if request is None or "messages" not in request:
            raise JudgePromptError(f"{root / KIT_MODULE}: {KIT_CLASS}.evaluate_response sent no request for a "
                                   "turn that needs the judge")
        return request["messages"], {k: v for k, v in request.items()
                                     if k not in ("model", "messages", "response_format")}

    _, sampling = build(*PLACEHOLDER)
    default_model = constants.get("DEFAULT_EVAL_MODEL")
    return OfficialJudge(root, git_commit(root), default_model if isinstance(default_model, str) else None,
                         sampling, build, read_reply=lambda text: None, response_format=verdict_model)


class RecordingClient:
    """Stands where the official code builds `OpenAI(api_key=...)`: `chat.completions.create`
    (and the kit's `beta.chat.completions.parse`) records its keyword arguments and answers an
    empty reply, so nothing is sent."""

    def __init__(self, *args, **kwargs):
        self.request: dict | None = None
        self.chat = self.completions = self.beta = self
        self._lock = threading.Lock()

    def create(self, **kwargs):
        with self._lock:
            if self.request is None:
                self.request = kwargs
        message = type("Message", (), {"content": "", "parsed": None})()
        choice = type("Choice", (), {"message": message})()
        return type("Completion", (), {"choices": [choice]})()

    parse = create


class _Quiet:
    """Stands for rich's Console: the official code's retry messages are not printed here."""

    def __init__(self, *args, **kwargs):
        pass

    def print(self, *args, **kwargs):
        pass

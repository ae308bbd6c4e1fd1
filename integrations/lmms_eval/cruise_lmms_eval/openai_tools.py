"""Any OpenAI-compatible chat-completions server as an lmms-eval model that calls tools natively:
`--model openai_tools` (registered by manifest.py beside cruise_agent).

    --model_args model=NAME,base_url=URL/v1[,api_key_env=OPENAI_API_KEY,timeout=60,max_retries=2]

On crag_mm_agentic it sends the task's two tools (image_search, web_search: the schemas of
tools.py) as the request's `tools`, and maps the reply's native `tool_calls` to and from the
task's text protocol (native_tools.py, through openai_chat.py), so that lmms-eval's own agentic
loop (generate_until_agentic) runs the task: each result comes back as a `role: tool` message
with its `tool_call_id`, the photo is sent once, several calls in one reply run in order, and the
task records every call in the samples as it does for a model that writes its calls as text. On
the other CRAG-MM tasks it asks the prompt with the photo, without tools (crag_mm_multi a turn at
a time, each prompt holding the earlier turns). A failed request and a reply without content
reach the task as faults (openai_chat.py).

The key is read from the environment variable that `api_key_env` names: the key itself in
model_args would be written into lmms-eval's results file; a server of one's own (base_url)
needs none. lmms-eval's --batch_size is not used: requests go one at a time.
"""
from __future__ import annotations

import os

from lmms_eval.api.model import lmms

from cruise_lmms_eval.model_args import split_outside
from cruise_lmms_eval.openai_chat import ToolCallingClient

KEYS = ("model", "base_url", "api_key_env", "timeout", "max_retries")
LMMS_EVAL_EXTRAS = ("batch_size", "max_batch_size", "device")


class OpenAIToolsModel(lmms):
    is_simple = True

    def __init__(self, model: str = "", base_url: str | None = None, api_key_env: str = "OPENAI_API_KEY",
                 timeout: float = 60.0, max_retries: int = 2, **lmms_eval_extras):
        super().__init__()
        unknown = sorted(set(lmms_eval_extras) - set(LMMS_EVAL_EXTRAS))
        if unknown:
            raise TypeError(f"openai_tools: unknown model_args {unknown}; the keys: {list(KEYS)}")
        if not model:
            raise ValueError("openai_tools needs model=NAME (the name the server knows the model by)")
        key = os.environ.get(api_key_env)
        if not key and not base_url:
            raise ValueError(f"openai_tools: ${api_key_env} is empty, and no base_url names a server of your own")
        # a server of one's own takes any key; the SDK wants one
        self.client = ToolCallingClient(model, base_url or None, key or "none", float(timeout), int(max_retries))

    @classmethod
    def create_from_arg_string(cls, arg_string: str, additional_config: dict | None = None):
        """model_args split as lmms-eval splits them (outside quotes and brackets), each key once."""
        values = {}
        for part in split_outside(arg_string or "", ","):
            key, sep, value = part.partition("=")
            if not sep or key.strip() not in KEYS:
                raise ValueError(f"openai_tools: model_args part {part!r}: KEY=VALUE with KEY one of {list(KEYS)}")
            values[key.strip()] = value.strip()
        extras = {k: v for k, v in (additional_config or {}).items() if v is not None}
        return cls(**values, **extras)

    # ------------------------------------------------------------------ lmms-eval's requests
    def generate_until(self, requests) -> list[str]:
        replies = []
        for request in requests:
            context, gen_kwargs, doc_to_visual, doc_id, task, split = request.args
            visuals = doc_to_visual(self.task_dict[task][split][doc_id]) or []
            replies.append(self.client.answer(context, gen_kwargs or {}, visuals, (task, split, doc_id)))
        return replies

    def generate_until_multi_round(self, requests) -> list[list[str]]:
        """Each conversation a turn at a time: the task's prompt for each round holds the earlier
        turns and the model's answers, so each round is asked alone."""
        out = []
        for request in requests:
            context, gen_kwargs, doc_to_visual, doc_to_text, doc_id, task, split = request.args
            doc = self.task_dict[task][split][doc_id]
            visuals, replies = doc_to_visual(doc) or [], []
            while context is not None:
                replies.append(self.client.answer(context, gen_kwargs or {}, visuals, (task, split, doc_id)))
                shown, context, ended, _, _ = doc_to_text(doc, previous_output=replies, round_idx=len(replies))
                if ended:
                    break
                visuals = shown if shown is not None else visuals
            out.append(replies)
        return out

    def loglikelihood(self, requests):
        raise NotImplementedError("openai_tools answers questions; it gives no log-likelihoods")

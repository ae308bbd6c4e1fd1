"""The served engines against a REAL OpenAI-compatible server (testkit/transformers_serve.py):
`transformers serve` serving the cpu profile's SmolLM2 on a free loopback port. The chain through it
answers as the in-process transformers engine does; stop strings are honoured (cut here: that server
fails on `stop`); a server that hangs costs the batch's deadline, not more; a server killed in the
middle of a run costs the turns it fails, and the summary counts them. And one answer of SmolLM2
counted alike by transformers, by vLLM offline and by a vLLM server (a loopback in vLLM's shape).
The loopback servers alone: tests/test_served_engine.py.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import local_evaluation
from agents.engines.base import ChatRequest, Sampling, time_limit
from agents.engines.openai_engine import OpenAIChatEngine
from agents.profiles import REPO_ROOT
from testkit.in_process import run_main
from testkit.loopback import chat_answer
from testkit.transformers_serve import SERVED_NAME, ServedModel, evaluation_settings, serving_copy

OFFLINE = dict(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1")


def test_transformers_vllm_and_a_vllm_server_count_one_answer_alike(smol, loopback):
    """SmolLM2's greedy answer, ended by its end token: transformers' result, and the same
    tokens as vLLM reports them offline (a RequestOutput) and served (a chat completion), each
    listing the end token last, give one count and one list of log-probabilities."""
    from agents.engines.vllm_engine import to_chat_result
    from testkit.vllm_outputs import vllm_output

    sampling = Sampling(max_tokens=24, logprobs=True)
    question = ChatRequest([{"role": "user", "content": "What is the capital of France? Answer with one word."}])
    got = smol.generate([question], sampling)[0]
    assert got.output_tokens < sampling.max_tokens  # it ended on its end token, not on the limit
    assert len(got.token_logprobs) == len(got.tokens) == got.output_tokens
    eos = smol.tokenizer.eos_token_id
    logprobs = [*got.token_logprobs, -0.01]
    offline = to_chat_result(vllm_output([*range(100, 100 + got.output_tokens), eos], logprobs, [*got.tokens, ""],
                                         "stop", None), want_logprobs=True)
    finish = {"finish_reason": "stop", "stop_reason": None}
    server = loopback(chat_answer([*got.tokens, smol.tokenizer.eos_token], logprobs, "".join(got.tokens), finish))
    served = OpenAIChatEngine("smollm2", base_url=server.base_url).generate([question], sampling)[0]
    for other in (offline, served):
        assert (other.output_tokens, other.token_logprobs) == (got.output_tokens, got.token_logprobs)


@pytest.fixture(scope="module")
def smollm2_dir():
    from agents.engines.local_models import resolve_model

    return resolve_model("smollm2")


@pytest.fixture(scope="module")
def served(smollm2_dir, tmp_path_factory):
    folder = tmp_path_factory.mktemp("served")
    server = ServedModel(serving_copy(smollm2_dir, folder / "model"), folder / "server.log")
    yield server
    server.stop()


def served_engine(server, **kwargs) -> OpenAIChatEngine:
    kwargs.setdefault("stop_strings", "client")
    return OpenAIChatEngine("smollm2", base_url=server.base_url, served_name=SERVED_NAME, **kwargs)


# The mini benchmark's first N single-turn conversations (each through the whole chain: route,
# summarize, retrieve, rerank, answer, consistency, verify), through the server and in-process.
# The pair of runs of 16 turns took 222 s on a quiet 2-core machine, of 8 turns 90 s on a shared
# one; 4 turns still compare what every stage writes.
COMPARED_TURNS = 4
QUESTIONS = ["What is the capital of France?", "Name three colours.", "Who wrote Hamlet?"]


def test_a_real_server_answers_as_the_in_process_engine_and_stop_strings_are_cut(served, smol):
    requests = [ChatRequest([{"role": "system", "content": "Answer in one sentence."}, {"role": "user", "content": q}])
                for q in QUESTIONS]
    engine = served_engine(served)
    assert not engine.supports_images  # SmolLM2's config has no vision part
    greedy = Sampling(max_tokens=24, logprobs=True)
    through_server = engine.generate(requests, greedy)
    in_process = smol.generate(requests, greedy)
    assert [r.text for r in through_server] == [r.text for r in in_process]
    assert all(r.token_logprobs is None for r in through_server)  # transformers serve sends none
    # a stop string taken from the middle of each greedy answer: the text ends right before it
    full = through_server[0].text
    stop = " " + full.split()[2]
    cut = engine.generate(requests[:1], Sampling(max_tokens=24, stop=(stop,)))[0]
    assert cut.text == full[: full.index(stop)].strip() and stop not in cut.text


def test_a_server_that_hangs_costs_the_deadline_not_more(served):
    """transformers serve never answers a request that carries `stop`: with stop strings sent to the
    server, the engine gives up when the batch's time is spent."""
    engine = served_engine(served, stop_strings="server")
    request = ChatRequest([{"role": "user", "content": "Name a colour."}])
    end = time.monotonic() + 3.0
    start = time.monotonic()
    with time_limit(lambda: end - time.monotonic()), pytest.raises(Exception, match="(?i)time"):
        engine.generate([request], Sampling(max_tokens=8, stop=("\n",)))
    assert time.monotonic() - start < 10.0


def run_arguments(out: Path, settings: tuple[str, ...], turns: int) -> list[str]:
    args = ["--profile", "cpu", "--dataset-type", "single-turn", "--num-conversations", str(turns),
            "--exact-conversations", "--eval-model", "None", "--output-dir", str(out), "--no_progress"]
    # temperature 0 everywhere (transformers serve does not sample: it never sets do_sample), no
    # deadline cuts (the unbatched server is slower than the in-process engine on 2 cores), and
    # yes/no questions answered in text (the served engine reads no next-token odds)
    for setting in ("direct_temperature=0", "turn_budget_s=60", "router_mode=text", "consistency_mode=text",
                    *settings):
        args += ["--set", setting]
    return args


def evaluate(out: Path, *settings: str, turns: int) -> None:
    """A run in this process (testkit/in_process.py)."""
    proc = run_main(local_evaluation.main, run_arguments(out, settings, turns), env=OFFLINE)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


def start_evaluation(out: Path, *settings: str, turns: int, env_extra: dict) -> subprocess.Popen:
    """A run in a subprocess, for a test that acts while it runs."""
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY" and not k.startswith("CRUISE_")}
    env.update(OFFLINE, **env_extra)
    return subprocess.Popen([sys.executable, "local_evaluation.py", *run_arguments(out, settings, turns)],
                            cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def answers(out: Path) -> dict[str, str]:
    return {r["interaction_id"]: r["raw_answer"] for r in map(json.loads, (out / "answers.jsonl").read_text().splitlines())}


def test_the_chain_through_the_server_answers_as_in_process(served, tmp_path):
    evaluate(tmp_path / "served", *evaluation_settings(served), turns=COMPARED_TURNS)
    evaluate(tmp_path / "local", turns=COMPARED_TURNS)
    through_server, in_process = answers(tmp_path / "served"), answers(tmp_path / "local")
    assert len(in_process) == COMPARED_TURNS and set(through_server) == set(in_process)
    differ = {iid: (through_server[iid], in_process[iid]) for iid in in_process if through_server[iid] != in_process[iid]}
    assert not differ, differ
    summary = json.loads((tmp_path / "served" / "run_summary.json").read_text())
    assert summary["stage_fault_turns"] == 0 and summary["deadline_cut_turns"] == 0


def test_a_server_killed_mid_run_costs_only_its_turns(smollm2_dir, tmp_path):
    server = ServedModel(serving_copy(smollm2_dir, tmp_path / "model"), tmp_path / "server.log")
    out = tmp_path / "out"
    try:
        # 4 turns in 2 batches of 2; the server is killed once the first batch is answered
        run = start_evaluation(out, *evaluation_settings(server), "batch_size=2", turns=4,
                               env_extra={"CRUISE_ENGINE_API_KEY": "sk-never-written"})
        end = time.monotonic() + 900
        while time.monotonic() < end and run.poll() is None:
            if (out / "answers.jsonl").exists() and (out / "answers.jsonl").read_text().count("\n") >= 2:
                break
            time.sleep(0.5)
    finally:
        server.stop()
    log = run.communicate(timeout=900)[0]
    assert run.returncode == 0, log[-3000:]
    summary = json.loads((out / "run_summary.json").read_text())
    assert summary["complete"] and summary["turns_answered"] == 4
    assert summary["stage_fault_turns"] == 2 and summary["agent_error_turns"] == 0
    assert summary["stage_faults"] and all("Error" in e for e in summary["stage_faults"])
    traces = [json.loads(line) for line in (out / "traces.jsonl").read_text().splitlines()]
    failed = [t for t in traces if t["branch"] == "error"]
    assert len(failed) == 2 and all(t["final_answer"] == "I don't know" for t in failed)
    assert all(t["branch"] != "error" for t in traces[:2])  # the first batch, before the kill
    assert "stage-fault turns 2" in log
    for path in (p for p in out.rglob("*") if p.is_file()):  # the report's turn pages too
        assert "sk-never-written" not in path.read_text(errors="ignore"), path

"""Tokens per turn of a hosted VLM on the mini benchmark, through a stand-in provider.

    python -m benchmarks.hosted_tokens [--model gpt-5-mini] [--presets full rag_baseline] [--set FIELD=VALUE ...]

Runs `local_evaluation.py --profile cpu --model-name MODEL --set vlm_base_url=STAND_IN` in
process, on both splits of the shipped mini benchmark, once per preset, against a loopback server
that follows the provider's documented rules (testkit/hosted_standin.py; OpenAI's for the GPT-5
family). Prints, per preset and split, the requests and tokens per turn of each stage and in all,
the rejected requests, empty replies and stage faults, and the agent's own seconds per turn on
this machine (search, reranking, image encoding and the chain; the stand-in answers at once).

What the figures mean: the prompt tokens are what our requests carry (counted by the stand-in:
about one token a word or punctuation mark, images by the provider's documented formula); the
completion tokens are the stand-in's short replies; the reasoning tokens are the stand-in's
assumption per effort (REASONING_TOKENS). Only the prompt side and the request counts describe
our agent; the other two need the real API.

Fills docs/models.md, "A laptop run on the real public_test split" (tokens per turn).
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from agents.engines.hosted_providers import PROVIDERS, provider_for_model
from benchmarks.machine import machine_header
from testkit.hosted_standin import STAND_IN_KEY, StandInProvider


def dialect_of(model: str) -> str:
    """The stand-in's dialect: the provider that serves the model's name."""
    return provider_for_model(model) or "openai"


def run(model: str, preset: str, dataset_type: str, out: Path, settings: list[str]) -> dict:
    import local_evaluation

    dialect = dialect_of(model)
    with StandInProvider(dialect) as server:
        start = time.perf_counter()
        local_evaluation.main(["--profile", "cpu", "--model-name", model, "--set", f"vlm_base_url={server.url}",
                               *[arg for setting in settings for arg in ("--set", setting)],
                               "--preset", preset, "--dataset-type", dataset_type, "--eval-model", "None",
                               "--output-dir", str(out), "--no_progress", "--display-conversations", "0"])
        wall = time.perf_counter() - start
    summary = json.loads((out / "run_summary.json").read_text())
    agent_s = sum(b["wall_ms"] for b in summary["per_batch"]) / 1000.0
    return {"summary": summary, "rejected": len(server.rejected()), "empty_at_server": len(server.empty_replies()),
            "wall_s": wall, "agent_s_per_turn": agent_s / max(summary["turns_answered"], 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.hosted_tokens", description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="gpt-5-mini")
    parser.add_argument("--presets", nargs="+", default=["full", "rag_baseline"])
    parser.add_argument("--dataset-types", nargs="+", default=["single-turn", "multi-turn"])
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                        help="more agent settings, e.g. max_chunk_chars=1000 (the laptop run's chunks)")
    args = parser.parse_args(argv)
    os.environ[PROVIDERS[dialect_of(args.model)].key_variable] = STAND_IN_KEY
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        for preset in args.presets:
            for dataset_type in args.dataset_types:
                got = run(args.model, preset, dataset_type, Path(tmp) / f"{preset}-{dataset_type}", args.set)
                s = got["summary"]
                tokens, turns = s["tokens"], s["tokens"]["turns"]
                lines.append(f"## {args.model} {preset} {dataset_type} {' '.join(args.set)}: {turns} turns; rejected {got['rejected']}, "
                             f"empty replies {tokens['empty_replies']}, stage faults {s['stage_fault_turns']}, "
                             f"refused turns {s['refused_turns']}; agent {got['agent_s_per_turn']:.2f} s/turn "
                             f"on this machine")
                lines.append("| stage | requests/turn | prompt/turn | completion/turn | reasoning/turn |")
                lines.append("|---|---:|---:|---:|---:|")
                for stage, c in {**tokens["per_stage"], "all": tokens["total"]}.items():
                    if not c["requests"]:
                        continue
                    lines.append(f"| {stage} | {c['requests'] / turns:.2f} | {c['prompt'] / turns:.0f} | "
                                 f"{c['completion'] / turns:.0f} | {c['reasoning'] / turns:.0f} |")
    print("\n".join([machine_header(), *lines]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

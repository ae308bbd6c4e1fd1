"""keyword_gate's tests: its overlap stage on a batch made by hand, and the whole system through
`evaluate()` on a few conversations of the mini benchmark (the cpu profile's small models)."""
import json
from types import SimpleNamespace

from keyword_gate.stages import best_chunk

from evaluator import evaluate


def test_the_best_chunk_is_the_one_sharing_most_of_the_questions_words():
    batch = SimpleNamespace(
        turns=[SimpleNamespace(query="Which river flows through this city?"), SimpleNamespace(query="What is it?")],
        reads=[{"chunks": ["The city hall opened in 1901.", "The Danube river flows through the city."]},
               {"chunks": None}])
    assert best_chunk(batch) == [{"overlap": 4, "context": "The Danube river flows through the city."},
                                 {"overlap": 0, "context": ""}]


def test_the_system_runs_every_stage_on_the_mini_benchmark_and_answers_only_past_its_gate(tmp_path):
    # strict: any fault of any turn fails the test (a forgiving run would exit 0 with one)
    result = evaluate(profile="cpu", set={"system": "keyword_gate", "min_overlap": 3}, num_conversations=4,
                      eval_model="None", output_dir=str(tmp_path), no_progress=True, strict=True)
    assert result.exit_status == 0
    traces = [json.loads(line) for line in (tmp_path / "traces.jsonl").open()]
    for trace in traces:
        assert trace["system"] == "keyword_gate" and trace["errors"] == []
        assert list(trace["stage_ms"]) == ["perceive", "retrieve", "kwgate_overlap", "kwgate_answer"]
        if trace["overlap"] < 3:
            assert trace["final_answer"] == "I don't know"

"""The run record (evaluator/harness/run_record.py): run_config.json read and written as one typed
record. A file the previous release wrote reads back with every key it had and resumes its run;
keys this release does not know survive a rewrite; the report names a run's system from the
record. tests/fixtures/run_config_previous_release.json is the run_config.json that
`local_evaluation.py` wrote at commit eedf4b9 (the release before the record) for this module's
world, its folder, dataset and judge URL replaced by @OUTPUT_DIR@, @DATASET@ and @JUDGE_URL@."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

import local_evaluation
from evaluator.harness.run_record import RunRecord, read_run_record, write_run_record
from evaluator.report.html import run_label, system_name
from testkit.evaluation_world import UNDECIDED, generation_args, read_scores, run_in_process, write_script

PREVIOUS_RELEASE = Path(__file__).with_name("fixtures") / "run_config_previous_release.json"


def previous_release_record(world, out: Path) -> dict:
    text = PREVIOUS_RELEASE.read_text()
    for mark, value in (("@OUTPUT_DIR@", out), ("@DATASET@", world["dataset"]), ("@JUDGE_URL@", world["server"].url)):
        text = text.replace(mark, str(value))
    return json.loads(text)


def test_a_record_of_the_previous_release_reads_back_with_every_key_it_had(world, tmp_path):
    old = previous_release_record(world, tmp_path)
    record = RunRecord.from_json(old)
    assert record.extra == {}  # every key of the previous release is a field
    written = record.to_json()
    assert {k: written[k] for k in old} == old
    assert set(written) - set(old) == {"merged_from", "shards", "imported", "lmms_eval_documents"}
    assert all(written[k] is None for k in set(written) - set(old))


def test_a_run_recorded_by_the_previous_release_resumes_to_a_whole_run(world):
    out = world["root"] / "previous"
    script = write_script(world, "previous", crash_on_call=2, crash_flag=str(world["root"] / "previous.flag"))
    run_in_process(local_evaluation.main, world, generation_args(world, out), script, expect_rc=17)  # one batch saved
    answered = (out / "answers.jsonl").read_text().splitlines()
    assert 0 < len(answered) < 15
    (out / "run_config.json").write_text(json.dumps(previous_release_record(world, out), indent=2))
    proc = run_in_process(local_evaluation.main, world, generation_args(world, out, "--resume"), script,
                          expect_rc=UNDECIDED)  # s3-1's judge fails, as in the full run
    assert "another system" not in proc.stdout + proc.stderr
    summary = json.loads((out / "run_summary.json").read_text())
    assert summary["resume_forced"] is False and summary["complete"] is True and summary["turns_answered"] == 15
    assert (out / "answers.jsonl").read_text().splitlines()[:len(answered)] == answered  # kept, not asked again
    assert read_scores(out)["all"]["total"] == 15
    assert f"resumed: {len(answered)} turns reused from saved answers" in summary["notices"]
    rewritten = json.loads((out / "run_config.json").read_text())
    assert set(rewritten) == {f.name for f in dataclasses.fields(RunRecord) if f.name != "extra"}
    assert rewritten["fingerprint"] == previous_release_record(world, out)["fingerprint"]


def test_keys_this_release_does_not_know_survive_a_rewrite_and_null_reads_as_absent(tmp_path):
    (tmp_path / "run_config.json").write_text(json.dumps(
        {"rules": None, "exact_conversations": None, "forced_resumes": None, "from_the_future": [1], "shard": None,
         "extra": "a key of that name too", "dataset": "d"}))
    record = read_run_record(tmp_path)
    assert (record.rules, record.exact_conversations, record.forced_resumes) == ("kddcup2025", False, [])
    assert record.extra == {"from_the_future": [1], "extra": "a key of that name too"} and record.dataset == "d"
    write_run_record(tmp_path, dataclasses.replace(record, judge_model="m"))
    text = (tmp_path / "run_config.json").read_text()
    assert json.loads(text)["from_the_future"] == [1] and json.loads(text)["judge_model"] == "m"
    assert list(json.loads(text))[-2:] == ["from_the_future", "extra"]  # after the known keys
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run_config.json"]  # nothing left beside it


def test_a_record_is_written_into_a_folder_not_made_yet_with_paths_as_text(tmp_path):
    folder = tmp_path / "runs" / "new"
    write_run_record(folder, RunRecord(args={"output_dir": folder}))
    assert read_run_record(folder).args == {"output_dir": str(folder)}


def test_a_folder_without_a_record_reads_none_and_a_file_not_an_object_is_refused(tmp_path):
    assert read_run_record(tmp_path) is None
    (tmp_path / "run_config.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match="run_config.json holds list, not a JSON object"):
        read_run_record(tmp_path)


def test_the_report_names_the_system_the_agents_configuration_records():
    record = RunRecord(agent="agents.user_config:UserAgent", agent_description={"config": {"system": "qa_dragon"}})
    assert system_name(record, {}) == "qa_dragon"
    assert system_name(RunRecord(agent="agents.user_config:UserAgent"), {}) == "UserAgent"
    assert system_name(RunRecord(agent="a:B"), {"agent_summary": {"system": "sam_rag"}}) == "sam_rag"
    assert run_label(Path("runs/one"), dataclasses.replace(record, preset="no_cov"), {}) == "qa_dragon (no_cov; one)"

"""Each pre-flight check at its edges, as its line reads: the agent's import (a missing module, a
missing name, a connection refused), the cache (present, partly downloaded, missing, the disk just
big enough), the GPU memory plan (a family checkpoint by its size, the card seen), the dry run
(a raise, a short answer list, the stages' shares) and the whole table `python -m tools.preflight`
prints for a run of a stand-in agent, in order, with what is skipped after a failure.

Stand-ins only for what is outside the pre-flight: the agent (classes below, named by --agent),
the search pipeline (a --search factory below), the GPU torch would report and the disk's free
bytes. Figures of the memory plan come from tools/memory_plan.py, which the check reads.
"""
from __future__ import annotations

import functools
import os
import re
import shutil
import socket
from collections import namedtuple
from importlib import metadata

import pytest

from agents.base_agent import TURN_BUDGET_S
from agents.profiles import REPO_ROOT
from evaluator.harness.dataset import image_for_agent, load_split, read_conversations
from evaluator.harness.resolved import resolve_settings
from evaluator.settings import EvaluationSettings
from tools import preflight
from tools.fetch import DISK_MARGIN, GB, needed_bytes, plan, survey
from tools.memory_plan import family_fit, plan_l40s

MINI = REPO_ROOT / "data" / "crag-mm-mini"
OFFLINE_KEYS = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE")
COMMIT = "0" * 40

# what the stand-in agents were given, batch by batch (cleared by the `fresh` fixture)
SEEN: list[tuple] = []


class StandInAgent:
    """Two turns a batch; answers each at once, reporting one engine call and one trace a turn."""

    BATCH_SIZE = 2
    TRACE = {"branch": "answer"}

    def __init__(self, search_pipeline=None):
        self.search_pipeline = search_pipeline

    def get_batch_size(self):
        return self.BATCH_SIZE

    def batch_generate_response(self, queries, images, histories):
        SEEN.append((queries, images, histories, self.search_pipeline))
        self.last_batch_report = {
            "engine_calls": [{"stage": "answer", "model": "stand-in-vlm", "wall_ms": 1.0}],
            "traces": [dict(self.TRACE) for _ in queries]}
        return ["I don't know" for _ in queries]


class OversizedAgent(StandInAgent):
    BATCH_SIZE = 17


class FaultingAgent(StandInAgent):
    TRACE = {"branch": "error", "errors": ["s2_answer: KeyError: 'prompt'"]}


class UnloadableAgent(StandInAgent):
    def __init__(self, search_pipeline=None):
        raise RuntimeError("weights file cut short\nsecond line of the loader")


class SilentlyUnloadableAgent(StandInAgent):
    def __init__(self, search_pipeline=None):
        raise RuntimeError("")


class NamedStandInAgent(StandInAgent):
    """Takes --model-name (its configuration is that name) and reports that model answering."""

    @classmethod
    def configure(cls, profile, preset=None, settings=(), calibration=None, model_name=None):
        return {"model_name": model_name}

    def __init__(self, search_pipeline=None, config=None):
        super().__init__(search_pipeline)
        self.model_name = config["model_name"]
        if self.model_name and "broken" in self.model_name:
            raise OSError(f"{self.model_name}/config.json: truncated\nline two")

    def batch_generate_response(self, queries, images, histories):
        answers = super().batch_generate_response(queries, images, histories)
        self.last_batch_report["engine_calls"][0]["model"] = self.model_name
        return answers


class HubStandInAgent(NamedStandInAgent):
    """Loads its named model from the hub (so the cache must hold it)."""

    @classmethod
    def hub_models(cls, config):
        return [config["model_name"]]


class OpenedSearch:
    """What a --search factory returns: the agent is handed it."""

    def __init__(self, search, web):
        self.search, self.web = search, web


def open_search(search, web):
    return OpenedSearch(search, web)


def broken_search(search, web):
    raise RuntimeError("index shard 3 unreadable")


def refused_search(search, web):
    from evaluator.commands import EvaluationRefused

    raise EvaluationRefused("cannot search: the web index is not in the cache")


READ_DISTRIBUTIONS = metadata.packages_distributions


@functools.cache
def installed_distributions() -> dict:
    """importlib.metadata's module -> distributions map, read once: the requirements check reads it
    on every pre-flight, and the installed packages do not change within the tests."""
    return READ_DISTRIBUTIONS()


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """No offline switch set beforehand (restored afterwards: the pre-flight sets them itself), an
    empty Hugging Face cache, nothing seen by the stand-in agents, the installed distributions read
    once."""
    from huggingface_hub import constants

    monkeypatch.setattr(metadata, "packages_distributions", installed_distributions)
    for key in (*OFFLINE_KEYS, "CRUISE_PROFILE"):
        monkeypatch.setenv(key, "")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
    monkeypatch.setattr(f"{__name__}.SEEN", [])
    return tmp_path / "hf" / "hub"


def rows(printed: str) -> list[tuple[str, str, str]]:
    """(verdict, check, detail) of each printed line, in order."""
    found = []
    for line in printed.splitlines():
        match = re.match(r"^(PASS|FAIL|SKIP)  (.+?)\s{2,}(.*)$", line)
        if match:
            found.append(match.groups())
    return found


def stand_in(name: str) -> str:
    return f"{__name__}:{name}"


def preflight_of(capsys, *argv: str) -> tuple[int, list[tuple[str, str, str]], list[str]]:
    code = preflight.main(["--profile", "cpu", *argv])
    printed = capsys.readouterr().out
    return code, rows(printed), printed.strip().splitlines()


# ---- the whole table ------------------------------------------------------------------------------


def listed_models() -> int:
    import json

    return len(json.loads((REPO_ROOT / "aicrowd.json").read_text())["hf_models"])


def test_a_sound_stand_in_agent_passes_every_check_in_order_and_exits_0(fresh, capsys):
    code, table, lines = preflight_of(capsys, "--agent", stand_in("StandInAgent"), "--search", "none")
    spec = stand_in("StandInAgent")
    assert [(verdict, name) for verdict, name, _ in table] == [
        ("PASS", "import"), ("PASS", "requirements"), ("PASS", "pins"), ("PASS", "aicrowd"),
        ("SKIP", "gpu memory"), ("PASS", "disk"), ("PASS", "search"), ("PASS", "agent load"),
        ("PASS", "batch size"), ("PASS", "dry run"), ("PASS", "stage faults")]
    details = {name: detail for _, name, detail in table}
    assert details["import"] == f"{spec} imported offline"
    assert details["pins"].startswith("the ") and details["pins"].endswith(" pins of requirements-cpu.txt are installed")
    assert details["aicrowd"] == (f"{listed_models()} models listed, the cpu run loads no hub model "
                                  "(--profile l40s: the submission's run)")
    assert details["gpu memory"] == f"not planned: {spec} has no CruiseAgent configuration to plan"
    assert details["disk"] == "the cpu run downloads nothing"
    assert details["search"] == "--search none: the agent is given no pipeline"
    assert details["agent load"] == f"{spec} loaded"
    assert details["batch size"] == "2"
    assert details["dry run"].startswith("2 answers in 0.0 s; budgets: the agent sets no budget of its own, ")
    assert details["dry run"].endswith("; ran stand-in-vlm (answer); of the competition's budget: answer 0%")
    assert details["stage faults"] == "none in the dry run's 2 turns"
    assert lines[-1] == "preflight: all checks passed" and code == 0
    # the names are padded to the longest ("stage faults", 12 characters), two spaces each side
    assert "PASS  import        " + f"{spec} imported offline" in lines
    # nothing downloads: every offline switch is on after the pre-flight
    assert [os.environ[key] for key in OFFLINE_KEYS] == ["1", "1", "1"]


def test_the_dry_run_is_the_first_turns_of_the_first_conversations_of_the_shipped_benchmark(fresh, capsys):
    preflight_of(capsys, "--agent", stand_in("StandInAgent"), "--search", "none")
    ds, _, _ = load_split(str(MINI / "single-turn"), None, "validation")
    first = read_conversations(ds, 2)
    [(queries, images, histories, pipeline)] = SEEN
    assert queries == [c.turns[0].query for c in first] and len(set(queries)) == 2
    assert [image.size for image in images] == [image_for_agent(ds[c.index]["image"], c.image_url).size for c in first]
    assert histories == [[], []] and pipeline is None


def test_the_dry_run_reads_the_dataset_it_is_given(fresh, capsys):
    code, _, _ = preflight_of(capsys, "--agent", stand_in("StandInAgent"), "--search", "none",
                              "--dataset", str(MINI / "multi-turn"))
    ds, _, _ = load_split(str(MINI / "multi-turn"), None, "validation")
    [(queries, _, _, _)] = SEEN
    assert code == 0 and queries == [c.turns[0].query for c in read_conversations(ds, 2)]


def test_the_dry_run_reads_the_validation_split_of_a_dataset_of_several(fresh, capsys, tmp_path):
    """The evaluator's split, not the first one the folder lists (here a train split, listed first:
    the shipped rows in reverse order)."""
    import pyarrow.parquet as pq

    folder = tmp_path / "two-splits"
    (folder / "data").mkdir(parents=True)
    shipped = next((MINI / "single-turn" / "data").glob("*.parquet"))
    shutil.copy(shipped, folder / "data" / "validation-00000-of-00001.parquet")
    rows = pq.read_table(shipped)
    pq.write_table(rows.take(list(range(rows.num_rows - 1, -1, -1))), folder / "data" / "train-00000-of-00001.parquet")
    code, _, _ = preflight_of(capsys, "--agent", stand_in("StandInAgent"), "--search", "none", "--dataset", str(folder))
    ds, _, _ = load_split(str(MINI / "single-turn"), None, "validation")
    [(queries, _, _, _)] = SEEN
    assert code == 0 and queries == [c.turns[0].query for c in read_conversations(ds, 2)]


def test_profile_auto_says_what_it_picked_and_why_and_checks_that_profiles_pins(fresh, capsys, monkeypatch):
    monkeypatch.setattr("agents.hardware.visible_gpu", lambda: None)  # this machine: no GPU torch sees
    code = preflight.main(["--profile", "auto", "--agent", stand_in("StandInAgent"), "--search", "none"])
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == "--profile auto: cpu (no CUDA GPU is visible to torch)"
    assert code == 0 and "requirements-cpu.txt" in dict((n, d) for _, n, d in rows("\n".join(lines)))["pins"]


def test_the_hub_is_switched_off_before_the_run_is_resolved_or_the_gpu_looked_at(fresh, capsys, monkeypatch):
    """huggingface_hub, transformers and datasets read their switches once, when first imported:
    resolving the run or asking torch for the GPU may be that first import."""
    import local_evaluation

    seen = {}

    def resolving(args):
        seen["run_settings"] = [os.environ[key] for key in OFFLINE_KEYS]
        return real_run_settings(args)

    def looking():
        seen["visible_gpu"] = [os.environ[key] for key in OFFLINE_KEYS]
        return None

    real_run_settings = local_evaluation.run_settings
    monkeypatch.setattr(local_evaluation, "run_settings", resolving)
    monkeypatch.setattr("agents.hardware.visible_gpu", looking)
    assert preflight.main(["--profile", "auto", "--agent", "no_such_agent_module:Agent"]) == 1
    assert seen == {"run_settings": ["1", "1", "1"], "visible_gpu": ["1", "1", "1"]}


def test_the_l40s_run_checks_the_pins_of_requirements_txt(fresh, capsys):
    _, table, _ = preflight_of(capsys, "--agent", "no_such_agent_module:Agent")
    code = preflight.main(["--profile", "l40s", "--agent", "no_such_agent_module:Agent"])
    pins = {name: detail for _, name, detail in rows(capsys.readouterr().out)}["pins"]
    assert code == 1 and "requirements.txt" in pins and "requirements-cpu.txt" not in pins
    assert "requirements-cpu.txt" in {name: detail for _, name, detail in table}["pins"]


def test_an_agent_that_does_not_import_skips_every_check_that_needs_it(fresh, capsys):
    code, table, lines = preflight_of(capsys, "--agent", "no_such_agent_module:Agent")
    assert table[0] == ("FAIL", "import", "ValueError: --agent 'no_such_agent_module:Agent': no module "
                                          "'no_such_agent_module' to import it from")
    assert [name for _, name, _ in table[1:3]] == ["requirements", "pins"]
    assert table[3:] == [("SKIP", name, "not run: the agent does not import") for name in (
        "aicrowd", "gpu memory", "disk", "agent load", "batch size", "dry run", "stage faults")]
    assert code == 1 and lines[-1] == "preflight: FAILED: import"


@pytest.mark.parametrize("factory, why", [
    ("broken_search", "RuntimeError: index shard 3 unreadable"),
    ("refused_search", "cannot search: the web index is not in the cache"),  # said as the evaluation says it
])
def test_a_search_pipeline_that_does_not_open_fails_and_skips_the_agent(fresh, capsys, factory, why):
    code, table, lines = preflight_of(capsys, "--agent", stand_in("StandInAgent"), "--search", stand_in(factory))
    names = [name for _, name, _ in table]
    at = names.index("search")
    assert names[:at] == ["import", "requirements", "pins", "aicrowd", "gpu memory", "disk"]
    assert table[at:] == [("FAIL", "search", why)] + [
        ("SKIP", name, "not run: the search pipeline did not load")
        for name in ("agent load", "batch size", "dry run", "stage faults")]
    assert code == 1 and lines[-1] == "preflight: FAILED: search" and SEEN == []


def test_the_agent_is_handed_the_pipeline_that_opened(fresh, capsys):
    factory = stand_in("open_search")
    code, table, _ = preflight_of(capsys, "--agent", stand_in("StandInAgent"), "--search", factory)
    assert ("PASS", "search", f"the {factory} pipeline opened") in table and code == 0
    [(_, _, _, pipeline)] = SEEN
    assert isinstance(pipeline, OpenedSearch) and pipeline.web is True


@pytest.mark.parametrize("agent, why", [
    ("UnloadableAgent", "RuntimeError: weights file cut short"),  # the first line only
    ("SilentlyUnloadableAgent", "RuntimeError: "),
])
def test_an_agent_that_does_not_load_fails_with_the_first_line_and_skips_the_rest(fresh, capsys, agent, why):
    code, table, lines = preflight_of(capsys, "--agent", stand_in(agent), "--search", "none")
    assert table[-4:] == [("FAIL", "agent load", f"the agent did not load: {why}")] + [
        ("SKIP", name, "not run: the agent did not load") for name in ("batch size", "dry run",
                                                                       "stage faults")]
    assert code == 1 and lines[-1] == "preflight: FAILED: agent load"


def test_a_batch_size_out_of_bounds_fails_and_nothing_is_run(fresh, capsys):
    code, table, lines = preflight_of(capsys, "--agent", stand_in("OversizedAgent"), "--search", "none")
    assert table[-1] == ("FAIL", "batch size", "17: must be within 1..16")
    assert code == 1 and lines[-1] == "preflight: FAILED: batch size" and SEEN == []


def test_a_stage_fault_in_the_dry_run_fails_the_pre_flight_naming_the_stage(fresh, capsys):
    code, table, lines = preflight_of(capsys, "--agent", stand_in("FaultingAgent"), "--search", "none")
    assert table[-2][:2] == ("PASS", "dry run")
    assert table[-1] == ("FAIL", "stage faults", "2 of 2 turns of the dry run faulted: stage 's2_answer' (2 turns): "
                                                 "KeyError: 'prompt'")
    assert code == 1 and lines[-1] == "preflight: FAILED: stage faults"


def test_the_failed_line_names_every_failed_check_in_order(fresh, capsys):
    code, table, lines = preflight_of(capsys, "--agent", "no_such_agent_module:Agent", "--aicrowd",
                                      str(fresh.parent / "absent.json"))
    assert code == 1 and lines[-1] == "preflight: FAILED: import"  # aicrowd is skipped, not failed
    code = preflight.main(["--profile", "cpu", "--agent", stand_in("OversizedAgent"), "--search", "none",
                           "--aicrowd", str(fresh.parent / "absent.json")])
    lines = capsys.readouterr().out.strip().splitlines()
    assert code == 1 and lines[-1] == "preflight: FAILED: aicrowd, batch size"


# ---- import -------------------------------------------------------------------------------------


@pytest.mark.parametrize("spec, detail", [
    ("no_such_agent_module:Agent", "ValueError: --agent 'no_such_agent_module:Agent': no module "
                                   "'no_such_agent_module' to import it from"),
    ("tools.preflight:NoSuchAgent", "ValueError: --agent 'tools.preflight:NoSuchAgent': module 'tools.preflight' "
                                    "has no 'NoSuchAgent'"),
    ("tools.preflight", "ValueError: --agent 'tools.preflight': expected MODULE:NAME"),
])
def test_an_agent_that_does_not_import_is_said_in_one_line(fresh, spec, detail):
    assert preflight.import_agent(spec) == (None, preflight.Check("import", False, detail))


def test_an_agent_that_imports_passes_offline(fresh):
    agent_cls, check = preflight.import_agent(stand_in("StandInAgent"))
    assert agent_cls is StandInAgent
    assert check == preflight.Check("import", True, f"{stand_in('StandInAgent')} imported offline")
    assert os.environ["HF_HUB_OFFLINE"] == "1" and os.environ["TRANSFORMERS_OFFLINE"] == "1"


@pytest.fixture
def module_on_path(tmp_path, monkeypatch):
    """write(name, source) -> `name`, importable for this test only (forgotten afterwards)."""
    import importlib
    import sys

    def write(name: str, source: str) -> str:
        (tmp_path / f"{name}.py").write_text(source)
        monkeypatch.syspath_prepend(str(tmp_path))
        monkeypatch.setitem(sys.modules, name, None)
        del sys.modules[name]
        importlib.invalidate_caches()
        return name

    return write


def test_an_agent_that_reaches_out_while_importing_fails_naming_each_host(fresh, module_on_path):
    name = module_on_path("reaching_agent", (
        "import socket\n"
        "for host in ('192.0.2.7', '203.0.113.9'):\n"
        "    try:\n"
        "        socket.create_connection((host, 443), timeout=0.5)\n"
        "    except OSError as exc:\n"
        "        REFUSED = str(exc)\n"
        "class Agent:\n"
        "    pass\n"))
    agent_cls, check = preflight.import_agent(f"{name}:Agent")
    assert agent_cls is not None and agent_cls.__name__ == "Agent"
    assert check == preflight.Check("import", False, "tried to reach 192.0.2.7, 203.0.113.9")


def test_the_network_guard_lets_this_machine_through_and_is_lifted_afterwards(tmp_path):
    original = socket.socket.connect
    with preflight._NoNetwork() as guard:
        for family, address in ((socket.AF_INET, ("127.0.0.1", 9)), (socket.AF_INET, ("localhost", 9))):
            with socket.socket(family, socket.SOCK_STREAM) as sock, pytest.raises(ConnectionRefusedError):
                sock.connect(address)  # the real connect: refused by this machine, not by the guard
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock, pytest.raises(FileNotFoundError):
            sock.connect(str(tmp_path / "no.sock"))
        if socket.has_ipv6:
            with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as sock, pytest.raises(OSError) as caught:
                sock.connect(("::1", 9))
            assert "preflight" not in str(caught.value)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock, pytest.raises(OSError) as caught:
            sock.connect(("198.51.100.3", 80))
        assert str(caught.value) == "preflight: network access to 198.51.100.3 refused"
    assert guard.attempts == ["198.51.100.3"]
    assert socket.socket.connect is original


# ---- the cache and its disk -----------------------------------------------------------------------


Usage = namedtuple("Usage", "total used free")


@pytest.fixture
def disk(monkeypatch):
    """The free bytes of the disk each path is on: {path: bytes}; asking of another path is an error."""
    free: dict = {}

    def usage(path):
        return Usage(0, 0, free[os.fspath(path)])

    monkeypatch.setattr(shutil, "disk_usage", usage)
    return free


def add_snapshot(cache, repo_id: str, kind: str = "models"):
    folder = cache / f"{kind}--{repo_id.replace('/', '--')}"
    (folder / "snapshots" / COMMIT).mkdir(parents=True)
    (folder / "snapshots" / COMMIT / "config.json").write_text("{}")
    (folder / "refs").mkdir()
    (folder / "refs" / "main").write_text(COMMIT)


L40S_CACHE_CHECKS = ["cache: clip-vit-large-patch14-336", "cache: bge-large-en-v1.5",
                     "cache: Llama-3.2-11B-Vision-Instruct", "cache: Llama-3.2-1B-Instruct", "cache: bge-reranker-v2-m3",
                     "cache: image-search-index-public-test", "cache: web-search-index-public-test"]


def l40s_need(cache) -> float:
    """The bytes tools.fetch still has to download for the l40s run, with its margin."""
    run = resolve_settings(EvaluationSettings(profile="l40s"))
    return needed_bytes(survey(plan(run), cache, None)) * (1 + DISK_MARGIN)


def test_every_model_and_index_the_run_loads_has_a_line_and_the_datasets_count_on_the_disk(fresh, disk):
    cache = fresh
    need = l40s_need(cache)
    disk[str(cache.parent.parent)] = need  # the cache's folder is not there yet: the disk of the nearest parent
    check, cached = preflight.check_cache(resolve_settings(EvaluationSettings(profile="l40s")))
    assert [c.name for c in cached] == L40S_CACHE_CHECKS and not any(c.ok for c in cached)
    assert cached[2].detail == ("chain model meta-llama/Llama-3.2-11B-Vision-Instruct is not in the cache (21.4 GB): "
                                "python -m tools.fetch --profile l40s")
    assert cached[5].detail == ("image index crag-mm-2025/image-search-index-public-test is not in the cache (2.0 GB): "
                                "python -m tools.fetch --profile l40s")
    assert need / (1 + DISK_MARGIN) == 49.1 * GB  # the datasets' 3 GB too: the fetch command downloads them
    assert check == preflight.Check("disk", True, (
        f"54.0 GB free for {cache}; python -m tools.fetch --profile l40s still has 54.0 GB to download "
        "(with 10% margin)"))


def test_one_byte_short_of_the_download_is_not_enough(fresh, disk):
    cache = fresh
    cache.mkdir(parents=True)
    disk[str(cache)] = l40s_need(cache) - 1
    check, _ = preflight.check_cache(resolve_settings(EvaluationSettings(profile="l40s")))
    assert check.ok is False
    assert check.detail == (f"NOT ENOUGH: 54.0 GB free for {cache}; python -m tools.fetch --profile l40s still has "
                            "54.0 GB to download (with 10% margin)")


def test_a_model_in_the_cache_passes_and_one_partly_downloaded_says_so(fresh, disk):
    cache = fresh
    add_snapshot(cache, "BAAI/bge-large-en-v1.5")
    partial = cache / "models--meta-llama--Llama-3.2-1B-Instruct" / "blobs"
    partial.mkdir(parents=True)
    (partial / "0123.incomplete").write_text("")
    disk[str(cache)] = 1e15
    check, cached = preflight.check_cache(resolve_settings(EvaluationSettings(profile="l40s")))
    by_name = {c.name: c for c in cached}
    assert by_name["cache: bge-large-en-v1.5"] == preflight.Check(
        "cache: bge-large-en-v1.5", True, f"web search model BAAI/bge-large-en-v1.5 is in {cache}")
    assert by_name["cache: Llama-3.2-1B-Instruct"] == preflight.Check(
        "cache: Llama-3.2-1B-Instruct", False, "chain model meta-llama/Llama-3.2-1B-Instruct is only partly "
                                               "downloaded (2.5 GB): python -m tools.fetch --profile l40s")
    # what is there is not downloaded again; a partial download counts whole
    assert check.ok and "still has 51.0 GB to download" in check.detail  # (49.1 - 2.7) x 1.1


def test_a_model_of_no_known_size_says_so(fresh, disk):
    cache = fresh
    disk[str(cache.parent.parent)] = 1e15
    model = "someone/Qwen2.5-VL-7B-Instruct-finetune"
    _, cached = preflight.check_cache(resolve_settings(EvaluationSettings(profile="l40s", model_name=model)))
    [line] = [c for c in cached if c.name == "cache: Qwen2.5-VL-7B-Instruct-finetune"]
    assert line.detail == (f"chain model {model} is not in the cache (size unknown): "
                           f"python -m tools.fetch --profile l40s --model-name {model}")


# ---- the GPU memory plan ---------------------------------------------------------------------------


def l40s_run(*settings: str, model_name: str | None = None):
    return resolve_settings(EvaluationSettings(profile="l40s", set=settings, model_name=model_name))


def test_a_run_of_the_paper_models_on_a_card_too_small_names_its_first_two_problems():
    run = l40s_run()
    paper, here = plan_l40s(run.agent.config), plan_l40s(run.agent.config, 16.0)
    assert len(here.problems()) > 2
    check = preflight.check_gpu_memory(run, ("Small Card", 16.0))
    assert check == preflight.Check("gpu memory", False, (
        "Small Card (16.0 GiB) is too small for the l40s run: " + "; ".join(here.problems()[:2])
        + f" ({paper.total_gib:.1f} of 45.0 GiB planned, {paper.spare_gib:.1f} GiB spare (the l40s run's "
          f"configuration; python -m tools.memory_plan); here: Small Card, 16.0 GiB, {here.spare_gib:.1f} GiB spare)"))


def test_the_card_of_exactly_the_planned_size_passes_and_says_its_spare():
    run = l40s_run()
    paper = plan_l40s(run.agent.config)
    check = preflight.check_gpu_memory(run, ("NVIDIA L40S", paper.gpu_gib))
    assert check == preflight.Check("gpu memory", True, (
        f"{paper.total_gib:.1f} of 45.0 GiB planned, {paper.spare_gib:.1f} GiB spare (the l40s run's configuration; "
        f"python -m tools.memory_plan); here: NVIDIA L40S, {paper.gpu_gib:.1f} GiB, {paper.spare_gib:.1f} GiB spare"))


@pytest.mark.parametrize("seen, words", [
    (None, "GiB spare (the l40s run's configuration; python -m tools.memory_plan); no GPU here: checked on paper "
           "for one L40S"),
    (("NVIDIA H200", 139.8), "; here: NVIDIA H200, 139.8 GiB, "),
])
def test_by_default_the_gpu_torch_sees_is_the_one_checked(monkeypatch, seen, words):
    monkeypatch.setattr("agents.hardware.visible_gpu", lambda: seen)
    check = preflight.check_gpu_memory(l40s_run())
    assert check.ok is True and words in check.detail


def test_a_plan_that_does_not_fit_one_l40s_fails_before_any_card_is_looked_at():
    run = l40s_run("vlm_gpu_memory_utilization=0.8")
    paper = plan_l40s(run.agent.config)
    check = preflight.check_gpu_memory(run, ("NVIDIA H200", 139.8))
    assert check == preflight.Check("gpu memory", False, "; ".join(paper.problems()) + (
        f" ({paper.total_gib:.1f} of 45.0 GiB planned, {paper.spare_gib:.1f} GiB spare (the l40s run's "
        "configuration; python -m tools.memory_plan))"))


@pytest.mark.parametrize("model, ok", [
    ("Qwen/Qwen2.5-VL-7B-Instruct", True),  # fits in bf16
    ("Qwen/Qwen2.5-VL-32B-Instruct", False),  # needs 4-bit weights, and these are bf16
    ("Qwen/Qwen2.5-VL-32B-Instruct-AWQ", True),  # 4-bit weights, said by the name (any case)
    ("Qwen/Qwen2.5-VL-32B-Instruct-GPTQ", True),
    ("someone/Qwen2.5-VL-32B-Instruct-Int4", True),
    ("someone/Qwen2.5-VL-32B-Instruct-4bit", True),
    ("someone/Qwen2.5-VL-32B-Instruct-4-bit", True),
    ("someone/Qwen2.5-VL-72B-Instruct-AWQ", False),  # not even in 4 bits
])
def test_a_checkpoint_of_another_family_is_weighed_by_its_size(model, ok):
    run = l40s_run(model_name=model)
    fit = family_fit(model, run.agent.config)
    check = preflight.check_gpu_memory(run, ("NVIDIA H200", 139.8))  # the card seen does not matter: on paper
    assert check == preflight.Check("gpu memory", ok, (
        f"{model} (Qwen2.5-VL, {fit.params_b:.1f} B parameters): {fit.bf16_gib:.1f} GiB in bf16, "
        f"{fit.quantized_gib:.1f} GiB in 4 bits, one engine's budget 36.4 GiB on one L40S: {fit.verdict} "
        "(on paper: python -m tools.memory_plan --families)"))


def test_the_verdicts_of_the_family_sizes_are_the_three_there_are():
    verdicts = {m: family_fit(m, l40s_run(model_name=m).agent.config).verdict for m in (
        "Qwen/Qwen2.5-VL-7B-Instruct", "Qwen/Qwen2.5-VL-32B-Instruct", "Qwen/Qwen2.5-VL-72B-Instruct")}
    assert list(verdicts.values()) == ["fits in bf16", "needs 4-bit weights (AWQ/GPTQ) to fit",
                                       "does not fit even in 4 bits: more GPUs (tensor parallel) or a larger card"]


def test_a_checkpoint_of_no_known_size_is_not_planned():
    check = preflight.check_gpu_memory(l40s_run(model_name="someone/Qwen2.5-VL-Instruct"), None)
    assert check == preflight.Check("gpu memory", None, "someone/Qwen2.5-VL-Instruct: no size known to plan with "
                                                        "(name its size, e.g. 7B)")


def test_a_run_without_an_agent_is_not_planned():
    from evaluator.harness.resolved import resolve_run

    check = preflight.check_gpu_memory(resolve_run("l40s", None), None)
    assert check == preflight.Check("gpu memory", None, "not planned: no agent has no CruiseAgent configuration "
                                                        "to plan")


# ---- the dry run ------------------------------------------------------------------------------------


class Clock:
    def __init__(self):
        self.now = 500.0

    def __call__(self):
        return self.now


class ScriptedAgent:
    """Takes `seconds` of the clock, then returns `answers` (or raises `raises`) and reports `calls`."""

    def __init__(self, clock, seconds=1.0, answers=None, calls=None, raises=None, report=True):
        self.clock, self.seconds, self.answers, self.calls, self.raises = clock, seconds, answers, calls, raises
        self.report = report

    def batch_generate_response(self, queries, images, histories):
        self.clock.now += self.seconds
        if self.raises:
            raise self.raises
        if self.report:
            self.last_batch_report = {"engine_calls": self.calls or []}
        return self.answers if self.answers is not None else ["I don't know"] * len(queries)


BATCH = (["q1", "q2"], [None, None], [[], []])


def dry_run(agent, clock, *settings, model_name=None, profile="cpu"):
    run = resolve_settings(EvaluationSettings(profile=profile, set=settings, model_name=model_name))
    return preflight.check_dry_run(agent, BATCH, run, clock)


def plain_run():
    return resolve_settings(EvaluationSettings(profile="cpu", agent=stand_in("StandInAgent"), search="none"))


@pytest.mark.parametrize("raises, detail", [
    (RuntimeError("CUDA out of memory"), "raised RuntimeError: CUDA out of memory"),
    (KeyError("image"), "raised KeyError: 'image'"),
])
def test_a_dry_run_that_raises_fails_with_the_exception(raises, detail):
    clock = Clock()
    assert dry_run(ScriptedAgent(clock, raises=raises), clock) == preflight.Check("dry run", False, detail)


@pytest.mark.parametrize("answers, detail", [
    (["only one"], "agent returned 1 answers for 2 queries"),
    (["one", None], "answer 1 is NoneType, not str"),
    ("one string", "agent returned str, not a list of 2 strings"),
])
def test_a_dry_run_whose_answers_the_evaluator_cannot_take_fails_saying_why(answers, detail):
    clock = Clock()
    assert dry_run(ScriptedAgent(clock, answers=answers), clock) == preflight.Check("dry run", False, detail)


def test_the_dry_run_names_each_model_with_its_stages_and_each_stages_share_of_the_budget():
    clock = Clock()
    calls = [{"stage": "route", "model": "router-1b", "wall_ms": 500.0},
             {"stage": "answer", "model": "vlm-11b", "wall_ms": 2000.0},
             {"stage": "answer", "model": "vlm-11b", "wall_ms": 1000.0},  # summed: 3 s of 20 s
             {"stage": "verify", "model": "vlm-11b", "wall_ms": 100.0},
             {"stage": "rerank", "model": None, "wall_ms": 250.0},
             {"stage": "route", "wall_ms": 0.0}]
    check = preflight.check_dry_run(ScriptedAgent(clock, seconds=4.25, calls=calls), BATCH, plain_run(), clock)
    assert check == preflight.Check("dry run", True, (
        "2 answers in 4.2 s; budgets: the agent sets no budget of its own, the competition's 20 s (10 s a turn); "
        "ran router-1b (route); vlm-11b (answer, verify); ? (rerank, route); of the competition's budget: "
        "route 2%, answer 15%, verify 0%, rerank 1%"))


def test_an_agent_that_reports_nothing_is_said_to_and_its_named_model_is_not_blamed(tmp_path):
    clock = Clock()
    named = str(tmp_path / "Qwen2.5-VL-3B-Instruct")
    check = dry_run(ScriptedAgent(clock, seconds=2.0, report=False), clock, "turn_budget_s=5", model_name=named)
    assert check == preflight.Check("dry run", True, (
        "2 answers in 2.0 s; budgets: the agent's 10 s (turn_budget_s 5), the competition's 20 s (10 s a turn); "
        "ran no model the agent reported"))


def test_a_fraction_of_a_second_turn_budget_is_shown_as_set():
    clock = Clock()
    check = dry_run(ScriptedAgent(clock, seconds=1.0, report=False), clock, "turn_budget_s=0.75")
    assert check.ok is True and "budgets: the agent's 1.5 s (turn_budget_s 0.75), " in check.detail
    clock = Clock()
    over = dry_run(ScriptedAgent(clock, seconds=1.6, report=False), clock, "turn_budget_s=0.75")
    assert over.detail.startswith("OVER the agent's budget (1.6 s > 1.5 s): ")


def test_the_competitions_budget_grows_with_the_batch():
    clock = Clock()
    three = (["a", "b", "c"], [None] * 3, [[], [], []])
    check = preflight.check_dry_run(ScriptedAgent(clock, seconds=30.0, report=False), three, plain_run(), clock)
    assert check.ok is True and check.detail.startswith(f"3 answers in 30.0 s; budgets: the agent sets no budget "
                                                        f"of its own, the competition's {3 * TURN_BUDGET_S:g} s ")


# ---- stage faults ---------------------------------------------------------------------------------


@pytest.mark.parametrize("report", [None, {}, {"traces": None}, {"traces": []}, {"traces": ["not a trace"]}])
def test_no_traces_means_stage_faults_are_not_checked(report):
    assert preflight.check_stage_faults(report, 2) == preflight.Check(
        "stage faults", None, "not checked: the agent reported no traces")


def test_stage_faults_are_counted_by_stage_and_reason_commonest_first():
    traces = [{"branch": "error", "errors": ["s3_retrieve: TimeoutError: 5 s"]},
              {"branch": "answer"},
              {"branch": "error", "errors": ["the batch broke before any stage"]},
              {"branch": "error", "errors": ["s3_retrieve: TimeoutError: 5 s"]},
              "not a trace"]
    check = preflight.check_stage_faults({"traces": traces}, 4)
    assert check == preflight.Check("stage faults", False, (
        "3 of 4 turns of the dry run faulted: stage 's3_retrieve' (2 turns): TimeoutError: 5 s; "
        "before any stage (1 turns): the batch broke before any stage"))
    assert preflight.check_stage_faults({"traces": [{"branch": "answer"}]}, 1) == preflight.Check(
        "stage faults", True, "none in the dry run's 1 turns")


# ---- a named model ----------------------------------------------------------------------------------


def test_a_named_hub_model_served_elsewhere_loads_answers_and_needs_no_listing(fresh, capsys):
    spec, model = stand_in("NamedStandInAgent"), "someone/vlm-7b"
    code, table, lines = preflight_of(capsys, "--agent", spec, "--search", "none", "--model-name", model)
    details = {name: (verdict, detail) for verdict, name, detail in table}
    assert details["aicrowd"] == ("PASS", (
        f"{listed_models()} models listed, the cpu run loads no hub model (--profile l40s: the submission's run); "
        f"the named model {model} does not load in this process (a server or provider runs it): no need to list it"))
    assert details["agent load"] == ("PASS", f"{spec} loaded with --model-name {model}")
    assert details["dry run"][1].endswith(f"; ran {model} (answer); of the competition's budget: answer 0%")
    assert code == 0 and lines[-1] == "preflight: all checks passed"


def test_a_named_folder_is_said_to_be_no_hub_id(fresh, capsys, tmp_path):
    folder = tmp_path / "my-vlm"
    folder.mkdir()
    _, table, _ = preflight_of(capsys, "--agent", stand_in("NamedStandInAgent"), "--search", "none",
                               "--model-name", str(folder))
    assert {name: detail for _, name, detail in table}["aicrowd"].endswith(
        f"; the named model {folder} is a folder on this machine, not a hub id: hf_models lists hub ids, so "
        "AIcrowd's image holds it only if the repository does")


def test_a_named_model_that_does_not_load_is_named_in_the_failure(fresh, capsys):
    model = "someone/broken-vlm"
    code, table, _ = preflight_of(capsys, "--agent", stand_in("NamedStandInAgent"), "--search", "none",
                                  "--model-name", model)
    assert ("FAIL", "agent load", f"--model-name {model} did not load: OSError: {model}/config.json: truncated") in table
    assert code == 1


# ---- aicrowd.json -------------------------------------------------------------------------------------


def test_an_unreadable_aicrowd_json_fails_saying_why(tmp_path):
    run = resolve_settings(EvaluationSettings(profile="l40s"))
    absent = tmp_path / "absent.json"
    assert preflight.check_aicrowd(absent, run) == preflight.Check(
        "aicrowd", False, f"absent.json unreadable: [Errno 2] No such file or directory: '{absent}'")
    cut = tmp_path / "cut.json"
    cut.write_text("{")
    assert preflight.check_aicrowd(cut, run) == preflight.Check(
        "aicrowd", False, "cut.json unreadable: Expecting property name enclosed in double quotes: line 1 column 2 "
                          "(char 1)")


def test_every_fault_of_aicrowd_json_is_said_in_one_line(tmp_path):
    import json

    run = resolve_settings(EvaluationSettings(profile="l40s"))
    path = tmp_path / "aicrowd.json"
    path.write_text(json.dumps({"challenge_id": "single-source", "gpu": "true",
                                "hf_models": ["BAAI/bge-large-en-v1.5", {"repo_id": "BAAI/bge-reranker-v2-m3"}]}))
    check = preflight.check_aicrowd(path, run)
    assert check == preflight.Check("aicrowd", False, (
        "challenge_id must be one of single-source-augmentation, multi-source-augmentation, multi-turn-qa; "
        '"gpu" must be true; models missing from hf_models: openai/clip-vit-large-patch14-336, '
        "BAAI/bge-large-en-v1.5, meta-llama/Llama-3.2-11B-Vision-Instruct, meta-llama/Llama-3.2-1B-Instruct"))


def test_a_run_with_nothing_to_list_passes_an_aicrowd_json_with_no_models(tmp_path):
    import json

    path = tmp_path / "aicrowd.json"
    path.write_text(json.dumps({"challenge_id": "multi-turn-qa", "gpu": True}))
    run = resolve_settings(EvaluationSettings(profile="cpu", agent=stand_in("StandInAgent"), search="none"))
    assert preflight.check_aicrowd(path, run) == preflight.Check(
        "aicrowd", True, "0 models listed, the cpu run loads no hub model (--profile l40s: the submission's run)")


def test_a_run_of_no_agent_lists_the_search_models_only():
    from evaluator.harness.resolved import resolve_run

    check = preflight.check_aicrowd(REPO_ROOT / "aicrowd.json", resolve_run("l40s", None))
    assert check == preflight.Check("aicrowd", True, f"{listed_models()} models listed, the 2 hub models the l40s "
                                                     "run loads among them")


def test_write_aicrowd_writes_the_document_of_the_run_for_the_challenge_named(tmp_path, capsys):
    import json

    written = tmp_path / "aicrowd.json"
    assert preflight.main(["--write-aicrowd", "--aicrowd", str(written), "--challenge-id", "multi-turn-qa"]) == 0
    assert capsys.readouterr().out == f"wrote {written}\n"
    l40s = resolve_settings(EvaluationSettings(profile="l40s"))  # auto: AIcrowd's machine, whatever this one is
    assert written.read_text() == json.dumps(preflight.aicrowd_document("multi-turn-qa", l40s), indent=2) + "\n"
    document = json.loads(written.read_text())
    assert document["challenge_id"] == "multi-turn-qa" and document["gpu"] is True
    assert document["hf_models"][0] == {"repo_id": "openai/clip-vit-large-patch14-336", "revision": "main"}
    assert preflight.main(["--write-aicrowd", "--profile", "cpu", "--agent", stand_in("StandInAgent"),
                           "--search", "none", "--aicrowd", str(written)]) == 0
    assert json.loads(written.read_text()) == {"challenge_id": "single-source-augmentation", "gpu": True,
                                               "hf_models": []}


# ---- requirements ---------------------------------------------------------------------------------------


def test_the_requirements_name_each_import_of_agents_by_its_distribution(fresh, tmp_path):
    shipped = (REPO_ROOT / "requirements.txt").read_text().splitlines()
    assert preflight.check_requirements(REPO_ROOT / "requirements.txt") == preflight.Check(
        "requirements", True, f"{len(preflight.required_distributions(REPO_ROOT / 'requirements.txt'))} pins cover "
                              "agents/")
    trimmed = tmp_path / "requirements.txt"
    trimmed.write_text("\n".join(line for line in shipped if not line.lower().startswith(("sentence-transformers",
                                                                                            "pillow"))))
    assert preflight.check_requirements(trimmed) == preflight.Check(
        "requirements", False, "not in requirements.txt: PIL (pillow), sentence_transformers (sentence-transformers)")


def test_required_distributions_reads_names_past_versions_extras_markers_and_comments(tmp_path):
    path = tmp_path / "requirements.txt"
    path.write_text("\n".join([
        "# a comment line", "", "   ", "-r other.txt", "--extra-index-url https://example.org/simple",
        "Foo_Bar.baz>=1.0  # why", "pkg[extra]==1.2", "marked ; python_version < '3.12'", "compat~=1.0",
        "not-two!=2", "lower<3", "bare", "hashed#comment#more", "spaced  pkg==1"]))
    assert preflight.required_distributions(path) == {
        "foo-bar-baz", "pkg", "marked", "compat", "not-two", "lower", "bare", "hashed", "spaced"}


def test_third_party_imports_are_the_absolute_imports_that_are_neither_stdlib_nor_this_repositorys(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.py").write_text("import os, numpy.linalg\nfrom PIL import Image\nfrom . import sibling\n"
                                   "from .mod import thing\nfrom .. import up\n")
    (tmp_path / "sub" / "b.py").write_text("# café\nimport evaluator.harness, tools\nimport gguf\n"
                                           "from agents.base_agent import BaseAgent\nfrom yaml import safe_load\n")
    (tmp_path / "notes.txt").write_text("import requests\n")
    assert preflight.third_party_imports(tmp_path) == {"numpy", "PIL", "yaml"}


def test_a_hub_model_missing_from_the_cache_fails_and_skips_what_needs_it(fresh, capsys):
    model = "someone/vlm-7b"
    code, table, lines = preflight_of(capsys, "--agent", stand_in("HubStandInAgent"), "--search", "none",
                                      "--model-name", model)
    assert table[5:] == [
        ("PASS", "disk", table[5][2]),
        ("FAIL", "cache: vlm-7b", f"chain model {model} is not in the cache (size unknown): python -m tools.fetch "
                                  f"--agent {stand_in('HubStandInAgent')} --profile cpu --model-name {model} --search none"),
        *[("SKIP", name, "not run: 1 cache items are missing") for name in ("agent load", "batch size",
                                                                            "dry run", "stage faults")]]
    assert code == 1 and lines[-1] == "preflight: FAILED: aicrowd, cache: vlm-7b"  # not listed either


def test_the_help_says_what_the_pre_flight_checks_and_what_each_flag_does(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    with pytest.raises(SystemExit) as stopped:
        preflight.main(["--help"])
    shown = capsys.readouterr().out
    assert stopped.value.code == 0 and shown.startswith("usage: python -m tools.preflight [-h] ")
    # the module's description as written, its table's lines kept
    assert "\nWill this submission pass? Checks what can be checked before an hour in the AIcrowd queue.\n" in shown
    assert "\n  batch size    get_batch_size() is within 1..16\n" in shown
    assert re.search(r"\n  --dataset DATASET +for the dry run \(default: the shipped mini benchmark\)\n", shown)
    assert re.search(r"\n  --write-aicrowd +write aicrowd.json for the run the flags name \(--profile auto: l40s, "
                     r"AIcrowd's machine\) and stop\n", shown)
    with pytest.raises(SystemExit) as stopped:
        preflight.main(["--write-aicrowd", "--challenge-id", "single-source"])
    assert stopped.value.code == 2
    assert "argument --challenge-id: invalid choice: 'single-source'" in capsys.readouterr().err


def test_pins_that_differ_are_listed_six_at_most_with_the_fix_for_their_requirement_set(tmp_path):
    rich = metadata.version("rich")
    gpu = tmp_path / "requirements.txt"
    gpu.write_text("\n".join(["rich==not.a.version", *[f"no-such-distribution-{c}==1" for c in "abcdef"],
                              f"pillow=={metadata.version('pillow')}"]))
    assert preflight.check_pins(gpu) == preflight.Check("pins", False, (  # seven: one more than shown
        f"7 of 8 pins of requirements.txt differ: rich {rich} (pinned not.a.version), "
        + ", ".join(f"no-such-distribution-{c} not installed" for c in "abcde")
        + ", ... (install them: bash scripts/setup_gpu.sh, then run with .venv-gpu/bin/python)"))


def test_each_pin_is_read_past_its_extras_marker_and_comment(tmp_path):
    path = tmp_path / "requirements-cpu.txt"
    path.write_text("\n".join(["# torch==0", "Pillow==10.4.0", "rich[jupyter]==13.7.1 ; python_version >= '3.10'",
                                "tqdm==4.66.5#comment#more", "numpy>=1.0", "-r other.txt", "PyYAML==6.0.2 # why"]))
    assert preflight.pinned_versions(path) == {"Pillow": "10.4.0", "rich": "13.7.1", "tqdm": "4.66.5",
                                               "PyYAML": "6.0.2"}


def test_six_pins_that_differ_are_all_listed_and_the_cpu_set_says_its_own_fix(tmp_path):
    cpu = tmp_path / "requirements-cpu.txt"
    cpu.write_text("\n".join(f"no-such-distribution-{i}==1" for i in range(6)))
    assert preflight.check_pins(cpu) == preflight.Check("pins", False, (
        "6 of 6 pins of requirements-cpu.txt differ: " + ", ".join(f"no-such-distribution-{i} not installed"
                                                                   for i in range(6))
        + " (install them: bash scripts/setup.sh)"))


def test_a_module_two_distributions_provide_is_named_with_both(fresh, tmp_path, monkeypatch):
    owners = dict(installed_distributions())
    owners["PIL"] = ["Pillow", "pillow.simd"]
    monkeypatch.setattr(metadata, "packages_distributions", lambda: owners)
    trimmed = tmp_path / "requirements.txt"
    trimmed.write_text("\n".join(line for line in (REPO_ROOT / "requirements.txt").read_text().splitlines()
                                 if not line.lower().startswith("pillow")))
    check = preflight.check_requirements(trimmed)
    assert check.ok is False and "PIL (pillow/pillow-simd)" in check.detail.split(": ", 1)[1].split(", ")


def test_a_run_of_no_agent_has_no_budget_and_no_named_model():
    from evaluator.harness.resolved import resolve_run

    clock = Clock()
    check = preflight.check_dry_run(ScriptedAgent(clock, seconds=1.0, report=False), BATCH, resolve_run("cpu", None),
                                    clock)
    assert check == preflight.Check("dry run", True, (
        "2 answers in 1.0 s; budgets: the agent sets no budget of its own, the competition's 20 s (10 s a turn); "
        "ran no model the agent reported"))


def test_a_stages_share_is_rounded_from_its_exact_seconds():
    """10,104 ms of a two-turn batch's 20 s is 50.52%: 51%."""
    clock = Clock()
    calls = [{"stage": "answer", "model": "vlm", "wall_ms": 10104.0}]
    check = preflight.check_dry_run(ScriptedAgent(clock, seconds=11.0, calls=calls), BATCH, plain_run(), clock)
    assert check.detail.endswith("; of the competition's budget: answer 51%")


def test_an_agent_that_keeps_no_report_gets_its_dry_run_and_no_stage_fault_check():
    agent = ScriptedAgent(lambda: 0.0, seconds=0.0, report=False)
    agent.clock = Clock()
    answered, faults = preflight.dry_run_checks(agent, BATCH, plain_run())
    assert answered.name == "dry run" and answered.ok is True
    assert faults == preflight.Check("stage faults", None, "not checked: the agent reported no traces")


@pytest.mark.parametrize("profile, engine", [("cpu", "transformers"), ("served", "openai")])
def test_a_run_whose_engine_reserves_no_gpu_share_is_not_planned(profile, engine):
    check = preflight.check_gpu_memory(resolve_settings(EvaluationSettings(profile=profile)), None)
    assert check == preflight.Check("gpu memory", None, f"not planned: the {profile} run's engine ({engine}) reserves "
                                                        "no share of a GPU (--profile l40s: the submission's plan)")


def test_every_problem_of_a_plan_that_does_not_fit_is_said():
    run = l40s_run("vlm_gpu_memory_utilization=0.55")
    check = preflight.check_gpu_memory(run, None)
    assert check.ok is False and check.detail.startswith(
        "vlm: KV cache of 6,096 tokens is shorter than max_model_len 8192 (vLLM refuses to start); vlm: KV cache "
        "holds 0.8 planned requests, fewer than max_num_seqs 8 (")

"""Fetch everything a run needs into the Hugging Face cache: models, datasets, indices.

    python -m tools.fetch --profile l40s --dry-run   # what is missing, and how big
    python -m tools.fetch --profile l40s             # sizes, disk check, then download
    python -m tools.fetch --indices validation       # the 2025 starter kit's indices instead
    python -m tools.fetch --profile l40s --model-name Qwen/Qwen2.5-VL-7B-Instruct  # another VLM's run

The run is named by local_evaluation.py's own flags (--profile, here l40s unless told, --agent,
--preset, --set, --model-name, --calibration, --search, --indices, --web-contents,
--suppress-web-search-api) and resolved as an evaluation resolves them
(evaluator/harness/resolved.py `resolve_settings`), so a flag that changes what the run loads
changes what is fetched; every message that finds something missing of a run names this command
with the run's flags.

The list comes from the code that loads things: `loaded_models(run)` (the agent's and the
search pipeline's hub models), the run's search indices (evaluator/search/pipeline.py),
with `--web-contents [HF_ID]` the full-content web database (sharded LMDB files; its size is an
estimate until the hub answers, and a snapshot with shard files missing counts as partial), and
the evaluator's default datasets for both tasks. Sizes come from the hub when it answers
(`files_metadata`); otherwise from `ESTIMATED_GB` below, and the table says which.

Downloads go through `huggingface_hub.snapshot_download`: it resumes a partial download, shows
progress bars, and takes HF_ENDPOINT, HF_HUB_CACHE and HF_TOKEN (or `huggingface-cli login`)
from the environment. The token is never printed; only whether one is set.

This is the one download route (evaluator/search/fetch_route.py).
"""
from __future__ import annotations

import argparse
import fnmatch
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evaluator.harness.resolved import ResolvedRun

GB = 1e9
# Files of the model repos that nothing here loads: other frameworks' weights and Meta's
# original checkpoints (Llama-3.2-11B-Vision-Instruct's `original/` alone is ~21 GB).
SKIPPED_FILES = ("*.h5", "*.msgpack", "*.ot", "*.onnx", "onnx/*", "openvino/*", "*.tflite", "original/*",
                 "*.gguf", "coreml/*")
# Free disk wanted on top of the download (the datasets library's prepared copies, logs, outputs).
DISK_MARGIN = 0.10
# Sizes when the hub cannot be asked, in GB. Models: parameters x bytes per parameter of the
# weight files kept (bf16 for Llama, fp32 for the others), both .safetensors and .bin counted
# where a repo ships both. Datasets and indices: estimates, see each line; none of these was
# measured here (the hub's own figure replaces them whenever it answers).
ESTIMATED_GB = {
    "meta-llama/Llama-3.2-11B-Vision-Instruct": 21.4,  # 10.67 B parameters, bf16 safetensors
    "meta-llama/Llama-3.2-1B-Instruct": 2.5,  # 1.24 B parameters, bf16
    "BAAI/bge-reranker-v2-m3": 4.6,  # 0.57 B parameters, fp32, safetensors + pytorch_model.bin
    "openai/clip-vit-large-patch14-336": 3.4,  # 0.43 B parameters, fp32, safetensors + .bin
    "BAAI/bge-large-en-v1.5": 2.7,  # 0.34 B parameters, fp32, safetensors + .bin
    "crag-mm-2025/web-search-index-public-test": 9.5,  # estimate: not published; taken as the validation one's
    "crag-mm-2025/image-search-index-public-test": 2.0,  # estimate: not published; taken as the validation one's
    "crag-mm-2025/web-search-index-validation": 9.5,  # estimate: reported on disk by a project that used it
    "crag-mm-2025/image-search-index-validation": 2.0,  # estimate: count not published
    "crag-mm-2025/crag-mm-single-turn-public": 2.0,  # assumption: ~1.9k images in parquet
    "crag-mm-2025/crag-mm-multi-turn-public": 1.0,  # assumption: ~586 images in parquet
    # assumption, not measured: ~100k pages (the web index's 9.5 GB of 1024-wide vectors at up to
    # 50 chunks a page) x ~150 KB of HTML each, in LMDB shards
    "crag-mm-2025/web-search-contents-db-private-v0.1.2": 15.0,
}
CONTENTS_ROLE = "web contents db"  # the full-content web database (local_evaluation.py --web-contents)
GATED_PREFIXES = ("meta-llama/",)
HUB_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Item:
    role: str
    repo_id: str
    repo_type: str  # "model" or "dataset"
    revision: str | None = None  # None: the repository's main branch

    @property
    def gated(self) -> bool:
        return self.repo_id.startswith(GATED_PREFIXES)

    @property
    def skipped(self) -> tuple[str, ...]:
        return SKIPPED_FILES if self.repo_type == "model" else ()


@dataclass
class Row:
    item: Item
    size: float | None  # bytes
    source: str  # "hub" or "estimate" or "unknown"
    state: str  # "present", "partial", "missing"


def plan(run: ResolvedRun, tasks: tuple[str, ...] = ("single-turn", "multi-turn")) -> list[Item]:
    """What `run` (evaluator/harness/resolved.py) loads from the hub, and the evaluator's default
    dataset of each task (nothing for a profile that builds everything locally): its hub models
    (`loaded_models`), the search indices of its default search pipeline (a provider's own are
    built, not fetched; Task 1 reads no web index) and its full-content database."""
    from agents.profiles import default_dataset
    from evaluator.harness.models import is_hub_id, loaded_models
    from evaluator.search.providers import load_provider

    search = run.search
    roles = {} if search is None else {search.image_model: "image search model", search.text_model: "web search model"}
    items = [Item(roles.get(m, "chain model"), m, "model") for m in loaded_models(run)]
    if run.builds_default_search:
        provider = load_provider(search.provider)
        hub_data = [("image index", search.image_index)] + (
            [("web index", search.web_index), (CONTENTS_ROLE, run.web_contents)] if run.web else [])
        for role, index in hub_data:
            if index and not (provider is not None and provider.owns(index)):
                items.append(Item(role, index, "dataset"))
    for task in tasks:
        dataset = default_dataset(run.profile, task)
        if is_hub_id(dataset):
            items.append(Item(f"{task} dataset", dataset, "dataset", evaluated_revision()))
    return items


def evaluated_revision() -> str:
    """The dataset revision local_evaluation.py evaluates unless told otherwise."""
    from local_evaluation import evaluation_parser

    return evaluation_parser().get_default("revision")


def _kept(name: str, item: Item) -> bool:
    return not any(fnmatch.fnmatch(name, pattern) for pattern in item.skipped)


class HubUnreachable(Exception):
    pass


def hub_files(api, item: Item) -> dict[str, int] | None:
    """{file: bytes} of the files a download keeps; None when the hub refuses (gated without access,
    not found); HubUnreachable when it cannot be reached at all."""
    import requests

    try:
        info = api.repo_info(item.repo_id, repo_type=item.repo_type, revision=item.revision,
                             files_metadata=True, timeout=HUB_TIMEOUT_S)
    except (requests.ConnectionError, requests.Timeout, OSError) as exc:
        raise HubUnreachable(str(exc)) from None
    except Exception:  # noqa: BLE001 - refused: the size comes from the table
        return None
    return {s.rfilename: int(s.size or 0) for s in info.siblings or [] if _kept(s.rfilename, item)}


def repo_folder(cache: Path, item: Item) -> Path:
    return cache / f"{item.repo_type}s--{item.repo_id.replace('/', '--')}"


def local_state(cache: Path, item: Item, files: dict[str, int] | None) -> str:
    """'present' when a snapshot is complete (against the hub's file list when known), 'partial'
    when something of it is there, 'missing' otherwise."""
    folder = repo_folder(cache, item)
    ref = folder / "refs" / (item.revision or "main")
    if not folder.exists():
        return "missing"
    if any((folder / "blobs").glob("*.incomplete")):
        return "partial"
    if not ref.is_file():  # nothing of this revision (another one may be there)
        return "missing"
    snapshot = folder / "snapshots" / ref.read_text().strip()
    if not snapshot.is_dir() or not any(snapshot.iterdir()):
        return "partial"
    if files is not None and any(not (snapshot / name).exists() for name in files):
        return "partial"
    if item.role == CONTENTS_ROLE and contents_problem(snapshot):
        return "partial"
    return "present"


def contents_problem(snapshot: Path) -> str | None:
    """What is missing of a full-content database's snapshot, read from its files alone (offline,
    the hub's file list is not known): no shard at all, or shard files missing between others."""
    from evaluator.search.index_check import contents_shards, missing_shards

    shards = contents_shards(snapshot)
    if not shards:
        return f"no shard_<i>.mdb files in {snapshot}"
    gaps = missing_shards(shards)
    if gaps:
        return (f"{len(gaps)} of {max(shards) + 1} shard files missing in {snapshot} ("
                + ", ".join(f"shard_{i}.mdb" for i in gaps[:5]) + (", ..." if len(gaps) > 5 else "") + ")")
    return None


def survey(items: list[Item], cache: Path, api) -> list[Row]:
    rows = []
    for item in items:
        files = None
        if api is not None:
            try:
                files = hub_files(api, item)
            except HubUnreachable:
                api = None  # asked once: the other sizes come from the table too
        if files is not None:
            size, source = float(sum(files.values())), "hub"
        elif item.repo_id in ESTIMATED_GB:
            size, source = ESTIMATED_GB[item.repo_id] * GB, "estimate"
        else:
            size, source = None, "unknown"
        rows.append(Row(item, size, source, local_state(cache, item, files)))
    return rows


def needed_bytes(rows: list[Row]) -> float:
    """Bytes still to download (a partial download counts whole: the resumable part is unknown)."""
    return sum(r.size or 0 for r in rows if r.state != "present")


def disk_problem(rows: list[Row], free: float, cache: Path) -> str | None:
    need = needed_bytes(rows) * (1 + DISK_MARGIN)
    if need <= free:
        return None
    unknown = [r.item.repo_id for r in rows if r.state != "present" and r.size is None]
    return (f"not enough free disk for the download into {cache}: {need / GB:.1f} GB needed "
            f"(the missing items plus {DISK_MARGIN:.0%}), {free / GB:.1f} GB free"
            + (f"; sizes unknown for {unknown}" if unknown else "")
            + ". Free some space or point HF_HUB_CACHE at a larger disk.")


def table(rows: list[Row]) -> str:
    lines = [f"{'what':<20} {'repository':<52} {'size':>9} {'from':<9} state"]
    for r in rows:
        size = f"{r.size / GB:.1f} GB" if r.size is not None else "?"
        name = r.item.repo_id + (f"@{r.item.revision}" if r.item.revision else "") + (" (gated)" if r.item.gated else "")
        lines.append(f"{r.item.role:<20} {name:<52} "
                     f"{size:>9} {r.source:<9} {r.state}")
    total = sum(r.size or 0 for r in rows)
    lines.append(f"total {total / GB:.1f} GB; still to download {needed_bytes(rows) / GB:.1f} GB")
    return "\n".join(lines)


def environment_lines(token_set: bool, endpoint: str, cache: Path, rows: list[Row]) -> list[str]:
    lines = [f"hub: {endpoint}", f"cache: {cache}",
             "token: " + ("set (HF_TOKEN or huggingface-cli login)" if token_set else "none")]
    gated = [r.item.repo_id for r in rows if r.item.gated and r.state != "present"]
    if gated:
        lines.append("gated: accept the licence on each model's page (https://huggingface.co/<repo>) with the "
                     "account whose token is used: " + ", ".join(gated))
        if not token_set:
            lines.append("without a token the gated models cannot download: run `huggingface-cli login` or "
                         "export HF_TOKEN first")
    return lines


def download(rows: list[Row], snapshot_download, print_=print) -> list[str]:
    """Download what is not present; returns one line per failure (the rest still downloads)."""
    failures = []
    for r in rows:
        if r.state == "present":
            continue
        print_(f"==> {r.item.role}: {r.item.repo_id}")
        try:
            snapshot_download(repo_id=r.item.repo_id, repo_type=r.item.repo_type, revision=r.item.revision,
                              ignore_patterns=list(r.item.skipped) or None)
        except Exception as exc:  # noqa: BLE001 - say which and why, then go on with the others
            why = type(exc).__name__
            if why == "GatedRepoError" or (r.item.gated and any(code in str(exc) for code in ("401", "403"))):
                why += ": accept the licence on the model page and log in (huggingface-cli login / HF_TOKEN)"
            elif why in ("LocalEntryNotFoundError", "ConnectionError", "ReadTimeout"):
                why += ": the hub could not be reached; run again, the download resumes"
            failures.append(f"{r.item.repo_id}: {why}")
    return failures


def main(argv: list[str] | None = None) -> int:
    from huggingface_hub import HfApi, constants, get_token, snapshot_download

    from evaluator.harness.resolved import resolve_settings
    from local_evaluation import add_run_args, run_settings

    parser = argparse.ArgumentParser(prog="python -m tools.fetch", description=__doc__.splitlines()[0])
    add_run_args(parser, profile="l40s")  # the run whose loads are fetched, named as local_evaluation.py names it
    parser.add_argument("--dry-run", action="store_true", help="list what is missing and its size; download nothing")
    parser.add_argument("--task", choices=["single-turn", "multi-turn"], action="append",
                        help="only this task's dataset (repeatable; default both)")
    args = parser.parse_args(argv)
    cache = Path(constants.HF_HUB_CACHE)
    try:
        run = resolve_settings(run_settings(args))
        items = plan(run, tuple(args.task or ("single-turn", "multi-turn")))
    except ValueError as exc:  # an unknown profile, a bad --set: one line, no traceback
        print(f"tools.fetch: {exc}", file=sys.stderr)
        return 2
    if not items:
        print(f"the {run.profile} profile loads nothing from the hub: nothing to fetch")
        return 0
    api = None if constants.HF_HUB_OFFLINE else HfApi()
    rows = survey(items, cache, api)
    for line in environment_lines(get_token() is not None, constants.ENDPOINT, cache, rows):
        print(line)
    print(table(rows))
    if any(r.source == "estimate" for r in rows):
        print("sizes marked 'estimate' come from tools/fetch.py's table: the hub did not answer for them")
    for r in rows:
        if r.item.role == CONTENTS_ROLE and r.state == "partial":
            snapshot = repo_folder(cache, r.item) / "snapshots"
            found = [contents_problem(s) for s in snapshot.iterdir()] if snapshot.is_dir() else []
            why = next((f for f in found if f), "a download that stopped")
            print(f"{r.item.repo_id} is partly downloaded: {why}; run again without --dry-run: the download resumes")
    missing = [r for r in rows if r.state != "present"]
    if args.dry_run:
        print(f"dry run: {len(missing)} of {len(rows)} to download" if missing else "dry run: everything is here")
        return 0
    if not missing:
        print("everything is here")
        return 0
    if constants.HF_HUB_OFFLINE:
        print("HF_HUB_OFFLINE is set: nothing can download; unset it to fetch", file=sys.stderr)
        return 2
    cache.mkdir(parents=True, exist_ok=True)
    problem = disk_problem(rows, shutil.disk_usage(cache).free, cache)
    if problem:
        print(problem, file=sys.stderr)
        return 2
    failures = download(rows, snapshot_download)
    for line in failures:
        print(f"failed: {line}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())

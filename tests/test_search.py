"""Which search a profile builds: the official ids passed through untouched and each index checked
before a model loads, the indices picked by one setting, a hub database never mixed with local
indices, --web-contents recorded. The real pipeline over the mini benchmark's indices (built per
session with EfficientNet-Lite0 and MiniLM): tests/full/test_search.py.
"""
from __future__ import annotations

import pytest

from evaluator.search import pipeline as search


def test_official_ids_pass_through_untouched(monkeypatch):
    seen, checked = [], []
    monkeypatch.setattr(search, "_pipeline", lambda *args: seen.append(args) or "pipeline")
    monkeypatch.setattr(search, "check_indices", lambda *args: checked.append(args))  # no real index here
    monkeypatch.setattr(search, "load_provider",  # a hub profile names no provider: nothing is built here
                        lambda name: pytest.fail("must not build official indices") if name else None)
    config = search.search_config("l40s")
    assert search.build_search_pipeline(config, web=False) == "pipeline"
    assert search.build_search_pipeline(config, web=True) == "pipeline"
    contents = search.search_config("l40s", web_contents=search.PROFILE_WEB_CONTENTS)  # a bare --web-contents
    assert search.build_search_pipeline(contents, web=True) == "pipeline"
    assert search.build_search_pipeline(contents, web=False) == "pipeline"  # Task 1 reads no pages
    # the relaunched facebookresearch/CRAG-MM local_evaluation.py (every split):
    #   search_api_web_hf_dataset_id = "crag-mm-2025/web-search-index-public-test"
    #   search_api_image_hf_dataset_id = "crag-mm-2025/image-search-index-public-test"
    image = ("openai/clip-vit-large-patch14-336", "crag-mm-2025/image-search-index-public-test")
    web = ("BAAI/bge-large-en-v1.5", "crag-mm-2025/web-search-index-public-test")
    assert seen == [
        (*image, None, None, None),
        (*image, *web, None),
        (*image, *web, "crag-mm-2025/web-search-contents-db-private-v0.1.2"),
        (*image, None, None, None),
    ]
    assert checked == seen  # each index is checked, with the model it must match, before models load
    seen.clear()
    search.build_search_pipeline(search.search_config("served", "validation"), web=True)
    assert seen == [("openai/clip-vit-large-patch14-336", "crag-mm-2025/image-search-index-validation",
                     "BAAI/bge-large-en-v1.5", "crag-mm-2025/web-search-index-validation", None)]


def test_one_setting_picks_the_indices_and_the_cpu_profile_keeps_its_own(monkeypatch):
    monkeypatch.setenv("CRAG_MM_INDICES", "validation")  # the environment no longer says which
    assert search.search_config("l40s").web_index == "crag-mm-2025/web-search-index-public-test"
    assert search.search_config("l40s", "validation").web_index == "crag-mm-2025/web-search-index-validation"
    assert search.search_config("cpu", "validation").image_index == "crag-mm-mini/image-search-index"
    with pytest.raises(ValueError, match="unknown indices 'test'"):
        search.search_config("l40s", "test")


def test_a_hub_contents_database_does_not_mix_with_local_indices():
    config = search.search_config("cpu", web_contents="crag-mm-2025/web-search-contents-db-private-v0.1.2")
    with pytest.raises(ValueError, match="mixing a local and a hub index"):
        search.build_search_pipeline(config)


def test_web_contents_flag_reaches_run_config():
    import dataclasses

    from evaluator.harness.resolved import resolve_settings
    from evaluator.settings import EvaluationSettings
    from local_evaluation import evaluation_parser

    def settings(*argv):
        options = vars(evaluation_parser().parse_args(list(argv)))
        options.pop("list_models")
        return EvaluationSettings(**options)

    def resolved_run(settings, profile):
        return resolve_settings(dataclasses.replace(settings, profile=profile))

    bare = settings("--web-contents")
    named = settings("--web-contents", "me/my-contents-db")
    assert settings().web_contents is None
    assert resolved_run(bare, "l40s").web_contents == "crag-mm-2025/web-search-contents-db-private-v0.1.2"
    assert resolved_run(bare, "cpu").web_contents == "crag-mm-mini/web-search-contents-db"
    assert resolved_run(named, "l40s").web_contents == "me/my-contents-db"
    task1 = dataclasses.replace(bare, suppress_web_search_api=True)
    assert resolved_run(task1, "l40s").web_contents is None  # image search only: no page is read
    assert resolved_run(dataclasses.replace(bare, search="none"), "l40s").web_contents is None


def test_an_index_read_offline_says_it_comes_from_the_local_cache(tmp_path, capsys):
    """The web index's loader prints where it read the index from; offline, that is the local
    cache (the package's own line would say "Loading web search data from Hugging Face...")."""
    import chromadb

    from evaluator.search.paged_metadata import _mock_web_class

    repo = "someone/web-index"
    folder = tmp_path / "hub" / "datasets--someone--web-index"
    snapshot = folder / "snapshots" / "0123abcd"
    snapshot.mkdir(parents=True)
    (folder / "refs").mkdir()
    (folder / "refs" / "main").write_text("0123abcd")
    collection = chromadb.PersistentClient(path=str(snapshot)).create_collection("web_search_embeddings")
    collection.add(ids=["0", "1"], embeddings=[[0.1, 0.2], [0.3, 0.1]],
                   metadatas=[{"page_name": f"p{i}", "page_snippet": "s", "page_url": f"https://x/{i}"} for i in (0, 1)])
    with search.offline_hub(tmp_path / "hub"):
        web = _mock_web_class()(None, None, repo)
    assert capsys.readouterr().out == f"web search index {repo}: 2 records, from the local cache, offline ({snapshot})\n"
    assert web.index_to_metadata["1"]["page_url"] == "https://x/1"

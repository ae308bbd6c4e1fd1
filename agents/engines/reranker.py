"""Relevance scores in [0, 1] for (query, passage) pairs, one model call per batch.

- `CrossEncoderReranker`: BAAI/bge-reranker-v2-m3 (the paper's reranker; l40s profile), run
  directly with transformers and scored as FlagEmbedding's FlagReranker scores with
  `normalize=True` (the sigmoid of the logit), without its per-pair host work.
  With `int8=True` its Linear layers are quantized to int8 at load (PyTorch dynamic
  quantization: int8 weights, activations quantized per batch), on the CPU, for a laptop.
- `MiniLMReranker`: all-MiniLM-L6-v2 as a bi-encoder stand-in for the cpu profile, where a
  base-size cross-encoder takes ~18 s for 30 pairs. Cosine similarity is mapped to [0, 1] as
  (cos + 1) / 2, so the MAD threshold keeps its meaning of "a score in [0, 1]".
- `ServerReranker` (`reranker_backend = "server"`): the cross-encoder behind a Cohere-style
  `POST {base_url}/rerank`, as `vllm serve BAAI/bge-reranker-v2-m3 --task score` serves it (and
  Infinity). Shapes read from vLLM 0.10.1.1 (entrypoints/openai/protocol.py `RerankRequest`,
  `RerankResponse`; serving_score.py): request {"model", "query", "documents": [str]}; answer
  {"results": [{"index", "document": {"text"}, "relevance_score"}]}, sorted by score, so each
  score is placed by its "index". vLLM's score for a one-label classifier is the sigmoid of the
  logit (model_executor/layers/pooler.py, `PoolerClassify`), as FlagReranker's normalize=True. One request per distinct query, all at once.
"""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

from agents.engines.base import Ledger, Reranker, seconds_left
from agents.engines.local_models import minilm_dir, resolve_model


class CrossEncoderReranker(Reranker):
    """A cross-encoder with one relevance logit (bge-reranker-v2-m3), run directly.

    Scores equal FlagEmbedding's `FlagReranker.compute_score(pairs, normalize=True)` (the
    sigmoid of the logit; tests/test_reranker.py compares the two): the query is cut to 3/4 of
    `max_length` tokens, the passage so that the pair with its special tokens fits `max_length`.
    What differs is the host work (on the H100, 175 pairs/s through FlagReranker against 1,266 for
    the bare model on an H100): each distinct text is tokenized once (a batch repeats q' for
    every chunk), the pair is assembled from ids instead of FlagEmbedding's decode and
    re-tokenize, the pairs are sorted by length so each model batch is padded only to its own
    longest pair, and the scores stay on the device until one copy at the end.
    """

    def __init__(self, model: str, ledger: Ledger | None = None, *, use_fp16: bool | None = None,
                 batch_size: int = 32, max_length: int = 512, int8: bool = False):
        super().__init__(model, ledger)
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        from agents.engines.local_models import dtype_argument

        # PyTorch's dynamic quantization has CPU kernels only.
        cuda = torch.cuda.is_available() and not int8
        # fp16 halves memory and time on a GPU; on a CPU it is slower and less accurate.
        fp16 = cuda if use_fp16 is None else (use_fp16 and cuda)
        self.device = "cuda:0" if cuda else "cpu"
        self.batch_size = batch_size
        self.max_length = max_length
        path = resolve_model(model)
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        # Loaded in fp32 and then halved, as FlagReranker does (the same rounding of the weights).
        self.net = AutoModelForSequenceClassification.from_pretrained(path, **dtype_argument(torch.float32))
        if fp16:
            self.net.half()
        self.net.to(self.device).eval()
        if int8:
            self.net = quantize_int8(self.net)
        self.pair_specials = self.tokenizer.num_special_tokens_to_add(pair=True)

    def pair_ids(self, pairs: list[tuple[str, str]]) -> list[list[int]]:
        """Model input ids of each pair, truncated as FlagReranker truncates them."""
        texts = list(dict.fromkeys(t for pair in pairs for t in pair))
        # Each distinct text once, cut at max_length; a query is then cut further (to its first
        # 3/4 * max_length tokens, what tokenizing it with that limit gives).
        encoded = dict(zip(texts, self.tokenizer(texts, add_special_tokens=False, truncation=True,
                                                 max_length=self.max_length)["input_ids"]))
        query_max = self.max_length * 3 // 4
        out = []
        for q, p in pairs:
            q_ids = encoded[q][:query_max]
            room = max(0, self.max_length - self.pair_specials - len(q_ids))
            out.append(self.tokenizer.build_inputs_with_special_tokens(q_ids, encoded[p][:room]))
        return out

    def _score(self, pairs: list[tuple[str, str]]) -> list[float]:
        import torch

        if not pairs:
            return []
        ids = self.pair_ids(pairs)
        order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
        pad = self.tokenizer.pad_token_id
        logits = []
        with torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                rows = [ids[i] for i in order[start:start + self.batch_size]]
                width = len(rows[0])  # sorted longest first: the batch's longest pair
                input_ids = torch.full((len(rows), width), pad, dtype=torch.long)
                mask = torch.zeros((len(rows), width), dtype=torch.long)
                for r, row in enumerate(rows):  # right padding, as FlagReranker's tokenizer pads
                    input_ids[r, :len(row)] = torch.tensor(row)
                    mask[r, :len(row)] = 1
                out = self.net(input_ids=input_ids.to(self.device), attention_mask=mask.to(self.device))
                logits.append(out.logits.view(-1).float())
            scores = torch.sigmoid(torch.cat(logits)).cpu().tolist()
        result = [0.0] * len(pairs)
        for rank, i in enumerate(order):
            result[i] = float(scores[rank])
        return result


def quantize_int8(net):
    """`net` with every nn.Linear replaced by its dynamically quantized int8 twin (per-tensor
    weight scales; activations quantized per batch), for the CPU. The embeddings stay float32:
    they are looked up, not multiplied, and quantizing them saves memory, not time."""
    import warnings

    import torch

    with warnings.catch_warnings():
        # torch 2.13 (our pin) warns that torch.ao.quantization and its quantized tensors move to
        # torchao (not installed here) and "will be removed in 2.10"; they still ship and work.
        warnings.filterwarnings("ignore", message=r".*torch\.ao\.quantization is deprecated", category=DeprecationWarning)
        warnings.filterwarnings("ignore", message=r".*quantize_per_tensor", category=UserWarning)
        return torch.ao.quantization.quantize_dynamic(net, {torch.nn.Linear}, dtype=torch.qint8)


class MiniLMReranker(Reranker):
    def __init__(self, model: str = "minilm", ledger: Ledger | None = None, *, batch_size: int = 64):
        super().__init__(model, ledger)
        import torch
        from sentence_transformers import SentenceTransformer

        path = minilm_dir() if model == "minilm" else resolve_model(model)
        self.encoder = SentenceTransformer(path, device="cuda" if torch.cuda.is_available() else "cpu")
        self.batch_size = batch_size

    def _score(self, pairs: list[tuple[str, str]]) -> list[float]:
        # Each distinct text is embedded once: a reranking batch repeats the same query many times.
        texts = list(dict.fromkeys(t for pair in pairs for t in pair))
        vectors = self.encoder.encode(texts, batch_size=self.batch_size, normalize_embeddings=True,
                                      convert_to_numpy=True, show_progress_bar=False)
        index = {t: i for i, t in enumerate(texts)}
        out = []
        for q, p in pairs:
            cos = float(vectors[index[q]] @ vectors[index[p]])
            out.append(min(1.0, max(0.0, (cos + 1.0) / 2.0)))
        return out


class ServerReranker(Reranker):
    def __init__(self, model: str, ledger: Ledger | None = None, *, base_url: str, served_name: str | None = None,
                 max_in_flight: int = 32, timeout_s: float = 120.0):
        super().__init__(model, ledger)
        from agents.engines.served import Endpoint

        self.endpoint = Endpoint(base_url, max_in_flight=max_in_flight, timeout_s=timeout_s)
        self.served_name = served_name or model
        self.max_in_flight = max(1, int(max_in_flight))

    def _score(self, pairs: list[tuple[str, str]]) -> list[float]:
        by_query: dict[str, list[int]] = {}
        for i, (query, _) in enumerate(pairs):
            by_query.setdefault(query, []).append(i)
        end = time.monotonic() + self.endpoint.budget_s(seconds_left())
        scores = [0.0] * len(pairs)
        with ThreadPoolExecutor(max_workers=min(self.max_in_flight, len(by_query))) as pool:
            jobs = {pool.submit(self._rank, query, [pairs[i][1] for i in rows], end): rows
                    for query, rows in by_query.items()}
            for job, rows in jobs.items():
                for row, score in zip(rows, job.result()):
                    scores[row] = score
        return scores

    def _rank(self, query: str, documents: list[str], end: float) -> list[float]:
        payload = {"model": self.served_name, "query": query, "documents": documents}
        bodies = self.endpoint.post("/rerank", payload, end - time.monotonic())
        body = bodies[0] if bodies else {}
        out: list[float | None] = [None] * len(documents)
        for result in body.get("results") or []:
            index = result.get("index")
            if isinstance(index, int) and 0 <= index < len(documents):
                out[index] = float(result["relevance_score"])
        if any(score is None for score in out):
            raise RuntimeError(f"{self.endpoint}: /rerank scored {sum(s is not None for s in out)} "
                               f"of {len(documents)} documents")
        return out


def build_cross_encoder(models, ledger: Ledger) -> Reranker:
    return CrossEncoderReranker(models.reranker_model, ledger, int8=models.reranker_int8)


def build_minilm(models, ledger: Ledger) -> Reranker:
    return MiniLMReranker(models.reranker_model, ledger)


def build_served(models, ledger: Ledger) -> Reranker:
    from agents.engines.served import served_endpoint

    url, name = served_endpoint(models, "reranker")
    return ServerReranker(models.reranker_model, ledger, base_url=url, served_name=name,
                          max_in_flight=models.served_max_in_flight, timeout_s=models.served_timeout_s)

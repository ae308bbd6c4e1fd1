"""Stage 4: turn search hits into paragraph chunks for the reranker.

Paper: the description / caption / summary fields of KG entities and the web snippets, split
into paragraphs. The official image KG holds Wikipedia infobox fields in wiki markup instead
(mostly no description at all), so with `chunker="infobox"` (default) every entity becomes
chunks that carry its name:

- description / caption / summary, where present, are kept as the paper says, one chunk per
  paragraph (prefixed with the entity name when the paragraph does not say it);
- every other informative field is cleaned of wiki markup (`agents.stages.wikitext`) and
  written "Name: field: value"; `infobox_fields_per_chunk` fields share one chunk;
- layout fields (image, image_size, alt, mapframe*, coordinates, ...) and values with nothing
  readable left are dropped;
- for each image hit scoring at least `image_score_floor`, the entity name alone is a chunk
  ("The photo may show: X"), so "what is this?" has context.

Web snippets: HTML entities unescaped, the repeated runs of the official snippets (a search
extract ending in "...", then the same sentences in full) removed, then packed into
paragraphs of at most `max_chunk_chars` characters on sentence boundaries.

Full pages (`page_result`, the HTML the full-content web database adds to a hit): the page's
visible text (`agents.stages.pagetext`, at most `page_max_html_chars` of HTML read) is packed
the same way, without the sentences its snippet already gave, and at most `page_max_chunks` of
its chunks are kept: those sharing the most words with q', in page order (a multi-hop answer is
often far down a page, where the first chunks would never reach). Each names its page's title.

`chunker="paper_fields"` is the paper's chunker as it was (only the three fields, raw text),
kept to measure against.

Passages a harness hands over (`chunks_from_passage`) go through the same chunkers: a search hit
given as JSON is chunked as that hit; facebookresearch/CRAG-MM's context block (its entity
names, "Entity N: name" + JSON attributes, and <DOC> web snippets, wrapped in its instructions)
is read back into entities and web hits and chunked as ours, its instruction prose dropped; any
other text is packed like a web snippet. Every passage chunk is at most `max_chunk_chars` long.
"""
from __future__ import annotations

import html
import json
import re

from agents.stages.pagetext import page_text
from agents.stages.wikitext import clean_wikitext

PAPER_FIELDS = ("description", "caption", "summary")

# Infobox fields that only lay the box out; none says anything about the entity.
LAYOUT_FIELDS = {
    "image", "image_size", "imagesize", "image_upright", "upright", "alt", "image_alt", "img",
    "photo", "logo", "logo_size", "logo_alt", "logo_upright", "signature", "signature_alt",
    "signature_size", "seal", "seal_size", "coordinates", "coordinates_footnotes", "coords",
    "coord", "coor", "map", "map_type", "map_size", "map_alt", "map_relief", "map_dot_label",
    "map_image", "map_width", "pushpin_map", "pushpin_map_alt", "pushpin_map_caption",
    "pushpin_relief", "pushpin_label", "pushpin_label_position", "pushpin_mapsize",
    "label_position", "position", "embed", "module", "child", "bodystyle", "float", "width",
    "onlysourced", "footnotes", "dot_label", "image_map", "image_map_size", "image_map_alt",
    "image_skyline", "imagealt", "image_caption_align", "qid", "wikidata",
}
LAYOUT_PREFIXES = ("mapframe", "pushpin_", "image_", "map_", "logo_", "signature_", "coordinates_")
LAYOUT_SUFFIXES = ("_size", "_alt", "_upright", "_width", "_px", "_image")
_IMAGE_FILE = re.compile(r"^[^|]*\.(?:jpe?g|png|svg|gif|tiff?|webp)$", re.I)
_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")
_ELLIPSIS = re.compile(r"(?:\.\.\.|…)\s*$")
_WORD = re.compile(r"[a-z0-9]+")


# --- generic paragraph helpers -----------------------------------------------------------------

def paragraphs(text: str, max_chars: int) -> list[str]:
    """The paper's split: one paragraph per line, white space folded, cut at max_chars."""
    out = []
    for line in str(text).splitlines():
        line = " ".join(line.split())
        if line:
            out.append(line[:max_chars])
    return out


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(" ".join(text.split())) if s.strip()]


def pack(parts: list[str], max_chars: int, joiner: str = " ") -> list[str]:
    """Greedily join consecutive parts into paragraphs of at most max_chars; a single part that
    is longer is cut at a word boundary."""
    out, current = [], ""
    for part in parts:
        while len(part) > max_chars:
            cut = part.rfind(" ", 0, max_chars)
            cut = cut if cut > max_chars // 2 else max_chars
            if current:
                out.append(current)
                current = ""
            out.append(part[:cut].rstrip())
            part = part[cut:].lstrip()
        if not part:
            continue
        if current and len(current) + len(joiner) + len(part) <= max_chars:
            current += joiner + part
        else:
            if current:
                out.append(current)
            current = part
    if current:
        out.append(current)
    return out


# --- image KG ----------------------------------------------------------------------------------

def entity_attributes(entity: dict) -> dict:
    attrs = entity.get("entity_attributes") or {}
    if isinstance(attrs, str):  # some index builds store the attributes as JSON text
        try:
            attrs = json.loads(attrs)
        except ValueError:
            attrs = {"description": attrs}
    return attrs if isinstance(attrs, dict) else {}


def is_layout_field(key: str) -> bool:
    key = str(key).strip().lower().replace(" ", "_")
    if key in ("caption", "image_caption"):  # the paper keeps captions: they describe the photo
        return False
    return key in LAYOUT_FIELDS or key.startswith(LAYOUT_PREFIXES) or key.endswith(LAYOUT_SUFFIXES)


def field_label(key: str) -> str:
    return " ".join(str(key).replace("_", " ").split())


def _names_match(a: str, b: str) -> bool:
    return _WORD.findall(a.lower()) == _WORD.findall(b.lower())


def entity_chunks(entity: dict, max_chars: int, fields_per_chunk: int = 1,
                  paper_fields: tuple[str, ...] = PAPER_FIELDS) -> list[str]:
    """Name-bearing chunks of one entity (see the module docstring)."""
    paper_fields = tuple(f.lower() for f in paper_fields)
    name = " ".join(str(entity.get("entity_name") or "").split())
    chunks, facts = [], []
    for key, raw in entity_attributes(entity).items():
        key_l = str(key).strip().lower()
        if key_l not in paper_fields and is_layout_field(key_l):
            continue
        if isinstance(raw, str) and _IMAGE_FILE.match(raw.strip()):
            continue  # an image file name under a field we do not know as layout
        value = clean_wikitext(raw)
        if not value:
            continue
        if key_l in paper_fields:
            for paragraph in paragraphs(html.unescape(str(raw)), max_chars):
                paragraph = clean_wikitext(paragraph) or paragraph
                if name and name.lower() not in paragraph.lower():
                    paragraph = f"{name}: {paragraph}"
                chunks.extend(pack([paragraph], max_chars))
            continue
        if key_l == "name" and _names_match(value, name):
            continue  # says nothing the chunk prefix does not
        facts.append(f"{field_label(key)}: {value}")
    prefix = f"{name}: " if name else ""
    step = max(1, int(fields_per_chunk))
    for i in range(0, len(facts), step):
        text = prefix + "; ".join(facts[i:i + step])
        chunks.extend(pack([text], max_chars))
    return chunks


def chunks_from_image_hit(hit: dict, cfg) -> list[str]:
    chunks = []
    for entity in hit.get("entities") or []:
        if not isinstance(entity, dict):
            continue
        if cfg.retrieval.chunker == "paper_fields":
            wanted = {f.lower() for f in cfg.retrieval.chunk_fields}
            for key, value in entity_attributes(entity).items():
                if str(key).lower() in wanted and value:
                    chunks.extend(paragraphs(value, cfg.retrieval.max_chunk_chars))
        else:
            chunks.extend(entity_chunks(entity, cfg.retrieval.max_chunk_chars, cfg.retrieval.infobox_fields_per_chunk,
                                        cfg.retrieval.chunk_fields))
    return chunks


def hit_entity_names(hit: dict) -> list[str]:
    return [" ".join(str(e.get("entity_name") or "").split())
            for e in hit.get("entities") or [] if isinstance(e, dict) and e.get("entity_name")]


def confident_names(hits: list[dict], floor: float, limit: int | None = None) -> list[str]:
    """Distinct entity names of the image hits scoring at least `floor`, best hit first."""
    names: list[str] = []
    for hit in hits:
        try:
            score = float(hit.get("score"))
        except (TypeError, ValueError):
            continue
        if score < floor:
            continue
        for name in hit_entity_names(hit):
            if name and name not in names:
                names.append(name)
    return names[:limit] if limit is not None else names


def name_chunk(name: str) -> str:
    return f"The photo may show: {name}"


# --- web snippets ------------------------------------------------------------------------------

def _words(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


def dedupe_sentences(text: str) -> list[str]:
    """Sentences of a snippet without its repeats: a sentence seen before is dropped, and so
    is a search-engine extract (ending in "..." or "…") whose words reappear in the snippet."""
    found = sentences(text)
    kept, seen = [], set()
    for i, sentence in enumerate(found):
        key = _words(sentence)
        if not key or key in seen:
            continue
        if _ELLIPSIS.search(sentence):
            stem = _words(_ELLIPSIS.sub("", sentence))
            if stem and (" " + stem) in " " + _words(" ".join(found[i + 1:])):
                continue  # the extract's text comes again in full further on
        seen.add(key)
        kept.append(sentence)
    return kept


def clean_snippet(snippet: str) -> str:
    text = html.unescape(html.unescape(str(snippet)))  # some snippets are escaped twice
    return re.sub(r"<[^<>]{0,200}>", " ", text)  # stray tags


def page_title(page_name: str) -> str:
    """"Title - Site" / "Title | Site" -> "Title" (the site says nothing about the subject)."""
    name = " ".join(clean_snippet(page_name).split())
    for separator in (" | ", " - ", " – ", " — "):
        head, sep, _ = name.rpartition(separator)
        if sep and head:
            return head
    return name


def best_chunks(chunks: list[str], query: str, limit: int) -> list[str]:
    """At most `limit` chunks: those sharing the most distinct words with `query` (earlier first
    on ties), kept in their order on the page."""
    if len(chunks) <= limit:
        return chunks
    wanted = set(_WORD.findall(query.lower()))
    overlap = [len(wanted & set(_WORD.findall(chunk.lower()))) for chunk in chunks]
    picked = sorted(sorted(range(len(chunks)), key=lambda i: (-overlap[i], i))[:limit])
    return [chunks[i] for i in picked]


def page_body_chunks(page_html: str, known: list[str], query: str, cfg, max_chars: int) -> list[str]:
    """The chunks of a full page's text: its sentences, those in `known` (the snippet's) left
    out, packed paragraph by paragraph, at most cfg.retrieval.page_max_chunks of them (best_chunks)."""
    seen = {_words(s) for s in known}
    parts = []
    for line in page_text(page_html, cfg.retrieval.page_max_html_chars).splitlines():
        fresh = [s for s in sentences(line) if _words(s) and _words(s) not in seen]
        seen.update(_words(s) for s in fresh)
        if fresh:
            parts.append(" ".join(fresh))
    chunks = []
    for part in parts:  # a paragraph is packed alone unless it is short (headings, menu items)
        if chunks and len(chunks[-1]) + 1 + len(part) <= max_chars and len(part) < max_chars // 3:
            chunks[-1] += " " + part
        else:
            chunks.extend(pack(sentences(part), max_chars))
    return best_chunks(chunks, query, cfg.retrieval.page_max_chunks)


def chunks_from_web_hit(hit: dict, cfg, query: str = "") -> list[str]:
    """The snippet's chunks, then (when the hit carries its page, `page_result`) the page body's;
    `query` (q') picks which body chunks a long page keeps."""
    snippet = hit.get("page_snippet") or ""
    page_html = hit.get("page_result") if cfg.retrieval.web_page_text else None
    if cfg.retrieval.chunker == "paper_fields":
        r = cfg.retrieval
        body = paragraphs(page_text(page_html, r.page_max_html_chars), r.max_chunk_chars) if page_html else []
        return paragraphs(snippet, r.max_chunk_chars) + best_chunks(body, query, r.page_max_chunks)
    title = page_title(hit.get("page_name") or "") if cfg.retrieval.web_title_prefix else ""
    prefix = f"{title}: " if title else ""
    # Each paragraph names its page, as KG chunks name their entity: a later passage of
    # the page often refers to its subject only as "it".
    room = max(100, cfg.retrieval.max_chunk_chars - len(prefix))
    known = dedupe_sentences(clean_snippet(snippet))
    chunks = pack(known, room)
    if page_html:  # the page's <title> and heading say no more than the prefix
        name = " ".join(clean_snippet(hit.get("page_name") or "").split())
        chunks += page_body_chunks(page_html, known + [name, page_title(name)], query, cfg, room)
    return [prefix + paragraph for paragraph in chunks]


def dedupe(chunks: list[str], sources: list[str]) -> tuple[list[str], list[str]]:
    seen, kept, kept_sources = set(), [], []
    for chunk, source in zip(chunks, sources):
        key = chunk.lower()
        if key not in seen:
            seen.add(key)
            kept.append(chunk)
            kept_sources.append(source)
    return kept, kept_sources


# --- passages a harness hands over -------------------------------------------------------------

# The layout of facebookresearch/CRAG-MM's context block (utils/retriever.py there).
_HARNESS_ENTITY = re.compile(r"^Entity \d+: (?P<name>[^\n]*)\nEntity attributes: ", re.M)
_HARNESS_DOC = re.compile(
    r"<DOC>\s*(?:Webpage ID: \[\d+\]\s*)?Title: (?P<title>[^\n]*)\nWeb content snippet: (?P<snippet>.*?)\n</DOC>",
    re.S,
)
_HARNESS_NAMES = re.compile(r"entity names retrieved[^:\n]*:[ \t]*(?P<names>[^\n]*)", re.I)
_HARNESS_MARKERS = ("<search results>", "<DOC>", "\nEntity attributes: ")


def bounded(chunks: list[str], max_chars: int) -> list[str]:
    """Chunks of at most max_chars (a longer one, e.g. under a huge title or name, is re-packed)."""
    out = []
    for chunk in chunks:
        out.extend(pack([chunk], max_chars) if len(chunk) > max_chars else [chunk])
    return out


def _listed_names(line: str, known: list[str]) -> list[str]:
    """The names of the harness's ", "-joined name list: the entity names it also gave attributes
    for first (they may hold commas themselves), the rest split on ", "."""
    line = line.strip().rstrip(".")
    found = []
    for name in known:
        if name and name in line and name not in found:
            found.append(name)
            line = line.replace(name, "")
    found += [n.strip() for n in line.split(", ") if n.strip() and n.strip() not in found]
    return found


def harness_block_hits(text: str) -> tuple[list[str], list[dict], list[dict]]:
    """(entity names, image hits, web hits) read back from a CRAG-MM context block."""
    decoder = json.JSONDecoder()
    entities = []
    for match in _HARNESS_ENTITY.finditer(text):
        start = match.end()
        try:
            attributes, _ = decoder.raw_decode(text, start)
        except ValueError:  # its fallback writes str(attributes): keep that text as a description
            attributes = text[start:text.find("\n\n", start) if "\n\n" in text[start:] else len(text)]
        entities.append({"entity_name": match.group("name").strip(), "entity_attributes": attributes})
    known = [e["entity_name"] for e in entities]
    listed = _HARNESS_NAMES.search(text)
    names = _listed_names(listed.group("names"), known) if listed else known
    web = [{"page_name": m.group("title"), "page_snippet": m.group("snippet")} for m in _HARNESS_DOC.finditer(text)]
    return names, [{"entities": entities}] if entities else [], web


def _json_hit(text: str) -> dict | None:
    if not text.lstrip().startswith("{"):
        return None
    try:
        hit = json.loads(text)
    except ValueError:
        return None
    return hit if isinstance(hit, dict) and ("entities" in hit or "page_snippet" in hit) else None


def chunks_from_passage(text: str, cfg) -> tuple[list[str], list[str]]:
    """(name chunks, other chunks) of one handed-over passage, as our own retrieval cuts the same
    content (the caller puts every passage's name chunks first, as s3 does with its hits')."""
    text = str(text)
    names: list[str] = []
    image_hits: list[dict] = []
    web_hits: list[dict] = []
    hit = _json_hit(text)
    if hit is not None:
        if "entities" in hit:
            image_hits = [hit]
            names = confident_names([hit], cfg.retrieval.image_score_floor)
        else:
            web_hits = [hit]
    elif any(marker in text for marker in _HARNESS_MARKERS):
        names, image_hits, web_hits = harness_block_hits(text)
    if hit is None and not (names or image_hits or web_hits):  # plain text, or a block we cannot read
        web_hits = [{"page_snippet": text}]
    lead = [name_chunk(name) for name in names] if cfg.retrieval.chunker != "paper_fields" else []
    chunks = []
    for image_hit in image_hits:
        chunks += chunks_from_image_hit(image_hit, cfg)
    for web_hit in web_hits:
        chunks += chunks_from_web_hit(web_hit, cfg)
    return (bounded([c for c in lead if c.strip()], cfg.retrieval.max_chunk_chars),
            bounded([c for c in chunks if c.strip()], cfg.retrieval.max_chunk_chars))

"""Wiki markup of infobox values -> plain text a reader (and a reranker) can use.

The official image KG stores each entity's Wikipedia infobox fields as raw wiki text, e.g.
`{{convert|870|ft|m|0|abbr|=|on}}` or `[[WSP Group|WSP Cantor Seinuk]]`. `clean_wikitext` turns
such a value into "870 ft" / "WSP Cantor Seinuk":

- comments, `<ref>...</ref>` and `<ref .../>` are removed first (they hold citation templates);
- links and templates are resolved innermost first, so links inside templates and templates
  inside templates (or inside link labels) come out right: `[[target|label]]` -> label,
  `[[target]]` -> target, `[[File:...]]` / `[[Category:...]]` -> nothing, `[url label]` -> label;
- templates with a meaning a reader needs are rendered (convert, URL, dates, lists, lang,
  nowrap, ...); templates with none (coord, citations, flag icons, footnotes) are dropped; any
  other template becomes its positional parameters;
- `<br />` becomes "; ", other HTML tags are stripped (their text kept), bold/italic quotes are
  removed, HTML entities are unescaped and white space is folded.

Named template parameters arrive both as `abbr=on` and split into `abbr|=|on` (both occur in
the official dump); the two forms are read alike.
"""
from __future__ import annotations

import html
import re

SEPARATOR = "; "  # what a <br /> or a list break becomes inside one value

_COMMENT = re.compile(r"<!--.*?(?:-->|$)", re.S)
_REF = re.compile(r"<ref\b[^>/]*/>|<ref\b[^>]*>.*?(?:</ref\s*>|$)", re.S | re.I)
_BR = re.compile(r"<br\s*/?\s*>|</br\s*>", re.I)
_TAG = re.compile(r"</?[a-zA-Z][^<>]*>")
_INNER_LINK = re.compile(r"\[\[([^\[\]{}]*)\]\]")
_INNER_TEMPLATE = re.compile(r"\{\{([^{}\[\]]*)\}\}")
_EXTERNAL_LINK = re.compile(r"\[(?:https?:)?//([^\s\[\]]+)(?:\s+([^\[\]]*))?\]")
_QUOTES = re.compile(r"'{2,}")
_BULLET = re.compile(r"(?:^|\n)\s*[*#:;]+\s*")
_NAMED_KEY = re.compile(r"^\s*[A-Za-z_][\w \-]*\s*$")

_MONTHS = ("January February March April May June July August September October November "
           "December").split()
_UNITS = {"sqft": "sq ft", "sqmi": "sq mi", "sqkm": "km2", "m2": "m2", "km2": "km2", "ha": "ha",
          "acre": "acres", "ft": "ft", "m": "m", "km": "km", "mi": "mi", "in": "in", "cm": "cm",
          "mm": "mm", "lb": "lb", "kg": "kg", "t": "t", "ST": "short tons", "LT": "long tons",
          "mph": "mph", "km/h": "km/h", "kn": "kn", "C": "°C", "F": "°F", "m3": "m3", "L": "L",
          "hp": "hp", "kW": "kW"}
_RANGE_WORDS = {"-", "–", "to", "and", "or", "by", "x", "×", "+/-", "±", "to(-)"}

# Template names (lower case, "_" -> " ") grouped by what they become.
_DROPPED = {"coord", "coor", "location map", "flagicon", "flag icon", "refn", "efn", "efn-ua",
            "sfn", "sfnp", "citation needed", "cn", "fact", "better source needed", "ref", "r",
            "reflist", "notelist", "citation", "dead link", "when", "update needed", "clarify",
            "main", "see also", "commons category", "infobox mapframe", "wikidata", "short description",
            "italic title", "pp", "use dmy dates", "use mdy dates", "increase", "decrease", "steady"}
_LISTS = {"ubl", "ublist", "unbulleted list", "plainlist", "plain list", "flatlist", "flat list",
          "hlist", "bulleted list", "bulleted", "blist", "ordered list", "collapsible list",
          "enum", "unbulleted", "indented plainlist", "cslist", "comma separated entries",
          "pagelist"}
_DATES = {"start date", "end date", "birth date", "death date", "start date and age",
          "end date and age", "birth date and age", "death date and age", "birth-date", "dob",
          "film date", "release date", "date", "start and end dates", "opening date",
          "start date and years ago", "bda", "dda", "dts", "death year and age", "birth year and age"}
_URLS = {"url", "official url", "official website", "official site", "website", "webarchive url"}
_CONVERTS = {"convert", "cvt", "convinfobox"}
_SECOND_PARAM = {"lang", "transl", "transliteration", "iast"}
_FIRST_PARAM = {"nowrap", "nobr", "small", "smaller", "big", "larger", "resize", "nobold", "noitalic",
                "abbr", "abbrlink", "sc", "smallcaps", "lower", "upper", "uc", "lc", "ucfirst", "lcfirst", "flag", "flagcountry",
                "flagu", "flag country", "nowrap begin", "tooltip", "keypress", "sic", "not a typo",
                "proper name", "visible anchor", "anchor", "ill", "interlanguage link", "lang-zh",
                "zh", "nihongo", "ruby", "abbr2", "math", "mvar", "var", "nbsp2", "linktext",
                "subst", "br separated entries", "script"}
_LITERAL = {"nbsp": " ", "ndash": " – ", "mdash": " — ", "snd": " – ", "spaced ndash": " – ",
            "•": " • ", "middot": " · ", "dot": " · ", "·": " · ", "-": "", "!": "|", "=": "=",
            "pipe": "|", "clear": "", "break": SEPARATOR, "br": SEPARATOR, "-?": ""}


def _split_params(body: str) -> tuple[str, list[str], dict[str, str]]:
    """Template body -> (name, positional parameters, named parameters)."""
    parts = [p.strip() for p in body.split("|")]
    name = " ".join(parts[0].replace("_", " ").split()).lower()
    # The dump's split form: `abbr|=|on` is the named parameter abbr=on.
    merged: list[str] = []
    rest = parts[1:]
    i = 0
    while i < len(rest):
        if i + 1 < len(rest) and rest[i + 1] == "=":
            value = rest[i + 2] if i + 2 < len(rest) else ""
            merged.append(f"{rest[i]}={value}")
            i += 3
        else:
            merged.append(rest[i])
            i += 1
    positional, named = [], {}
    for part in merged:
        key, sep, value = part.partition("=")
        if sep and _NAMED_KEY.match(key):
            named[key.strip().lower()] = value.strip()
        else:
            positional.append(part)
    return name, positional, named


def _number(text: str) -> str:
    """Thousands separators for plain integers, as {{convert}} prints them."""
    if re.fullmatch(r"\d{4,}", text):
        return f"{int(text):,}"
    return text


def _convert(positional: list[str]) -> str:
    if not positional:
        return ""
    if len(positional) >= 4 and positional[1] in _RANGE_WORDS:
        value = f"{_number(positional[0])} {positional[1]} {_number(positional[2])}"
        unit = positional[3]
    else:
        value, unit = _number(positional[0]), positional[1] if len(positional) > 1 else ""
    scale = re.match(r"e(3|6|9)(.+)$", unit)  # {{convert|57.91|e6km|...}}: millions of km
    if scale:
        unit = {"3": "thousand", "6": "million", "9": "billion"}[scale.group(1)] + " " + _UNITS.get(scale.group(2), scale.group(2))
    return f"{value} {_UNITS.get(unit, unit)}".strip()


def _date(positional: list[str]) -> str:
    numbers = [p for p in positional if re.fullmatch(r"-?\d{1,4}", p)]
    if not numbers:  # e.g. {{start date|1851}} written as text, or {{date|18 October 1851}}
        return positional[0] if positional else ""
    year = numbers[0]
    month = int(numbers[1]) if len(numbers) > 1 and 1 <= int(numbers[1]) <= 12 else None
    day = int(numbers[2]) if len(numbers) > 2 and 1 <= int(numbers[2]) <= 31 else None
    if month is None:
        return year
    if day is None:
        return f"{_MONTHS[month - 1]} {year}"
    return f"{day} {_MONTHS[month - 1]} {year}"


def _list_items(positional: list[str]) -> list[str]:
    items = []
    for part in positional:
        for item in _BULLET.split(part):
            item = item.strip()
            if item:
                items.append(item)
    return items


def render_template(body: str) -> str:
    """One template with no templates or links left inside it -> its text."""
    name, positional, named = _split_params(body)
    if name in _LITERAL:
        return _LITERAL[name]
    if name in _DROPPED or name.startswith(("cite ", "cite", "coord", "infobox", "navbox", "reflist", "sfn")):
        return ""
    if name in _CONVERTS:
        return _convert(positional)
    if name in _URLS:
        return positional[0] if positional else named.get("url", "")
    if name in _DATES:
        return _date(positional)
    if name in _LISTS:
        return ", ".join(_list_items(positional))
    if name in ("us$", "usd", "us dollar"):
        return f"US${positional[0]}" if positional else ""
    if name in ("circa", "c.", "ca", "c"):
        return f"c. {positional[0]}" if positional else "c."
    if name in _SECOND_PARAM or name.startswith(("lang-", "lang ")):
        if name.startswith("lang-"):
            return positional[0] if positional else ""
        return positional[1] if len(positional) > 1 else (positional[0] if positional else "")
    if name in _FIRST_PARAM:
        return positional[0] if positional else ""
    if name in ("marriage", "married"):
        if not positional:
            return ""
        years = "–".join(p for p in positional[1:3] if p)
        return f"{positional[0]} (m. {years})" if years else positional[0]
    if name in ("height", "weight") and named:
        return " ".join(f"{v} {k}" for k, v in named.items() if v)
    # Unknown template: its positional parameters, the cleaning rule participants used.
    return " ".join(p for p in positional if p)


def _render_link(body: str) -> str:
    target, sep, label = body.partition("|")
    target = target.strip()
    namespace = target.split(":", 1)[0].strip().lower() if ":" in target else ""
    if namespace in ("file", "image", "category", "media"):
        return ""
    if sep:
        label = label.split("|")[-1].strip()
        if label:
            return label
        target = re.sub(r"\s*\([^)]*\)$", "", target)  # the pipe trick: [[Foo (bar)|]] -> Foo
    if target.startswith("#"):  # a section of the same page
        return target[1:]
    return target.lstrip(":").split("#")[0]


def clean_wikitext(value) -> str:
    """A raw infobox value (wiki text) -> plain text; "" when nothing readable is left."""
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return ", ".join(filter(None, (clean_wikitext(v) for v in value)))
    text = str(value)
    text = _COMMENT.sub("", text)
    text = _REF.sub("", text)
    text = _BR.sub("\x00", text)  # protected until the end: templates may split on nothing else
    for _ in range(50):  # innermost first; 50 levels is far beyond any real infobox
        resolved = _INNER_LINK.sub(lambda m: _render_link(m.group(1)), text)
        resolved = _INNER_TEMPLATE.sub(lambda m: render_template(m.group(1)), resolved)
        if resolved == text:
            break
        text = resolved
    text = text.replace("{{", "").replace("}}", "").replace("[[", "").replace("]]", "")  # unbalanced leftovers
    text = _EXTERNAL_LINK.sub(lambda m: (m.group(2) or m.group(1)).strip(), text)
    text = _TAG.sub("", text)
    text = _QUOTES.sub("", text)
    if _BULLET.search(text) and text.lstrip()[:1] in "*#":
        text = ", ".join(i for i in (s.strip() for s in _BULLET.split(text)) if i)
    text = html.unescape(text)
    pieces = [" ".join(p.split()) for p in text.split("\x00")]
    out = ""
    for piece in pieces:
        piece = piece.strip(" ,;")
        if not piece:
            continue
        if not out:
            out = piece
        elif piece.startswith("("):
            out += " " + piece
        else:
            out += SEPARATOR + piece
    return out.strip()

"""Wiki markup of infobox values -> plain text a reader (and a reranker) can use.

The official image KG stores each entity's Wikipedia infobox fields as raw wiki text, e.g.
`{{convert|870|ft|m|0|abbr|=|on}}` or `[[WSP Group|WSP Cantor Seinuk]]`. `clean_wikitext` turns
such a value into "870 ft" / "WSP Cantor Seinuk".

mwparserfromhell parses the markup (templates, links, tags, comments, entities, nested in any
order); this module walks its tree and decides what each node becomes, which the library cannot
know, since templates are defined on the wiki, not in the markup:

- templates with a meaning a reader needs are rendered (convert, URL, dates, lists, lang,
  nowrap, ...); templates with none (coord, citations, flag icons, footnotes) are dropped; any
  other template becomes its positional parameters;
- `[[target|label]]` -> label, `[[target]]` -> target, `[[File:...]]` / `[[Category:...]]` ->
  nothing, the pipe trick `[[Foo (bar)|]]` -> Foo, `[url label]` -> label;
- comments and `<ref>`s are dropped, `<br />` becomes "; ", other tags keep their text, bold and
  italic quotes are removed, entities are decoded, list markers become ", ", white space is folded;
- named parameters arrive both as `abbr=on` and split into `abbr|=|on` (both occur in the
  official dump; the parser reads the split form as three parameters): the two are read alike;
- markup the parser leaves as text because it is not closed (a `{{`, `]]`, `<!--` or `<ref>`
  with no end) is removed rather than shown.
"""
from __future__ import annotations

import re

import mwparserfromhell
from mwparserfromhell.nodes import Argument, Comment, ExternalLink, Heading, HTMLEntity, Tag, Template, Text, Wikilink
from mwparserfromhell.parser import ParserError

SEPARATOR = "; "  # what a <br /> or a list break becomes inside one value

# A comment or <ref> that never closes hides the rest of the value (as on the wiki).
_UNCLOSED = re.compile(r"<!--(?!.*?-->).*|<ref\b[^>/]*>(?!.*?</ref\s*>).*", re.S | re.I)
_LEFTOVER = re.compile(r"\{\{|\}\}|\[\[|\]\]")
_BR = "\x00"  # protected until the end: white space folding must not eat the break
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


def _is_split_equals(param) -> bool:
    """The middle of the dump's split form `abbr|=|on`: a parameter that is a bare "="."""
    return param.showkey and not str(param.name).strip() and not str(param.value).strip()


def _template_params(template: Template) -> tuple[list[str], dict[str, str]]:
    """A parsed template's (positional parameters, named parameters), each rendered to text."""
    params = list(template.params)
    positional, named = [], {}
    i = 0
    while i < len(params):
        param = params[i]
        value = _render(param.value).strip()
        if not param.showkey and i + 1 < len(params) and _is_split_equals(params[i + 1]):
            named[value.lower()] = _render(params[i + 2].value).strip() if i + 2 < len(params) else ""
            i += 3
            continue
        key = _render(param.name).strip() if param.showkey else ""
        if key and _NAMED_KEY.match(key):
            named[key.lower()] = value
        elif param.showkey:  # `a=b` with a key that is no name (a URL's query): one positional value
            positional.append(f"{key}={value}")
        else:
            positional.append(value)
        i += 1
    return positional, named


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


def render_template(name: str, positional: list[str], named: dict[str, str]) -> str:
    """One template, its parameters already rendered -> its text."""
    name = " ".join(name.replace("_", " ").split()).lower()
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


def _render_link(target: str, label: str | None) -> str:
    target = target.strip()
    namespace = target.split(":", 1)[0].strip().lower() if ":" in target else ""
    if namespace in ("file", "image", "category", "media"):
        return ""
    if label is not None:
        label = label.split("|")[-1].strip()
        if label:
            return label
        target = re.sub(r"\s*\([^)]*\)$", "", target)  # the pipe trick: [[Foo (bar)|]] -> Foo
    if target.startswith("#"):  # a section of the same page
        return target[1:]
    return target.lstrip(":").split("#")[0]


def _render_tag(tag: Tag) -> str:
    name = str(tag.tag).strip().lower()
    if name == "ref":
        return ""
    if name == "br":
        return _BR
    if tag.wiki_markup:  # a list item's "*", "#", ":" or ";": the list splitter reads it
        return str(tag.wiki_markup)
    return "" if tag.self_closing or tag.contents is None else _render(tag.contents)


def _render(code) -> str:
    """A parsed piece of wiki text -> its text, node by node (nested nodes recursively)."""
    out = []
    for node in code.nodes:
        if isinstance(node, Text):
            out.append(str(node.value))
        elif isinstance(node, Template):
            positional, named = _template_params(node)
            out.append(render_template(_render(node.name), positional, named))
        elif isinstance(node, Wikilink):
            out.append(_render_link(_render(node.title), None if node.text is None else _render(node.text)))
        elif isinstance(node, ExternalLink):
            if not node.brackets:  # a bare URL is its own text
                out.append(str(node.url))
            else:
                out.append(_render(node.title).strip() if node.title else str(node.url).split("//", 1)[-1])
        elif isinstance(node, Tag):
            out.append(_render_tag(node))
        elif isinstance(node, HTMLEntity):
            out.append(node.normalize())
        elif isinstance(node, Heading):
            out.append(_render(node.title))
        elif isinstance(node, Argument):  # {{{1|default}}}: the default, if any
            out.append(_render(node.default) if node.default is not None else "")
        elif not isinstance(node, Comment):
            out.append(str(node))
    return "".join(out)


def clean_wikitext(value) -> str:
    """A raw infobox value (wiki text) -> plain text; "" when nothing readable is left."""
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return ", ".join(filter(None, (clean_wikitext(v) for v in value)))
    text = _UNCLOSED.sub("", str(value))
    try:
        # Bold/italic quotes stay text (removed below): the style parser reads a lone
        # apostrophe pair in a name as the start of italics.
        text = _render(mwparserfromhell.parse(text, skip_style_tags=True))
    except ParserError:  # the value as written, rather than a failed turn
        pass
    text = _LEFTOVER.sub("", text)
    text = _QUOTES.sub("", text)
    if _BULLET.search(text) and text.lstrip()[:1] in "*#":
        text = ", ".join(i for i in (s.strip() for s in _BULLET.split(text)) if i)
    pieces = [" ".join(p.split()) for p in text.split(_BR)]
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

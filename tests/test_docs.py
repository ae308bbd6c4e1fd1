"""The docs a newcomer reads: README stays short and opens with the two commands, every relative
link in README.md and docs/ reaches a file and a heading that exist, and no issue number stands
in code or docs (history belongs in git log)."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
README_MAX_LINES = 300
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
# "issue 12", "issue #19", "issues 18", and a bare "#20" (not a CSS colour, an HTML entity or a URL)
ISSUE_NUMBER = re.compile(r"\bissues? ?#?\d+\b|(?<![\w&/])(?<!: )#\d{2,3}\b", re.IGNORECASE)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = re.sub(r"(?ms)^```.*?^```", "", path.read_text(encoding="utf-8"))
    return {slug(m.group(1)) for m in re.finditer(r"(?m)^#{1,6} (.+)$", text)}


def doc_pages() -> list[Path]:
    return [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]


def broken_links(pages: list[Path]) -> list[str]:
    out = []
    for page in pages:
        text = re.sub(r"(?ms)^```.*?^```", "", page.read_text(encoding="utf-8"))
        for target in LINK.findall(text):
            if re.match(r"[a-z]+:", target):
                continue  # http(s), mailto: not ours to check offline
            file_part, _, anchor = target.partition("#")
            dest = (page.parent / file_part).resolve() if file_part else page
            if not dest.exists():
                out.append(f"{page.name}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                out.append(f"{page.name}: {target} (no such heading)")
    return out


def test_readme_is_short_and_opens_with_the_two_commands():
    lines = (REPO_ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES
    commands = [line.strip() for line in lines if line.startswith("    ") and line.strip()][:2]
    assert commands == ["bash scripts/quickstart.sh", "bash scripts/test.sh"]
    assert "scripts/test.sh" in (REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_docs_has_one_page_per_concern():
    names = {p.name for p in (REPO_ROOT / "docs").glob("*.md")}
    assert {"chain.md", "evaluation.md", "engines.md", "serving.md", "reliability.md",
            "benchmarks.md"} <= names


def test_every_relative_link_reaches_a_file_and_a_heading():
    assert broken_links(doc_pages()) == []


def test_the_link_check_sees_a_missing_page_and_heading(tmp_path):
    (tmp_path / "a.md").write_text("# Top\n## Two words\n[ok](#two-words) [bad](#three) [gone](b.md)\n")
    assert broken_links([tmp_path / "a.md"]) == ["a.md: #three (no such heading)", "a.md: b.md (no such file)"]


def test_no_issue_numbers_in_code_or_docs():
    files = subprocess.run(["git", "ls-files", "*.py", "*.md", "*.sh", "*.txt", "*.j2", ".ci/run"],
                           cwd=REPO_ROOT, capture_output=True, text=True, check=True).stdout.split()
    found = []
    for name in files:
        if name.startswith("data/") or name == "tests/test_docs.py":  # its own examples
            continue
        for number, line in enumerate((REPO_ROOT / name).read_text(encoding="utf-8").splitlines(), 1):
            if ISSUE_NUMBER.search(line):
                found.append(f"{name}:{number}: {line.strip()[:100]}")
    assert found == []


def test_the_issue_number_check_sees_the_usual_forms():
    for text in ["the rule before issue #19", "(issue 12)", "see #20 for why", "Issues 18 and 19"]:
        assert ISSUE_NUMBER.search(text), text
    for text in ["color #fff", "color: #555;", "&#x27;", "<h1>", "`k=10`", "page 20", "url/#20"]:
        assert not ISSUE_NUMBER.search(text), text


def shown_files(page: Path) -> dict[str, str]:
    """Each file a page shows whole: a line "`examples/PATH`:" followed by a fenced block."""
    found = re.finditer(r"(?m)^`(examples/[^`]+)`:\n\n```[a-z]*\n(.*?)^```$", page.read_text(encoding="utf-8"), re.S)
    return {m.group(1): m.group(2) for m in found}


def test_the_guide_shows_every_file_of_the_example_package_as_it_is():
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "examples/keyword_gate"],
                            cwd=REPO_ROOT, capture_output=True, text=True, check=True).stdout
    files = sorted(listed.split())
    shown = shown_files(REPO_ROOT / "docs" / "add_a_system.md")
    assert sorted(shown) == files
    for name, text in shown.items():
        assert text == (REPO_ROOT / name).read_text(encoding="utf-8"), f"{name} differs from the guide's copy"


def test_the_guide_check_sees_a_file_that_drifted(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("`examples/a/b.py`:\n\n```python\nx = 1\n```\n\n`examples/a/c.txt`:\n\n```text\nhi\n```\n")
    assert shown_files(page) == {"examples/a/b.py": "x = 1\n", "examples/a/c.txt": "hi\n"}

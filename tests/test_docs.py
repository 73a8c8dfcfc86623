"""The docs a newcomer reads: the README (short, with one example per entry point) and a guide
per topic in docs/. Every relative link, every repository path and every short form of code
they name (`txn/WriterLease`, `cli/sql.py`) exists, so a file that moves, a class that is renamed
or a guide that is renamed fails here, not in a reader's hands."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "bench" / "README.md"]
TOP = ("python", "jvm", "tests", "bench", "sql", "scripts", "docs")
PATH = re.compile(r"`((?:%s)/[\w./-]+)`" % "|".join(TOP))
LINK = re.compile(r"\]\(([^)\s]+)\)")
# The short forms docs use for code: `txn/WriterLease`, `time/EventTimeTest`, `kafka/LogView.java`,
# `kplex/settings.py`, `cli/sql.py`, `contenders/common.py` (beside bench/README.md): a package,
# then a class or module, with or without its extension.
SHORT = re.compile(r"`((?:[a-z_][\w-]*/)+[\w-]+(?:\.(?:java|py))?)`")
# Where a short form resolves: the plugin's packages (shared code, tests and each Spark line's
# shims), the Python package, the tests, and the folder of the doc that names it.
CODE_ROOTS = (*(ROOT / "jvm" / "src" / tree / "java" / "io" / "kplex" / "spark"
                for tree in ("main", "test", "spark-4", "spark-3.5")),
              ROOT / "python" / "kplex", ROOT / "python", ROOT / "tests")


def _short_form_missing(token: str, doc_dir: Path) -> bool | None:
    """None when the token is not a code reference (`org/apache/kafka`, `bin/beeline`), else
    whether it names nothing. It is one when its first part is a package of a code root (or a
    folder beside the doc), or when it ends in a class name (`Camel`) or a .java/.py file, so a
    misspelt package (`txnn/WriterLease`) is caught too."""
    roots = (*CODE_ROOTS, doc_dir)
    first, last = token.split("/")[0], token.rsplit("/", 1)[1]
    is_code = (any((root / first).is_dir() for root in roots)
               or (last[:1].isupper() and any(c.islower() for c in last))
               or last.endswith((".java", ".py")))
    if first in TOP or not is_code:
        return None
    return not any((root / (token + ext)).exists() for root in roots for ext in ("", ".java", ".py"))


def anchors(markdown: str) -> set[str]:
    """The anchors GitHub makes of a Markdown file's headings: lower case, what is neither a
    word character, a space nor a hyphen left out, spaces made hyphens, a repeated one numbered."""
    made: dict[str, int] = {}
    fenced = False
    for line in markdown.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        heading = None if fenced else re.match(r"^#{1,6} +(.+?) *#*$", line)
        if heading:
            slug = re.sub(r"[^\w\- ]", "", heading.group(1).lower()).replace(" ", "-")
            made[slug] = made.get(slug, -1) + 1
            if made[slug]:
                made[f"{slug}-{made[slug]}"] = 0
    return set(made)


def names_missing(text: str, doc_dir: Path) -> list[str]:
    """What a doc in doc_dir names that is not there: relative links (and the heading a link's
    #anchor names, in the doc itself or in another Markdown file), repository paths and the
    short forms of code."""
    missing = []
    for target in LINK.findall(text):
        if re.match(r"^(https?:|mailto:)", target):
            continue
        path, _, anchor = target.partition("#")
        if path and not (doc_dir / path).exists():
            missing.append(f"link {target}")
        elif anchor and (not path or path.endswith(".md")):
            if anchor not in anchors((doc_dir / path).read_text() if path else text):
                missing.append(f"anchor {target}")
    for path in PATH.findall(text):
        if not (ROOT / path.rstrip(".")).exists():
            missing.append(f"path {path}")
    for token in SHORT.findall(text):
        if _short_form_missing(token, doc_dir):
            missing.append(f"code {token}")
    return missing


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_and_path_a_doc_names_exists(doc: Path):
    missing = names_missing(doc.read_text(), doc.parent)
    assert not missing, f"{doc.relative_to(ROOT)} names what is not there: {missing}"


def test_the_path_check_resolves_short_forms_and_reports_a_wrong_name():
    docs = ROOT / "docs"
    found = "`txn/WriterLease` `kafka/LogView.java` `time/EventTimeTest` `kplex/settings.py` `cli/sql`"
    assert names_missing(found, docs) == []
    assert names_missing("`txn/NoSuchClass`", docs) == ["code txn/NoSuchClass"]
    assert names_missing("`txnn/WriterLease`", docs) == ["code txnn/WriterLease"]
    assert names_missing("`kplex/no_such_module.py` `cli/nosuch`", docs) == [
        "code kplex/no_such_module.py", "code cli/nosuch"]
    assert names_missing("`contenders/common.py`", ROOT / "bench") == []
    assert names_missing("[a](#no-such-heading) [b](sql.md#no-such-heading)", docs) == [
        "anchor #no-such-heading", "anchor sql.md#no-such-heading"]
    assert names_missing("# A `kplex` heading: V, P\n[a](#a-kplex-heading-v-p) [b](architecture.md#building-and-testing)",
                         docs) == []
    assert names_missing("`org/apache/kafka` `bin/beeline` `META-INF/services` `held/<epoch>/`", docs) == []


def test_the_readme_is_short_and_has_an_example_per_entry_point_and_links_to_every_guide():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 400
    for heading in ("## Two commands", "### PySpark", "### Streaming", "### Spark Connect",
                    "### JDBC and BI tools (Thrift server)", "### spark-sql", "### Databricks", "## Measured numbers"):
        assert heading in readme, heading
    assert "bash scripts/demo.sh" in readme and "bash scripts/test.sh" in readme
    for guide in sorted((ROOT / "docs").glob("*.md")):
        assert f"](docs/{guide.name}" in readme, f"the README does not link docs/{guide.name}"


def test_the_option_reference_is_generated_from_options_json_and_describes_every_option():
    from kplex.sqltools import options_doc

    options = json.loads((ROOT / "python" / "kplex" / "options.json").read_text())["options"]
    assert all(o.get("description") for o in options), [o["name"] for o in options if not o.get("description")]
    assert (ROOT / "docs" / "options.md").read_text() == options_doc.render(), (
        "docs/options.md is stale: python -m kplex.sqltools.options_doc > docs/options.md")
    for o in options:
        assert f"`{o['name']}`" in options_doc.render()

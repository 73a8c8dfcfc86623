"""The docs a newcomer reads: the README (short, with one example per entry point) and a guide
per topic in docs/. Every relative link and every repository path they name exists, so a file
that moves or a guide that is renamed fails here, not in a reader's hands."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "bench" / "README.md"]
PATH = re.compile(r"`((?:python|jvm|tests|bench|sql|scripts|docs)/[\w./-]+)`")
LINK = re.compile(r"\]\(([^)\s]+)\)")


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_and_path_a_doc_names_exists(doc: Path):
    text = doc.read_text()
    missing = []
    for target in LINK.findall(text):
        if re.match(r"^(https?:|mailto:|#)", target):
            continue
        if not (doc.parent / target.split("#")[0]).exists():
            missing.append(f"link {target}")
    for path in PATH.findall(text):
        if not (ROOT / path.rstrip(".")).exists():
            missing.append(f"path {path}")
    assert not missing, f"{doc.relative_to(ROOT)} names what is not there: {missing}"


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

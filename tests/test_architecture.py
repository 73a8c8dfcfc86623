"""Dependencies point down: no import cycle between the JVM plugin's packages or between
the Python package's modules (no Spark, no broker: the sources are read)."""
from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
JAVA = ROOT / "jvm" / "src" / "main" / "java" / "io" / "kplex" / "spark"
PACKAGE = ROOT / "python" / "kplex"

# The two left: the table (catalog/KplexTable) makes the scan and write builders, which take
# the table itself. Splitting a descriptor off the table removes them; no new one may appear.
KNOWN_JAVA_CYCLES = {frozenset({"catalog", "read"}), frozenset({"catalog", "write"})}


def strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's strongly connected components with more than one node."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(component)

    for v in list(graph):
        if v not in index:
            visit(v)
    return out


def java_package_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = defaultdict(set)
    for source in JAVA.rglob("*.java"):
        parts = source.relative_to(JAVA).parts
        package = parts[0] if len(parts) > 1 else "(root)"
        text = re.sub(r'"(?:[^"\\\n]|\\.)*"', '""', source.read_text())  # class names in strings do not count
        for used in re.findall(r"io\.kplex\.spark\.([a-z]+)\.[A-Z]", text):
            if used != package:
                graph[package].add(used)
        if package != "(root)" and re.search(r"io\.kplex\.spark\.[A-Z]", text):
            graph[package].add("(root)")
    return graph


def python_module_graph() -> dict[str, set[str]]:
    modules = {".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__"): p
               for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = defaultdict(set)
    for name, path in modules.items():
        tree = ast.parse(path.read_text())
        for node in tree.body:  # module level only: imports inside functions are deferred on purpose
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("kplex"):
                for alias in node.names:
                    target = f"{node.module}.{alias.name}"
                    graph[name].add(target if target in modules else node.module)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("kplex"):
                        graph[name].add(alias.name)
    for name in graph:
        graph[name] = {t for t in graph[name] if t in modules and t != name}
    return graph


def test_the_jvm_packages_have_no_cycle_but_the_two_known():
    graph = java_package_graph()
    assert {"txn", "write", "read", "errors", "conf", "spec"} <= set(graph) | {d for v in graph.values() for d in v}
    pairs = {frozenset({a, b}) for a in graph for b in graph[a] if a in graph.get(b, ())}
    assert pairs - KNOWN_JAVA_CYCLES == set(), pairs - KNOWN_JAVA_CYCLES
    # Below everything: spec depends on nothing; errors on spec alone; conf not on read, write, txn.
    assert graph.get("spec", set()) == set()
    assert graph.get("errors", set()) <= {"spec"}
    assert not graph.get("conf", set()) & {"read", "write", "txn", "catalog", "(root)"}


def test_the_python_modules_have_no_cycle():
    graph = python_module_graph()
    assert "kplex.reader" in graph and "kplex.late" in graph["kplex.reader"]
    assert strongly_connected(graph) == []

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

# None: the catalog hands a table its scan and write builders (catalog/KplexTable.Access), so
# catalog/ sits below read/ and write/, which take the table. A cycle that appears fails the test.
KNOWN_JAVA_CYCLES: set[frozenset[str]] = set()


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


def module_level(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """The imports run when a module loads or is type-checked: those under ``if TYPE_CHECKING:``,
    ``if``/``try`` and class bodies count; those inside functions are deferred on purpose."""
    found: list[ast.Import | ast.ImportFrom] = []
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            found.extend(module_level(node))
    return found


def imported(name: str, is_package: bool, tree: ast.AST, modules: set[str]) -> set[str]:
    """The package's modules that module ``name`` imports (relative imports resolved)."""
    out: set[str] = set()
    for node in module_level(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
            continue
        base = node.module or ""
        if node.level:
            parts = name.split(".")[: len(name.split(".")) - node.level + (1 if is_package else 0)]
            base = ".".join(parts + ([base] if base else []))
        for alias in node.names:
            target = f"{base}.{alias.name}"
            out.add(target if target in modules else base)
    return {t for t in out if t in modules and t != name}


def python_module_graph() -> dict[str, set[str]]:
    modules = {".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__"): p
               for p in PACKAGE.rglob("*.py")}
    return {name: imported(name, path.name == "__init__.py", ast.parse(path.read_text()), set(modules))
            for name, path in modules.items()}


def test_the_jvm_packages_have_no_cycle():
    graph = java_package_graph()
    assert {"txn", "write", "read", "errors", "conf", "spec", "catalog"} <= set(graph) | {d for v in graph.values() for d in v}
    cycles = {frozenset(c) for c in strongly_connected(graph)}
    assert cycles - KNOWN_JAVA_CYCLES == set(), cycles - KNOWN_JAVA_CYCLES
    # Below everything: spec depends on nothing; errors on spec alone; conf on the layers under
    # it (spec, errors, kafka, and testing's fault hooks); the tables' catalog not on read or write.
    assert graph.get("spec", set()) == set()
    assert graph.get("errors", set()) <= {"spec"}
    assert graph.get("conf", set()) <= {"spec", "errors", "kafka", "testing", "compat"}
    assert not graph["catalog"] & {"read", "write", "txn", "plan", "(root)"}


def test_the_shims_of_each_spark_line_are_a_leaf_with_one_surface():
    """io.kplex.spark.compat (jvm/src/spark-4, jvm/src/spark-3.5) depends on no other kplex
    package, and both lines declare the same classes with the same public methods."""
    surfaces = {}
    for line in ("spark-4", "spark-3.5"):
        shims = ROOT / "jvm" / "src" / line / "java" / "io" / "kplex" / "spark" / "compat"
        surface = {}
        for source in sorted(shims.glob("*.java")):
            text = source.read_text()
            assert not re.findall(r"io\.kplex\.spark\.(?!compat)[a-z]+", text), source
            surface[source.stem] = sorted(re.findall(r"public (?:static |abstract |final )*[\w<>, .?]+ (\w+)\(", text)
                                          + re.findall(r"protected abstract [\w<>, .?]+ (\w+)\(", text))
        surfaces[line] = surface
    assert surfaces["spark-4"] == surfaces["spark-3.5"] and surfaces["spark-4"]


def test_the_cycle_finder_sees_a_cycle_of_three():
    assert strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]


def test_imports_under_type_checking_and_relative_ones_count():
    source = """
from typing import TYPE_CHECKING
from . import late
if TYPE_CHECKING:
    from kplex.reader import Reader
try:
    from .sqltools import check
except ImportError:
    pass
def deferred():
    from kplex import session
"""
    modules = {"kplex", "kplex.late", "kplex.reader", "kplex.session", "kplex.sqltools", "kplex.sqltools.check"}
    assert imported("kplex.merge", False, ast.parse(source), modules) == {
        "kplex.late", "kplex.reader", "kplex.sqltools.check"}
    assert imported("kplex.sqltools", True, ast.parse("from .check import check_file"), modules) == {
        "kplex.sqltools.check"}


def test_the_python_modules_have_no_cycle():
    graph = python_module_graph()
    assert "kplex.reader" in graph and "kplex.reader.late" in graph["kplex.reader"]
    assert strongly_connected(graph) == []

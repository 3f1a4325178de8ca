"""The package's structure (the layer table in cblite/__init__.py): imports go downward
only, the ctypes declarations live in _lib and the exit handler in _shutdown."""

import ast
import os
import re

from helpers import PKG_ROOT

PACKAGE = os.path.join(PKG_ROOT, "cblite")


def modules():
    return sorted(f[:-3] for f in os.listdir(PACKAGE) if f.endswith(".py"))


def tree(module):
    with open(os.path.join(PACKAGE, module + ".py"), encoding="utf-8") as f:
        return ast.parse(f.read())


def layers():
    """{module: layer} from the comment of cblite/__init__.py: lines ``#   N  a, b (X)``,
    continued on lines indented further."""
    with open(os.path.join(PACKAGE, "__init__.py"), encoding="utf-8") as f:
        text = f.read()
    table, layer = {}, None
    for line in text.splitlines():
        m = re.match(r"#\s{3}(\d+)\s+(.*)", line)
        if m:
            layer, rest = int(m.group(1)), m.group(2)
        elif layer is not None and re.match(r"#\s{6,}\S", line):
            rest = line[1:]
        else:
            layer = None
            continue
        for name in re.sub(r"\([^)]*\)", "", rest).split(","):
            if name.strip():
                table[name.strip()] = layer
    return table


def _is_type_checking(node):
    return isinstance(node, ast.If) and (
        (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
        or (isinstance(node.test, ast.Attribute) and node.test.attr == "TYPE_CHECKING"))


def runtime_imports(code):
    """The package modules a module (its parsed `code`) imports when it runs, at the top
    or in a function, leaving out ``if TYPE_CHECKING:`` blocks."""
    found = set()

    def visit(node):
        if _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.ImportFrom):
            if node.level == 1 and node.module:
                found.add(node.module.split(".")[0])
            elif node.level == 1:
                found.update(alias.name for alias in node.names)
            elif node.module and node.module.startswith("cblite."):
                found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("cblite."):
                    found.add(alias.name.split(".")[1])
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(code)
    return found


def test_the_table_names_every_module():
    table = layers()
    assert set(table) == set(modules()) - {"__init__"}


def test_imports_go_downward_only():
    table = layers()
    upward = [(m, imported) for m in table for imported in runtime_imports(tree(m))
              if table[imported] >= table[m]]
    assert upward == [], "imports of a module of the same or a higher layer"


def test_the_check_sees_imports_in_functions_but_not_for_type_checking():
    code = ast.parse("from .database import Database\nif TYPE_CHECKING:\n"
                     "    from .models import Model\ndef f():\n    from . import aio\n"
                     "    import cblite.server\n")
    assert runtime_imports(code) == {"database", "aio", "server"}


def _imported_names(module, source):
    return {alias.name for node in ast.walk(tree(module))
            if isinstance(node, ast.ImportFrom) and node.module == source
            for alias in node.names} | {
        alias.name for node in ast.walk(tree(module)) if isinstance(node, ast.Import)
        for alias in node.names if alias.name == source}


def test_ctypes_declarations_only_in_lib():
    """Callback types, structures and pointer types are declared in _lib only."""
    declaring = {"CFUNCTYPE", "POINTER", "Structure"}
    offenders = [m for m in modules() if m != "_lib"
                 and (_imported_names(m, "ctypes") & declaring
                      or any(isinstance(n, ast.Attribute) and n.attr in declaring
                             and isinstance(n.value, ast.Name) and n.value.id == "ctypes"
                             for n in ast.walk(tree(m))))]
    assert offenders == []


def test_one_exit_handler():
    offenders = [m for m in modules() if m != "_shutdown" and "atexit" in _imported_names(m, "atexit")]
    assert offenders == []

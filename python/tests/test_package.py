"""The package itself: the type stubs name every public function and class with the binding's signature,
every public function, class and module of posenc and posenc.torch has a docstring, and the version is the
meson project's."""
import ast
import inspect
import os
import re

import posenc
import posenc.torch as pt

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def stub_tree():
    path = os.path.join(os.path.dirname(posenc.__file__), "__init__.pyi")
    with open(path) as f:
        return ast.parse(f.read())


def stub_names(tree):
    names = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names[node.name] = node
        elif isinstance(node, (ast.AnnAssign,)) and isinstance(node.target, ast.Name):
            names[node.target.id] = node
    return names


def test_the_stubs_name_every_public_name():
    names = stub_names(stub_tree())
    missing = [n for n in posenc.__all__ if n not in names]
    assert not missing, "not in __init__.pyi: %s" % missing


def test_the_stubs_have_the_bindings_keyword_arguments():
    # pybind11 writes each function's signature on the first line of its docstring
    names = stub_names(stub_tree())
    for name in posenc.__all__:
        obj = getattr(posenc, name)
        node = names.get(name)
        if not callable(obj) or not isinstance(node, ast.FunctionDef) or inspect.isclass(obj):
            continue
        first = (obj.__doc__ or "").splitlines()[0]
        m = re.match(r"\w+\((.*)\) ->", first)
        assert m, "%s: no signature line in %r" % (name, first)
        bound = [a.split(":")[0].strip().lstrip("*") for a in m.group(1).split(",") if a.strip()]
        bound = [a for a in bound if a and a != "*"]
        a = node.args
        stub = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
        assert stub == bound, "%s: stub %s, binding %s" % (name, stub, bound)


def test_everything_public_is_documented():
    undocumented = []
    for mod in (posenc, pt):
        if not (mod.__doc__ or "").strip():
            undocumented.append(mod.__name__)
        for name in mod.__all__:
            obj = getattr(mod, name)
            if (inspect.isclass(obj) or callable(obj)) and not (getattr(obj, "__doc__", "") or "").strip():
                undocumented.append("%s.%s" % (mod.__name__, name))
            if inspect.isclass(obj) and not issubclass(obj, BaseException):
                for attr, member in vars(obj).items():
                    if attr.startswith("_") or not callable(member):
                        continue
                    if not (getattr(member, "__doc__", "") or "").strip():
                        undocumented.append("%s.%s.%s" % (mod.__name__, name, attr))
    assert not undocumented, undocumented


def test_the_version_is_the_meson_projects():
    with open(os.path.join(ROOT, "meson.build")) as f:
        version = re.search(r"version:\s*'([^']+)'", f.read()).group(1)
    assert posenc.__version__ == posenc.version() == version

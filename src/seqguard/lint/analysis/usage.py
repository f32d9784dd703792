"""What counts as a read: how a value is used by the expression around it, which
calls consume their argument, and which tensors a value is computed from (to tell a
device-to-host pull of sequence lengths)."""

from __future__ import annotations

import ast
from typing import Optional

from seqguard.lint.analysis.names import dotted, is_none
from seqguard.lint.model import Callee, CalleeHead, Usage

GUARD, PASS, READ, TRUTHINESS = Usage.GUARD, Usage.PASS, Usage.READ, Usage.TRUTHINESS

HOST_PULL_METHODS = frozenset({"cpu", "item", "tolist", "numpy"})
# Builtins that turn a one-element tensor into a Python number: a device sync too.
HOST_CONVERSIONS = frozenset({"int", "float", "bool"})
# Builtins that iterate a tensor into host values: one sync per element.
HOST_ITERATIONS = frozenset({"list", "tuple"})


def host_pull(call: ast.Call) -> Optional[tuple[ast.expr, str]]:
    """(the tensor pulled, how: `cpu`, `item`, `tolist`, `numpy`, `to`, `int`, `float`,
    `bool`, `list`, `tuple`) when `call` copies a tensor's data to the host, else None.
    The one test of a device-to-host pull: lint's SG004 and the codemod's check of a
    fallback template both ask it."""
    func = call.func
    if isinstance(func, ast.Attribute):
        if func.attr in HOST_PULL_METHODS:
            if func.attr == "cpu" and call.args:
                return None  # `.cpu(non_blocking=...)` positional forms are not `Tensor.cpu`
            return func.value, func.attr
        if func.attr == "to" and _to_cpu(call):
            return func.value, "to"
        return None
    if isinstance(func, ast.Name) and len(call.args) == 1 and not call.keywords and \
            func.id in HOST_CONVERSIONS | HOST_ITERATIONS and not isinstance(call.args[0], ast.Starred):
        return call.args[0], func.id
    return None


def _to_cpu(call: ast.Call) -> bool:
    """`t.to("cpu")`, `t.to(device="cpu")`, `t.to(torch.device("cpu"))`."""
    values = [*call.args[:1], *(k.value for k in call.keywords if k.arg == "device")]
    for value in values:
        if isinstance(value, ast.Constant) and isinstance(value.value, str) and value.value.split(":")[0] == "cpu":
            return True
        if isinstance(value, ast.Call) and dotted(value.func) in ("torch.device", "device") and value.args and \
                isinstance(value.args[0], ast.Constant) and value.args[0].value == "cpu":
            return True
    return False


def pull_words(how: str) -> str:
    """How a pull is written, for messages: `.cpu()`, `.to("cpu")`, `int()`, `list()`."""
    if how == "to":
        return '.to("cpu")'
    return f".{how}()" if how in HOST_PULL_METHODS else f"{how}()"
# Builtins whose answer is host metadata of a tensor, not its data.
_METADATA_BUILTINS = frozenset({"len", "isinstance", "type", "id", "repr", "str"})
# Calls that consume their argument: handing them `None` raises or computes garbage.
CONSUMING_BUILTINS = frozenset({
    "int", "float", "len", "sum", "max", "min", "list", "tuple", "sorted", "range", "iter",
    "enumerate", "zip", "abs", "round", "any", "all", "set", "reversed", "map", "filter",
    "divmod", "pow", "next", "dict", "frozenset", "complex",
})
CONSUMING_MODULES = frozenset({"torch", "np", "numpy", "math", "F", "operator", "itertools"})
CONSUMING_METHODS = frozenset({"copy_", "extend", "add_", "sub_", "mul_", "div_", "index_select",
                               "append", "__getitem__"})


def is_consuming_call(call: ast.Call) -> bool:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id in CONSUMING_BUILTINS
    if isinstance(func, ast.Attribute):
        root = func
        while isinstance(root, ast.Attribute):
            root = root.value
        if isinstance(root, ast.Name) and root.id in CONSUMING_MODULES:
            return True
        return func.attr in CONSUMING_METHODS
    return False


# Host-side metadata of a tensor: reading it never synchronises.
_METADATA_ATTRIBUTES = frozenset({"shape", "dtype", "device", "ndim", "is_cuda", "layout"})
_METADATA_METHODS = frozenset({"size", "numel", "dim", "stride", "element_size", "data_ptr"})


def data_roots(node: ast.AST, length_parts: tuple[str, ...]) -> list[str]:
    """Names of the tensors an expression's value is computed from, following
    receivers of methods, subscripts and arguments of module functions. An attribute
    deep in a chain whose name holds one of `length_parts` (the engine model's
    `device-length-name-parts`: `seq_lens`) is a root of its own (`self.meta.seq_lens`:
    `seq_lens`); any other chain's roots are the names it starts with."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        if node.attr in _METADATA_ATTRIBUTES:
            return []
        if isinstance(node.value, ast.Name):
            return [node.attr, *data_roots(node.value, length_parts)]
        if any(part in node.attr for part in length_parts):
            return [node.attr]
        return data_roots(node.value, length_parts)
    if isinstance(node, ast.Subscript):
        return data_roots(node.value, length_parts)
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute):
            if func.attr in _METADATA_METHODS:
                return []
            if isinstance(func.value, ast.Name) and func.value.id in CONSUMING_MODULES:
                return [r for a in node.args for r in data_roots(a, length_parts)]
            return data_roots(func.value, length_parts)
        if isinstance(func, ast.Name) and func.id in _METADATA_BUILTINS:
            return []
        return [r for a in node.args for r in data_roots(a, length_parts)]
    if isinstance(node, ast.BinOp):
        return data_roots(node.left, length_parts) + data_roots(node.right, length_parts)
    return []


def receiver_root(node: ast.AST) -> Optional[str]:
    """`lens` for `lens[idx]`, `lens.clone()`, `lens[idx].to(d)`: the name whose data the
    value is."""
    while True:
        if isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            node = node.func.value
        elif isinstance(node, ast.Attribute) and node.attr not in ("shape", "dtype", "device"):
            node = node.value
        else:
            return node.id if isinstance(node, ast.Name) else None


def usage_of(node: ast.AST, chain: list[ast.AST]) -> Optional[Usage]:
    """How the value `node` (a mirror or an alias of one) is used by the expressions
    around it (`chain`, innermost last); None for an alias binding, whose later reads
    are tracked instead."""
    parent = chain[-1] if chain else None
    if isinstance(parent, ast.Attribute):
        return READ
    if isinstance(parent, ast.Subscript):
        return READ
    if isinstance(parent, (ast.BinOp,)):
        return READ
    if isinstance(parent, ast.UnaryOp):
        return TRUTHINESS if isinstance(parent.op, ast.Not) else READ
    if isinstance(parent, ast.Compare):
        return _compared(node, parent)
    if isinstance(parent, ast.Call):
        if node is parent.func:
            return READ
        if isinstance(parent.func, ast.Name) and parent.func.id == "bool":
            return TRUTHINESS
        return READ if is_consuming_call(parent) else PASS
    if isinstance(parent, ast.Starred):
        return READ  # `f(*lens)`, `[*lens]`: iterated
    if isinstance(parent, ast.YieldFrom):
        return READ
    if isinstance(parent, (ast.List, ast.Tuple, ast.Set)):
        for ancestor in reversed(chain[:-1]):
            if isinstance(ancestor, (ast.List, ast.Tuple, ast.Set, ast.Starred)):
                continue
            if isinstance(ancestor, ast.Call) and is_consuming_call(ancestor):
                return READ
            break
        return PASS
    if isinstance(parent, ast.comprehension):
        return READ if node is parent.iter else PASS
    if isinstance(parent, (ast.For, ast.AsyncFor)):
        return READ
    if isinstance(parent, (ast.If, ast.While, ast.IfExp, ast.Assert)) and node is parent.test:
        return TRUTHINESS
    if isinstance(parent, ast.IfExp):
        # one branch of a conditional expression: used as the whole expression is
        outer = usage_of(parent, chain[:-1])
        return PASS if outer is None else outer
    if isinstance(parent, ast.BoolOp):
        return TRUTHINESS
    if isinstance(parent, (ast.ListComp, ast.GeneratorExp, ast.SetComp)) and len(chain) >= 2 \
            and isinstance(chain[-2], ast.comprehension):
        return TRUTHINESS  # a comprehension condition
    if isinstance(parent, ast.AugAssign):
        return READ  # `total += b.seq_lens_sum` is arithmetic
    if isinstance(parent, (ast.Assign, ast.AnnAssign)):
        targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
        if node is parent.value and any(isinstance(t, (ast.Tuple, ast.List)) for t in targets):
            return READ  # `a, *rest = lens`: unpacking iterates
        if len(targets) == 1 and isinstance(targets[0], ast.Name) and node is parent.value:
            return None  # an alias binding: its reads are tracked instead
        return PASS
    return PASS

def _compared(node: ast.AST, compare: ast.Compare) -> Usage:
    """How a comparison uses one of its operands: each link of a chain (`0 < x is not
    None` is `0 < x and x is not None`, compared before it is tested) that holds it
    either tests it for None (`is`, `== None`), hands it to a container (`x in d`), or
    compares it: a read."""
    operands = [compare.left, *compare.comparators]
    at = next(i for i, o in enumerate(operands) if o is node)
    links = []  # (operator, the other operand, whether the value is on the left)
    if at > 0:
        links.append((compare.ops[at - 1], operands[at - 1], False))
    if at < len(compare.ops):
        links.append((compare.ops[at], operands[at + 1], True))
    usage = PASS
    for op, other, left in links:
        if isinstance(op, (ast.Is, ast.IsNot)) or is_none(other):
            usage = GUARD
        elif not (isinstance(op, (ast.In, ast.NotIn)) and left):
            return READ
    return usage


def passed_to(node: ast.AST, chain: list[ast.AST], self_name: Optional[str]) -> Optional[tuple[Callee, object]]:
    """(callee, position or keyword) when `node` is an argument of a call whose callee
    is a plain name or attribute chain."""
    found = _argument_slot(node, chain)
    if found is None:
        return None
    call, slot = found
    func = call.func
    if (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call) and not func.value.args
            and isinstance(func.value.func, ast.Name) and func.value.func.id == "super"):
        return Callee(CalleeHead.SUPER, func.attr), slot  # `super().method(x)`: the next class in the bases
    callee = dotted(func)
    if not callee:
        return None
    return Callee.written(callee, self_name), slot


def _argument_slot(node: ast.AST, chain: list[ast.AST]) -> Optional[tuple[ast.Call, object]]:
    """(the call, the position or keyword) `node` is passed as: `f(x)`, `f(k=x)`, and
    through a splat of a display whose place is known: `f(**{"k": x})`, `f(**dict(k=x))`,
    `f(1, *[x])`."""
    parent = chain[-1] if chain else None
    if isinstance(parent, ast.keyword) and parent.arg is not None and len(chain) >= 2 \
            and isinstance(chain[-2], ast.Call):
        if (len(chain) >= 4 and isinstance(chain[-2].func, ast.Name) and chain[-2].func.id == "dict"
                and not chain[-2].args and _splatted_mapping(chain[-2], chain[-3], chain[-4])):
            return chain[-4], parent.arg  # `f(**dict(k=x))`
        return chain[-2], parent.arg
    if isinstance(parent, ast.Call) and node is not parent.func and node in parent.args:
        position = parent.args.index(node)
        if any(isinstance(a, ast.Starred) for a in parent.args[:position + 1]):
            return None
        return parent, position
    if isinstance(parent, ast.Dict) and len(chain) >= 3 and _splatted_mapping(parent, chain[-2], chain[-3]):
        at = next(i for i, v in enumerate(parent.values) if v is node)
        key = parent.keys[at]
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)) or any(
                may_replace(k, v, key.value) for k, v in zip(parent.keys[at + 1:], parent.values[at + 1:])):
            return None  # a key not told, or one a later entry may replace
        return chain[-3], key.value
    if (isinstance(parent, (ast.List, ast.Tuple)) and len(chain) >= 3 and isinstance(chain[-2], ast.Starred)
            and isinstance(chain[-3], ast.Call) and any(a is chain[-2] for a in chain[-3].args)):
        call, starred = chain[-3], chain[-2]
        before = call.args[:next(i for i, a in enumerate(call.args) if a is starred)]
        at = next(i for i, e in enumerate(parent.elts) if e is node)
        if any(isinstance(a, ast.Starred) for a in (*before, *parent.elts[:at])):
            return None  # how many come before it is not told
        return call, len(before) + at
    return None


def may_replace(key: Optional[ast.AST], value: ast.AST, name: str) -> bool:
    """Whether the entry `key: value` of a dict display may set `name`: that key, or a
    splat (`**extra`) of anything but a display without it (`**{}`)."""
    if key is not None:
        return isinstance(key, ast.Constant) and key.value == name
    return not isinstance(value, ast.Dict) or any(may_replace(k, v, name) for k, v in zip(value.keys, value.values))


def _splatted_mapping(mapping: ast.AST, keyword: ast.AST, call: ast.AST) -> bool:
    """Whether `mapping` is splatted into `call` as `**mapping`."""
    return isinstance(keyword, ast.keyword) and keyword.arg is None and keyword.value is mapping \
        and isinstance(call, ast.Call)

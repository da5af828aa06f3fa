"""Safe YAML for specs and `--set` values: YAML 1.2 floats (1e-3 is a number), a key written
twice in one mapping refused, and bounded size: at most MAX_ALIASES alias uses, MAX_NODES
nodes once expanded and MAX_DEPTH levels of nesting (an alias bomb is refused before it is
built)."""

from __future__ import annotations

import re

import yaml

MAX_ALIASES = 100          # alias uses per document
MAX_NODES = 100_000        # nodes once every alias is expanded (a spec has about 1,000)
MAX_DEPTH = 50             # nesting levels of mappings and lists (a spec has about 6)


_SURROGATE = re.compile("[\ud800-\udfff]")


class YAMLNotText(yaml.constructor.ConstructorError):
    """A string holding a lone surrogate (not a character)."""


class YAMLTooLarge(yaml.YAMLError):
    """An alias bomb, or a document too large to be a spec."""

    def __init__(self, problem: str):
        super().__init__(problem)
        self.problem, self.problem_mark = problem, None


class _Loader(yaml.SafeLoader):
    """Safe loader that reads YAML 1.2 floats such as 1e-3 as numbers (PyYAML reads strings)
    and counts alias uses (`yaml_load` bounds them)."""

    aliases = 0
    depth = 0

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            self.aliases += 1
            if self.aliases > MAX_ALIASES:
                raise YAMLTooLarge(f"more than {MAX_ALIASES} aliases (*name)")
        self.depth += 1          # composing is recursive: bound it before Python's limit
        try:
            if self.depth > MAX_DEPTH:
                raise YAMLTooLarge(f"mappings or lists nested more than {MAX_DEPTH} levels")
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def construct_scalar(self, node):
        """A lone surrogate (the escape "\\udbc9" in a double-quoted string: the reader
        refuses raw ones) is not a character: it cannot be written as UTF-8, and matplotlib
        failed on it in a figure text after the run (exit 3)."""
        value = super().construct_scalar(node)
        bad = _SURROGATE.search(value) if isinstance(value, str) else None
        if bad:
            raise YAMLNotText(
                None, None, f"a lone surrogate U+{ord(bad.group()):04X} (an escape \\u"
                f"{ord(bad.group()):04x}), not a character: YAML writes one past U+FFFF as "
                "\\U0001F600, not as a surrogate pair", node.start_mark)
        return value

    def construct_mapping(self, node, deep=False):
        """A key written twice in one mapping is an error (PyYAML keeps the last silently,
        so a second `profiles:` would hide the first)."""
        if isinstance(node, yaml.MappingNode):
            seen = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge" or not isinstance(
                        key_node, yaml.ScalarNode):
                    continue
                if key_node.value in seen:
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping", node.start_mark,
                        f"found duplicate key {key_node.value!r} (first on line "
                        f"{seen[key_node.value] + 1})", key_node.start_mark)
                seen[key_node.value] = key_node.start_mark.line
        return super().construct_mapping(node, deep=deep)


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
    |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
    |\.[0-9_]+(?:[eE][-+]?[0-9]+)?
    |[-+]?\.(?:inf|Inf|INF)
    |\.(?:nan|NaN|NAN))$""", re.X),
    list("-+0123456789."))


def _expanded_size(node, memo: dict) -> int:
    """Nodes of the document with every alias expanded (memoised: O(distinct nodes))."""
    key = id(node)
    if key in memo:
        return memo[key]
    memo[key] = MAX_NODES + 1           # a cycle counts as too large
    n = 1
    if isinstance(node, yaml.SequenceNode):
        n += sum(_expanded_size(v, memo) for v in node.value)
    elif isinstance(node, yaml.MappingNode):
        n += sum(_expanded_size(k, memo) + _expanded_size(v, memo) for k, v in node.value)
    memo[key] = n
    return n


def yaml_load(text: str):
    """Safe YAML with bounded aliases: at most MAX_ALIASES uses and MAX_NODES nodes once
    expanded (an alias bomb is refused before it is built)."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if _expanded_size(node, {}) > MAX_NODES:
            raise YAMLTooLarge(f"the document expands to more than {MAX_NODES:,} nodes "
                               "(nested aliases)")
        return loader.construct_document(node)
    finally:
        loader.dispose()

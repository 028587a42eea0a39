"""A small YAML file read with bounds, before PyYAML builds anything from it.

Issue 38: a config of nested brackets (`[[[[...`) made PyYAML's composer recurse until a
RecursionError traceback thousands of lines long, and a 10 MB file took 16 s to refuse. A
config is a few hundred bytes and three levels deep, so both are bounded here: the size
from the file's metadata (nothing read), the nesting from PyYAML's event stream (its
parser is a state machine, not recursive), stopped at the first event past the bound; and
aliases are refused (a few lines of them expand into an exponentially large tree).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

# Far above any config here (the largest model config is 1.2 KB, a probe grid 2 KB).
MAX_BYTES = 256 * 1024
# Mappings and lists inside one another (a model config's engine_kwargs reach 3).
MAX_DEPTH = 16


class YAMLBoundError(ValueError):
    """A YAML file past a bound of this module; the message says which and the limit."""


def load_bounded(
    path: Path, max_bytes: int = MAX_BYTES, max_depth: int = MAX_DEPTH, aliases: bool = False
) -> Any:
    """`path` parsed by yaml.safe_load, once its size and nesting are within bounds;
    OSError, UnicodeDecodeError and yaml.YAMLError pass through as safe_load raises them.

    `aliases` lets a file use them: a cluster-launcher config may (Ray's own readers take
    them, and people share a node_config by anchor); safe_load shares the aliased node, so
    only a reader that walks the whole tree pays for them, and the cluster-config readers
    here take named keys only."""
    size = path.stat().st_size
    if size > max_bytes:
        raise YAMLBoundError(f"{size} bytes, more than the {max_bytes} a config may hold")
    with path.open("rb") as handle:  # a file that grew since stat() is cut at the bound
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise YAMLBoundError(f"more than the {max_bytes} bytes a config may hold")
    text = data.decode("utf-8")
    depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > max_depth:
                line = event.start_mark.line + 1 if event.start_mark else "?"
                raise YAMLBoundError(
                    f"nested more than {max_depth} levels deep (line {line}); a config is "
                    f"a few levels of keys and lists"
                )
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
        elif isinstance(event, yaml.AliasEvent) and not aliases:
            # Aliases share one node many times over: a few lines of them make a tree that
            # validation walks in exponential time. No config needs them.
            raise YAMLBoundError("holds a YAML alias (*name); write the value out instead")
    return yaml.safe_load(text)

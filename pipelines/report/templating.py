"""The report's HTML templates (jinja2, pipelines/report/templates/): autoescaping is on for
every template, so text from the results (a model called `<script>`, an answer holding
markup) renders as text; markup made by our own code is passed as `Markup`."""

from __future__ import annotations

from functools import cache
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape


@cache
def environment() -> Environment:
    """One environment for the process: templates are compiled once."""
    env = Environment(
        loader=PackageLoader("pipelines.report", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,  # a misspelt name fails the build, not a blank cell
        keep_trailing_newline=True,
    )
    env.filters["prose"] = prose
    return env


def prose(text: str) -> str:
    """Prose for the page without Markdown's code and bold marks, which HTML would show
    literally (messages shared with the terminal quote commands in backticks); the
    template's autoescaping then escapes it."""
    return str(text).replace("`", "").replace("**", "")


def render(name: str, **values: Any) -> str:
    """The template `name` filled with `values`, every value escaped unless Markup."""
    return environment().get_template(name).render(**values)


def template_source(name: str) -> str:
    """A template's text (the sample pages hash it: a changed template rebuilds them)."""
    loader = environment().loader
    assert loader is not None
    return loader.get_source(environment(), name)[0]

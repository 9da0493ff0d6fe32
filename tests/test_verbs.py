"""The verb table (``chronomem/verbs.py``) against what it feeds: the library's signatures must
state its names and defaults, and the HTTP models and CLI flags built from it must carry its
descriptions, defaults and bounds. ``test_interfaces.py`` then pins the five interfaces against
the library."""

from __future__ import annotations

import argparse
import inspect
from typing import Any

import pytest

from chronomem import Memory
from chronomem.cli.main import build_parser
from chronomem.server import wire
from chronomem.verbs import PARAMS, RECORD, VERBS, params, record_params
from chronomem.writing.drafts import REMEMBER_FIELDS

MODELS = {
    "peek": wire.PeekIn, "recall": wire.RecallIn, "recall_many": wire.RecallManyIn,
    "context": wire.ContextIn, "close_where": wire.CloseWhereIn,
    "verify_where": wire.VerifyWhereIn, "forget_where": wire.ForgetWhereIn,
    "close_record": wire.CloseIn, "verify": wire.VerifyIn, "feedback": wire.FeedbackIn,
    "forget": wire.ForgetIn, "add_event": wire.EventIn, "link": wire.LinkIn,
    "auto_link": wire.AutoLinkIn, "core_append": wire.CoreAppendIn,
    "core_replace": wire.CoreReplaceIn,
}  # fmt: skip
COMMANDS = {
    "recall": "recall", "records": "list", "context": "context", "close_where": "close-where",
    "verify_where": "verify-where", "forget_where": "forget-where", "close_record": "close",
    "forget": "forget", "add_event": "event", "link": "link",
}  # fmt: skip
# The CLI's --reason is one flag with one help text on every command (test_write_flags.py).
CLI_OWN = {"reason"}
# Where the CLI shows less than the library (a page a terminal holds: docs/cli.md).
CLI_DEFAULTS = {("records", "limit"): 20}


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_the_library_states_the_tables_parameters(verb: str) -> None:
    signature = inspect.signature(getattr(Memory, verb)).parameters
    for p in params(verb):
        assert p.name in signature, f"Memory.{verb} lacks {p.name}"
        given = signature[p.name]
        if p.required or given.default is inspect.Parameter.empty:
            # a verb's own subject (a change by filter's filter, a close's reason): positional
            assert p.required or p.name == "filter", f"Memory.{verb}({p.name}) is required"
            assert given.default is inspect.Parameter.empty, f"Memory.{verb}({p.name})"
            assert given.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
            continue
        assert given.default == p.default, f"Memory.{verb}({p.name}=...)"


@pytest.mark.parametrize("verb", sorted(MODELS))
def test_the_http_models_are_the_tables(verb: str) -> None:
    fields = MODELS[verb].model_fields
    schema = MODELS[verb].model_json_schema()["properties"]
    for p in params(verb):
        if p.required or (verb.endswith("_where") and p.name == "filter"):
            assert fields[p.name].is_required()  # a change by filter needs one, a close a reason
        else:
            assert fields[p.name].default == p.default
        assert fields[p.name].description == p.doc
        bounds = {"ge": "minimum", "le": "maximum", "gt": "exclusiveMinimum"}
        for key, value in p.bounds.items():
            shown = schema[p.name].get("anyOf", [schema[p.name]])[0]
            assert shown[bounds[key]] == value, (verb, p.name, key)
        if p.choices is not None and p.wire_choices:
            shown = schema[p.name].get("anyOf", [schema[p.name]])[0]
            listed = shown.get("items", shown).get("enum")
            assert listed == list(p.choices), (verb, p.name)


def _actions(command: str) -> dict[str, argparse.Action]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {a.dest: a for a in sub.choices[command]._actions}


@pytest.mark.parametrize("verb", sorted(COMMANDS))
def test_the_cli_flags_are_the_tables(verb: str) -> None:
    actions = _actions(COMMANDS[verb])
    for p in params(verb, without=tuple(CLI_OWN)):
        if p.flag is None:  # not a flag: absent, or the command's positional subject
            assert p.name not in actions or p.name == "agent" or p.required
            continue
        action = actions[p.name]
        assert p.flag in action.option_strings
        assert action.help == p.doc
        assert action.default == CLI_DEFAULTS.get((verb, p.name), p.default)
        assert action.required == (verb.endswith("_where") and p.name == "filter")
        if p.choices is not None:
            assert list(action.choices or ()) == list(p.choices)


def test_every_table_parameter_belongs_to_a_verb() -> None:
    used = {name for names in VERBS.values() for name in names}
    assert used <= set(PARAMS)
    unused: set[Any] = set(PARAMS) - used
    assert not unused, f"parameters no verb takes: {sorted(unused)}"


# -- the record fields (remember, each remember_many item, supersede's replacement) -------------
def test_the_record_table_is_what_the_engine_accepts() -> None:
    assert set(RECORD) == set(REMEMBER_FIELDS)
    remember = inspect.signature(Memory.remember).parameters
    supersede = inspect.signature(Memory.supersede).parameters
    for p in record_params():
        assert p.name in remember, f"Memory.remember lacks {p.name}"
        if p.name not in ("supersedes", "replace"):
            assert p.name in supersede, f"Memory.supersede lacks {p.name}"


@pytest.mark.parametrize(
    ("model", "without"),
    [(wire.RememberIn, ()), (wire.SupersedeIn, ("supersedes", "replace"))],
    ids=["remember", "supersede"],
)
def test_the_http_record_models_are_the_tables(model: Any, without: tuple[str, ...]) -> None:
    fields = model.model_fields
    schema = model.model_json_schema()["properties"]
    for p in record_params(without=without):
        assert fields[p.name].description == p.doc
        assert fields[p.name].is_required() == (p.name == "text")
        shown = schema[p.name].get("anyOf", [schema[p.name]])[0]
        named = {"ge": "minimum", "le": "maximum", "max_length": "maxLength"}
        for key, value in p.bounds.items():
            if key in named:
                assert shown[named[key]] == value, (p.name, key)
        if p.choices is not None:
            assert shown["enum"] == list(p.choices), p.name
    assert set(fields) - {"reason"} == {p.name for p in record_params(without=without)}


@pytest.mark.parametrize("command", ["remember", "supersede"])
def test_the_cli_record_flags_are_the_tables(command: str) -> None:
    actions = _actions(command)
    skipped = {"text", "agent", "kind", "sensitivity", "embedding", "passage_embeddings"}
    if command == "supersede":
        skipped |= {"supersedes", "replace"}
    for p in record_params(without=tuple(skipped)):
        assert p.flag is not None, p.name
        action = actions[p.name]
        assert p.flag in action.option_strings
        assert action.help == p.doc
        assert action.default == p.default

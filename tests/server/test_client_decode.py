"""The client reads answers without pydantic (``client/decode.py``): durations in every form the
service or a person writes them, instants back in UTC, the engine's dataclasses, and a typed
error — never a wrong value — for an answer of the wrong shape."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import TypeAdapter

from chronomem.client.decode import AnswerError, decode, iso_duration
from chronomem.model.audit import ScrubResult
from chronomem.model.event import Link, Provenance


@given(st.timedeltas(min_value=timedelta(days=-(10**6)), max_value=timedelta(days=10**6)))
def test_a_duration_survives_the_trip_and_the_service_reads_it_the_same(span: timedelta) -> None:
    text = iso_duration(span)
    assert decode(timedelta, text) == span
    assert TypeAdapter(timedelta).validate_json(f'"{text}"') == span  # what the service parses


@given(st.timedeltas(min_value=timedelta(days=-(10**6)), max_value=timedelta(days=10**6)))
def test_the_services_own_durations_are_read(span: timedelta) -> None:
    sent = TypeAdapter(timedelta).dump_python(span, mode="json")  # e.g. P3DT2H0.000005S
    assert decode(timedelta, sent) == span


def test_seconds_are_a_duration_too() -> None:
    assert decode(timedelta, 90.5) == timedelta(seconds=90.5)


def test_instants_come_back_in_utc() -> None:
    got = decode(datetime, "2024-03-01T09:00:00+02:00")
    assert got == datetime(2024, 3, 1, 7, tzinfo=UTC)
    assert got.tzinfo is UTC
    assert decode(datetime, "2024-03-01T09:00:00Z").tzinfo is UTC
    assert decode(datetime, "2024-03-01T09:00:00+00:00") != datetime(
        2024, 3, 1, 9, tzinfo=timezone(timedelta(hours=1))
    )


def test_dataclasses_enums_and_containers() -> None:
    at = datetime(2024, 3, 1, tzinfo=UTC)
    link = decode(
        list[Link],
        [{"cause": "a", "effect": "b", "weight": 1, "provenance": "explicit",
          "created_at": "2024-03-01T00:00:00Z", "similarity": None}],
    )  # fmt: skip
    assert link == [
        Link(cause="a", effect="b", weight=1.0, provenance=Provenance.EXPLICIT, created_at=at)
    ]
    assert isinstance(link[0].weight, float)
    assert decode(ScrubResult, {"scrubbed": True}) == ScrubResult(scrubbed=True)
    assert decode(dict[str, Any], {"a": [1]}) == {"a": [1]}
    assert decode(tuple[str, ...], ["a", "b"]) == ("a", "b")
    assert decode(int | None, None) is None


@pytest.mark.parametrize(
    ("kind", "value"),
    [
        (int, True),
        (int, "3"),
        (float, "1.0"),
        (bool, 1),
        (str, 5),
        (datetime, 5),
        (datetime, "yesterday"),
        (timedelta, "P"),
        (timedelta, "one day"),
        (list[str], {"a": 1}),
        (ScrubResult, {}),
        (ScrubResult, [True]),
        (Provenance, "guessed"),
    ],
)
def test_an_answer_of_the_wrong_shape_is_a_typed_error(kind: Any, value: Any) -> None:
    with pytest.raises(AnswerError):
        decode(kind, value)


def test_arguments_travel_as_json_values_vectors_as_they_are() -> None:
    import json

    import numpy as np

    from chronomem.client.wire import wire
    from chronomem.model.record import Kind

    vector = np.array([0.25, -1.5, 3.0], dtype=np.float32)
    assert wire(vector) == [0.25, -1.5, 3.0]
    assert wire(vector.tolist()) == [0.25, -1.5, 3.0]
    assert wire((1, 2.5)) == [1, 2.5]
    # Lists that are not plain numbers are converted item by item.
    when = datetime(2025, 1, 2, 3, 4, tzinfo=UTC)
    assert wire([when, Kind.REFLECTION, True, np.float32(0.5)]) == [
        "2025-01-02T03:04:00+00:00",
        "reflection",
        True,
        0.5,
    ]
    assert wire({"at": [when], "n": np.int64(3)}) == {"at": ["2025-01-02T03:04:00+00:00"], "n": 3}
    json.dumps(wire([vector, vector.tolist()]))  # every result is JSON

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from chronomem.model import IdFactory, id_instant


def test_ids_sort_by_time_and_are_monotonic_within_an_instant() -> None:
    factory = IdFactory()
    t = datetime(2024, 5, 1, 12, tzinfo=UTC)
    same = [factory.new_id(t) for _ in range(100)]
    assert same == sorted(same)
    assert len(set(same)) == 100
    later = factory.new_id(t + timedelta(microseconds=1))
    earlier = factory.new_id(t - timedelta(days=1))
    assert earlier < same[0] < same[-1] < later


def test_ids_encode_their_instant_to_the_microsecond() -> None:
    t = datetime(1350, 7, 1, 3, 4, 5, 678901, tzinfo=UTC)
    rid = IdFactory().new_id(t)
    assert len(rid) == 26
    assert id_instant(rid) == t

"""kplex.testing.datagen's record generator (no broker needed), and, on the broker, what its
clients leave behind."""

from __future__ import annotations

import gc
import json
from collections import Counter

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from kplex.testing.datagen import (
    ARTICLE_START_MS,
    PageviewsSummary,
    ensure_topic,
    generate_pageviews,
    pageview_records,
    user_name,
)


def parsed(records: int, **options: object) -> list[dict]:
    return [json.loads(value) for _, value in pageview_records(records, **options)]


def test_the_same_seed_gives_the_same_records_and_another_seed_others() -> None:
    assert list(pageview_records(500, seed=7)) == list(pageview_records(500, seed=7))
    assert list(pageview_records(500, seed=7)) != list(pageview_records(500, seed=8))


@pytest.mark.parametrize("non_ascii", [False, True])
def test_records_are_compact_json_pageviews_keyed_by_pageid(non_ascii: bool) -> None:
    for key, value in pageview_records(300, users=9, pages=100, non_ascii=non_ascii):
        view = json.loads(value)
        assert list(view) == ["viewtime", "userid", "pageid"]
        assert value == json.dumps(view, separators=(",", ":"), ensure_ascii=False).encode()
        assert key == view["pageid"].encode("utf-8")
        assert 1 <= int(view["pageid"].removeprefix("Page_")) <= 100
        assert view["viewtime"] >= ARTICLE_START_MS


def test_without_jitter_viewtime_never_decreases() -> None:
    times = [v["viewtime"] for v in parsed(2000)]
    assert times == sorted(times)


def test_with_jitter_viewtime_is_locally_out_of_order_but_never_by_more_than_the_jitter() -> None:
    times = [v["viewtime"] for v in parsed(2000, out_of_order_ms=3000)]
    assert times != sorted(times)
    latest = times[0]
    for t in times:
        assert t >= latest - 3000
        latest = max(latest, t)
    assert times[-1] - times[0] > 100_000  # still increasing overall


def test_skew_gives_one_hot_user_the_requested_share() -> None:
    users = Counter(v["userid"] for v in parsed(20_000, users=9, skew=0.5))
    share = users["User_1"] / 20_000
    assert 0.5 < share < 0.62  # 0.5 + 0.5 / 9 expected
    assert len(users) == 9


def test_non_ascii_user_ids_are_written_as_raw_utf8() -> None:
    records = list(pageview_records(2000, users=9, non_ascii=True))
    users = {json.loads(value)["userid"] for _, value in records}
    assert {"User_1", "用户_2", "Usér_ü_3", "用户_5"} <= users
    assert any("用户".encode() in value for _, value in records)
    assert not any(b"\\u" in value for _, value in records)


def test_user_names() -> None:
    assert [user_name(n) for n in (1, 3, 5)] == ["User_1", "User_3", "User_5"]
    assert [user_name(n, non_ascii=True) for n in (1, 3, 5)] == ["User_1", "Usér_ü_3", "用户_5"]


@pytest.mark.parametrize(
    "options",
    [{"users": 0}, {"pages": 0}, {"out_of_order_ms": -1}, {"skew": 1.5}, {"skew": -0.1}],
)
def test_bad_arguments_fail_at_the_call_not_at_the_first_record(options: dict) -> None:
    with pytest.raises(ValueError):
        pageview_records(10, **options)


def test_the_summary_table_lists_records_per_partition() -> None:
    table = PageviewsSummary("pageviews", 5, {0: 3, 2: 2}).table()
    assert table.splitlines() == [
        "pageviews: 5 records",
        "  partition  records",
        "          0        3",
        "          2        2",
    ]


def test_no_client_is_left_alive_when_the_calls_return(bootstrap, fresh_name) -> None:
    """A topic that does not exist yet is a failed DescribeTopics, whose exception's traceback
    once kept the calls' frames, and the producer in them, in a cycle: the producer stayed
    connected until Python's cycle collector ran, and reconnected, logging, once the broker
    stopped. With the collector off, nothing the calls made is left when they return."""
    topic = fresh_name("no_leak")
    gc.collect()
    before = {id(o) for o in gc.get_objects()}
    gc.disable()
    try:
        summary = generate_pageviews(bootstrap, topic, 20, partitions=2)
        assert ensure_topic(bootstrap, topic, 2) is False
        left = [o for o in gc.get_objects() if isinstance(o, (Producer, AdminClient)) and id(o) not in before]
    finally:
        gc.enable()
    assert summary.records == 20 and summary.created
    assert left == []

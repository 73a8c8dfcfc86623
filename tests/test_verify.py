"""kplex.testing.verify.check_records on hand-made record lists (no broker needed).

A small reference writer below derives a correct topic from a source; each
mutation then breaks exactly one invariant, and the checker must name it.
The correct output must pass, so a checker that flags everything fails too.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import replace
from typing import Callable

import pytest

from kplex.placement import canonical_int_key, canonical_key, virtual_partition
from kplex.testing.verify import (
    ORDER_HEADER,
    VP_HEADER,
    Record,
    check_records,
    virtual_partition_sequences,
)

V, P = 9, 3


def pageview(viewtime: int, userid: str, pageid: str) -> bytes:
    text = json.dumps(
        {"viewtime": viewtime, "userid": userid, "pageid": pageid},
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return text.encode("utf-8")


def source_topic() -> list[Record]:
    """Pageviews keyed by page on 3 partitions; some ties, some non-ASCII users."""
    rows = [
        (1000, "User_1", "Page_1"),
        (1100, "User_2", "Page_2"),
        (1100, "User_1", "Page_3"),  # tie with the row above
        (1200, "Usér_ü_3", "Page_1"),
        (1250, "用户_5", "Page_4"),
        (1300, "User_1", "Page_2"),
        (1300, "User_6", "Page_5"),
        (1400, "User_2", "Page_6"),
        (1500, "用户_5", "Page_1"),
        (1600, "Usér_ü_3", "Page_3"),
        (1700, "User_6", "Page_4"),
        (1800, "User_1", "Page_5"),
        (1800, "User_1", "Page_6"),  # equal order within one key
    ]
    offsets: dict[int, int] = defaultdict(int)
    records = []
    for viewtime, user, page in rows:
        key = page.encode()
        partition = virtual_partition(key, P)
        records.append(Record(partition, offsets[partition], key, pageview(viewtime, user, page)))
        offsets[partition] += 1
    return records


def kplex_write(source: list[Record], v: int = V, p: int = P) -> list[Record]:
    """A reference kplex writer: re-key by userid, place by murmur2, order by viewtime."""
    rows = sorted(source, key=lambda r: (json.loads(r.value)["viewtime"], r.value))
    offsets: dict[int, int] = defaultdict(int)
    out = []
    for r in rows:
        parsed = json.loads(r.value)
        key = canonical_key(parsed["userid"])
        vp = virtual_partition(key, v)
        partition = vp % p
        headers = {VP_HEADER: str(vp).encode(), ORDER_HEADER: str(parsed["viewtime"]).encode()}
        out.append(Record(partition, offsets[partition], key, r.value, headers, parsed["viewtime"]))
        offsets[partition] += 1
    return out


def append(derived: list[Record], record: Record, partition: int | None = None) -> list[Record]:
    """``derived`` plus ``record`` at the end of ``partition`` (its own by default)."""
    partition = record.partition if partition is None else partition
    offset = 1 + max((r.offset for r in derived if r.partition == partition), default=-1)
    return derived + [replace(record, partition=partition, offset=offset)]


def with_headers(derived: list[Record], i: int, **changes: bytes | None) -> list[Record]:
    """``derived`` with record ``i``'s headers changed; a None value removes the header."""
    headers = dict(derived[i].headers)
    for name, value in changes.items():
        name = {"vp": VP_HEADER, "order": ORDER_HEADER}[name]
        if value is None:
            headers.pop(name)
        else:
            headers[name] = value
    return derived[:i] + [replace(derived[i], headers=headers)] + derived[i + 1 :]


def first_index(derived: list[Record], user: str) -> int:
    return next(i for i, r in enumerate(derived) if r.key == user.encode())


def vp_of(record: Record) -> int:
    return int(record.headers[VP_HEADER])


def same_physical_other_vp(record: Record) -> bytes:
    return str((vp_of(record) + P) % V).encode()


def moved(record: Record, to: Record) -> Record:
    """``record`` placed where ``to`` is."""
    return replace(record, partition=to.partition, offset=to.offset)


def swap_adjacent_in_one_vp(derived: list[Record]) -> list[Record]:
    """Swap the contents of two neighbours in one vp whose orders differ, keeping offsets."""
    by_vp: dict[int, list[int]] = defaultdict(list)
    for i, r in enumerate(derived):
        by_vp[vp_of(r)].append(i)
    for indexes in by_vp.values():
        for a, b in zip(indexes, indexes[1:]):
            if derived[a].timestamp != derived[b].timestamp:
                out = list(derived)
                out[a], out[b] = moved(derived[b], derived[a]), moved(derived[a], derived[b])
                return out
    raise AssertionError("the fixture needs a vp with two different orders")


def move_to_other_partition(derived: list[Record]) -> list[Record]:
    i = first_index(derived, "User_1")
    record = derived[i]
    rest = derived[:i] + derived[i + 1 :]
    return append(rest, record, partition=(record.partition + 1) % P)


Mutation = Callable[[list[Record]], list[Record]]

# mutation of a correct derived topic -> (guarantee, check) that must be reported
MUTATIONS: dict[str, tuple[Mutation, str, str]] = {
    "a record is lost": (lambda d: d[1:], "G3", "missing"),
    "a record is written twice": (lambda d: append(d, d[0]), "G3", "duplicated"),
    "a record not in the source appears": (
        lambda d: append(d, replace(d[0], value=pageview(999, "User_1", "Page_0"))),
        "G3",
        "extra",
    ),
    "the key is another user's": (
        lambda d: [replace(d[0], key=b"User_2")] + d[1:],
        "G4",
        "key",
    ),
    "the key is JSON-quoted instead of raw UTF-8": (
        lambda d: [replace(d[0], key=b'"' + d[0].key + b'"')] + d[1:],
        "G4",
        "key",
    ),
    "the key is missing": (lambda d: [replace(d[0], key=None)] + d[1:], "G4", "key"),
    "kplex.vp is missing": (lambda d: with_headers(d, 0, vp=None), "G5", "kplex.vp header"),
    "kplex.vp has a leading zero": (
        lambda d: with_headers(d, 0, vp=b"0" + d[0].headers[VP_HEADER]),
        "G5",
        "kplex.vp header",
    ),
    "kplex.vp is not decimal": (lambda d: with_headers(d, 0, vp=b"three"), "G5", "kplex.vp header"),
    "kplex.vp is not murmur2 of the key": (
        lambda d: with_headers(d, 0, vp=same_physical_other_vp(d[0])),
        "G4",
        "vp",
    ),
    "a record sits on the wrong physical partition": (
        move_to_other_partition,
        "G4",
        "physical partition",
    ),
    "kplex.order is missing": (
        lambda d: with_headers(d, 0, order=None),
        "G5",
        "kplex.order header",
    ),
    "kplex.order is not an integer": (
        lambda d: with_headers(d, 0, order=b"1.5e3"),
        "G5",
        "kplex.order header",
    ),
    "kplex.order is beyond 64 bits": (
        lambda d: with_headers(d, 0, order=str(2**63).encode()),
        "G5",
        "kplex.order header",
    ),
    "kplex.order differs from the value": (
        lambda d: with_headers(d, 0, order=b"1"),
        "G5",
        "order value",
    ),
    "two records of a virtual partition are out of order": (
        swap_adjacent_in_one_vp,
        "G2",
        "order",
    ),
    "one key is in two virtual partitions": (
        lambda d: with_headers(
            d, first_index(d, "User_1"), vp=same_physical_other_vp(d[first_index(d, "User_1")])
        ),
        "G1",
        "key affinity",
    ),
    "a virtual partition spans two physical partitions": (
        move_to_other_partition,
        "G1",
        "vp affinity",
    ),
}


def test_a_correct_derived_topic_passes_every_check() -> None:
    source = source_topic()
    report = check_records(source, kplex_write(source), V, P, derived_partition_count=P)
    assert report.violations == [], report.summary()
    assert report.ok
    assert (report.source_count, report.derived_count) == (13, 13)
    assert (report.missing, report.duplicated, report.extra) == (0, 0, 0)
    assert report.keys == 5
    assert sum(s.count for s in report.vp_stats.values()) == 13
    assert all(len(s.physical) == 1 for s in report.vp_stats.values())


@pytest.mark.parametrize("name", MUTATIONS)
def test_each_broken_invariant_is_reported_under_its_guarantee(name: str) -> None:
    mutate, guarantee, check = MUTATIONS[name]
    source = source_topic()
    report = check_records(source, mutate(kplex_write(source)), V, P)
    assert not report.ok
    assert (guarantee, check) in report.violation_counts, report.summary()
    assert any(v.guarantee == guarantee and v.check == check for v in report.violations)
    assert f"FAIL {guarantee}" in report.summary()


def test_missing_duplicated_and_extra_records_are_counted_as_a_multiset() -> None:
    source = source_topic()
    source = append(source, source[0])  # the source itself holds value A twice
    a, b, c = source[0].value, source[3].value, source[5].value
    derived = [r for r in kplex_write(source) if r.value not in (a, b)]  # 2 + 1 missing
    copy = next(r for r in derived if r.value == c)
    derived = append(append(derived, copy), copy)  # 2 duplicated
    derived = append(derived, replace(copy, value=pageview(1, "x", "y")))  # 1 extra
    report = check_records(source, derived, V, P)
    assert (report.missing, report.duplicated, report.extra) == (3, 2, 1)


def test_a_duplicate_in_the_source_must_be_duplicated_in_the_derived_topic() -> None:
    source = source_topic()
    source = append(source, source[0])
    assert check_records(source, kplex_write(source), V, P).ok
    assert check_records(source, kplex_write(source_topic()), V, P).missing == 1


def test_a_wrong_partition_count_of_the_derived_topic_is_reported() -> None:
    source = source_topic()
    report = check_records(source, kplex_write(source), V, P, derived_partition_count=P + 1)
    assert ("G4", "partition count") in report.violation_counts


def test_timestamps_must_equal_the_order_only_when_the_order_came_from_a_timestamp() -> None:
    source = source_topic()
    derived = [replace(r, timestamp=0) for r in kplex_write(source)]
    assert check_records(source, derived, V, P).ok
    report = check_records(source, derived, V, P, timestamp_is_order=True)
    assert report.violation_counts[("G5", "timestamp")] == len(derived)


def test_ties_in_order_are_allowed_inside_a_virtual_partition() -> None:
    source = source_topic()
    derived = kplex_write(source)
    orders = [(vp_of(r), r.timestamp) for r in derived]
    assert len(orders) != len(set(orders)), "the fixture needs a tie inside one vp"
    assert check_records(source, derived, V, P).ok


def test_custom_key_and_order_functions_such_as_an_int_key() -> None:
    source = [
        Record(0, i, None, json.dumps({"n": n, "t": t}).encode())
        for i, (n, t) in enumerate([(7, 10), (-3, 11), (7, 12)])
    ]
    derived = []
    for r in source:
        parsed = json.loads(r.value)
        key = canonical_int_key(parsed["n"])
        vp = virtual_partition(key, 4)
        headers = {VP_HEADER: str(vp).encode(), ORDER_HEADER: str(parsed["t"]).encode()}
        offset = sum(1 for d in derived if d.partition == vp % 2)
        derived.append(Record(vp % 2, offset, key, r.value, headers))
    key_of = lambda v: canonical_int_key(v["n"])  # noqa: E731
    order_of = lambda v: v["t"]  # noqa: E731
    assert check_records(source, derived, 4, 2, key_of, order_of).ok
    # The default for an int is an 8-byte BIGINT key, which these 4-byte keys are not.
    report = check_records(source, derived, 4, 2, lambda v: v["n"], order_of)
    assert report.violation_counts[("G4", "key")] == 3


def test_unparseable_values_are_reported_not_raised() -> None:
    derived = [Record(0, 0, b"k", b"not json", {VP_HEADER: b"0", ORDER_HEADER: b"1"})]
    report = check_records(derived, derived, 1, 1)
    assert ("G4", "value") in report.violation_counts


def test_examples_are_capped_but_every_violation_is_counted() -> None:
    source = source_topic()
    report = check_records(source, [], V, P, max_examples=2)
    assert report.missing == 13
    assert report.violation_counts[("G3", "missing")] == 13
    assert len(report.violations) == 2


def test_the_summary_has_one_line_per_virtual_partition_and_per_guarantee() -> None:
    source = source_topic()
    derived = kplex_write(source)
    text = check_records(source, derived, V, P, source_topic="pageviews").summary()
    vps = {vp_of(r) for r in derived}
    for g in ("G1", "G2", "G3", "G4", "G5"):
        assert f"PASS {g}" in text
    assert "pageviews -> derived  V=9 P=3" in text
    rows = [line.split() for line in text.splitlines()[3:]]
    assert [int(row[0]) for row in rows if row[0].isdigit()] == sorted(vps)
    assert sorted(vps) == [6, 7, 8]  # 5 users share 3 virtual partitions
    assert "  empty virtual partitions: 0-5" in text
    assert len(text.splitlines()) == 3 + len(vps) + 1 + 5


def test_two_writes_of_the_same_input_give_the_same_sequences() -> None:
    source = source_topic()
    first = virtual_partition_sequences(kplex_write(source))
    assert first == virtual_partition_sequences(kplex_write(list(reversed(source))))
    assert first != virtual_partition_sequences(swap_adjacent_in_one_vp(kplex_write(source)))


def test_a_partition_without_a_leader_yet_is_asked_again_until_it_answers():
    """A topic created a moment ago may answer NOT_LEADER_FOR_PARTITION (CI saw it on a busy
    machine): the verifier asks again within its timeout; an error that is not retriable, or
    the deadline, still fails."""
    import time as _time

    from confluent_kafka import KafkaError, KafkaException, TopicPartition

    from kplex.testing import verify as v

    class Flaky:
        def __init__(self, failures, code=KafkaError.NOT_LEADER_FOR_PARTITION):
            self.failures, self.code, self.asked = failures, code, 0

        def get_watermark_offsets(self, tp, timeout):
            self.asked += 1
            if self.asked <= self.failures:
                raise KafkaException(KafkaError(self.code, "as librdkafka says it"))
            return (0, 7)

    flaky = Flaky(3)
    assert v._watermarks(flaky, TopicPartition("t", 0), _time.monotonic() + 10) == (0, 7) and flaky.asked == 4
    with pytest.raises(KafkaException):
        v._watermarks(Flaky(1, KafkaError.TOPIC_AUTHORIZATION_FAILED), TopicPartition("t", 0), _time.monotonic() + 10)
    with pytest.raises(KafkaException):
        v._watermarks(Flaky(100), TopicPartition("t", 0), _time.monotonic() + 0.5)

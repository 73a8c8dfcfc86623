"""The event-time merge of read-time tables (kplex.reader.merge, twin of EventTimeMerge.java).

Late rule, max_delay_ms = 10, for a record on partition p:

    largest order seen before it on p   its order   late?
    (nothing yet)                       any         no
    100                                 95          no   (5 behind)
    100                                 90          no   (10 behind: the bound is inclusive)
    100                                 89          yes  (11 behind)
    100, on another partition only      0           no   (lateness is per partition)
"""
from __future__ import annotations

import random

import pytest

from kplex.reader.merge import EventTimeMerge, Pending


@pytest.mark.parametrize("before,order,late", [
    ([], -(2**63), False), ([100], 95, False), ([100], 90, False), ([100], 89, True),
    ([100, 60], 89, True),
])
def test_a_record_is_late_only_beyond_the_bound_below_its_own_partitions_maximum(before, order, late):
    m: EventTimeMerge[str] = EventTimeMerge(2, max_delay_ms=10)
    for o in before:
        m.accept(0, o)
    m.accept(1, 1_000)
    assert m.is_late(0, order) is late


def feed(partitions: list[list[tuple[int, bytes]]], delay: int, rng: random.Random) -> tuple[list, list]:
    """Feed the partitions in a random interleaving, polling as a reader would."""
    m: EventTimeMerge[tuple] = EventTimeMerge(len(partitions), delay)
    cursors = [0] * len(partitions)
    out, late = [], []
    for p, recs in enumerate(partitions):
        if not recs:
            m.end(p)
    while not m.all_ended():
        p = rng.choice([p for p in range(len(partitions)) if not m.ended(p)])
        for _ in range(rng.randint(1, 5)):
            if cursors[p] == len(partitions[p]):
                break
            order, value = partitions[p][cursors[p]]
            offset = cursors[p]
            cursors[p] += 1
            if m.is_late(p, order):
                late.append((p, offset))
                continue
            m.accept(p, order)
            m.add(Pending(order, b"k", value, p, offset), (order, value, p, offset))
        if cursors[p] == len(partitions[p]):
            m.end(p)
        while (item := m.poll()) is not None:
            out.append(item)
    return out, late


def late_by_the_rule(partitions: list[list[tuple[int, bytes]]], delay: int) -> set[tuple[int, int]]:
    """The late rule above, worked out on each partition alone: (partition, offset) of each record
    more than ``delay`` below the largest order before it on its partition."""
    late = set()
    for p, recs in enumerate(partitions):
        for i, (order, _) in enumerate(recs):
            if i and order < max(o for o, _ in recs[:i]) - delay:
                late.add((p, i))
    return late


@pytest.mark.parametrize("seed", range(20))
def test_any_interleaving_gives_the_sorted_non_late_records_and_the_same_late_ones(seed):
    rng = random.Random(seed)
    delay = rng.choice([0, 5, 50])
    partitions = []
    for _ in range(rng.randint(1, 5)):
        clock, recs = 0, []
        for _ in range(rng.randint(0, 40)):
            clock += rng.randint(0, 20)
            recs.append((clock - rng.randint(0, 80), bytes([rng.randint(0, 3)])))
        partitions.append(recs)
    first, late = feed(partitions, delay, random.Random(seed + 1000))
    again, late_again = feed(partitions, delay, random.Random(seed + 2000))
    assert (first, sorted(late)) == (again, sorted(late_again))
    late_set = set(late)
    assert late_set == late_by_the_rule(partitions, delay)
    kept = [(o, v, p, i) for p, recs in enumerate(partitions) for i, (o, v) in enumerate(recs)
            if (p, i) not in late_set]
    assert first == sorted(kept)


def test_records_wait_until_every_partition_has_passed_them():
    m: EventTimeMerge[str] = EventTimeMerge(2, max_delay_ms=0)
    m.accept(0, 10)
    m.add(Pending(10, b"k", b"a", 0, 0), "a")
    assert m.poll() is None           # partition 1 has said nothing yet
    m.accept(1, 10)
    m.add(Pending(10, b"k", b"b", 1, 0), "b")
    assert m.poll() is None           # 10 is not strictly below the watermark 10
    m.accept(1, 11)
    assert m.poll() is None
    m.accept(0, 12)
    assert (m.poll(), m.poll(), m.poll()) == ("a", "b", None)

"""Event-time merge of several partitions with a bound on lateness.

The Python twin of ``EventTimeMerge.java``; the rules are the original kplex's
``max_delay_ms``:

* **late**: a record is late when its order value is more than ``max_delay_ms``
  below the largest order value seen *before it on its own partition*. This
  depends on one partition's sequence alone, so every reader finds the same late
  records however its fetches interleave;
* **watermark**: the smallest (largest order seen - ``max_delay_ms``) over the
  partitions not read to their end; a partition that has produced nothing holds
  it at -infinity;
* **release**: a buffered record leaves once its order value is strictly below
  the watermark, smallest first; when every partition has ended, the rest leaves.

A *source* is one partition of one source topic: with several topics
(``'kplex.source' = 'clicks, views'``) lateness and the watermark are per
(topic, partition) all the same.

The output is therefore the sorted sequence of the non-late records, ties broken
as a kplex write breaks them (order value, key bytes, value bytes with a missing
value first), then by the topic's position in ``kplex.source``, partition and
offset (one topic: partition and offset).

>>> m = EventTimeMerge(sources=2, max_delay_ms=10)
>>> for source, order in [(0, 100), (1, 95), (0, 120), (1, 112)]:
...     assert not m.is_late(source, order)
...     m.accept(source, order)
...     m.add(Pending(order, b"k", b"v", source, 0), f"{source}@{order}")
>>> m.poll(), m.poll(), m.poll()   # watermark min(120, 112) - 10 = 102
('1@95', '0@100', None)
>>> m.is_late(0, 105)              # 15 ms below partition 0's 120
True
>>> m.end(0); m.end(1); m.poll(), m.poll()
('1@112', '0@120')
"""

from __future__ import annotations

import heapq
import itertools
from typing import Generic, NamedTuple, TypeVar

__all__ = ["EventTimeMerge", "Pending"]

T = TypeVar("T")
_MIN = float("-inf")


class Pending(NamedTuple):
    """The sort position of a buffered record; ``topic_index`` is its topic's position
    among the ``kplex.source`` topics sorted by name (0 for a table of one source topic).

    >>> sorted([Pending(5, b"k", b"v", 0, 9, topic_index=1), Pending(5, b"k", b"v", 2, 3)],
    ...        key=Pending.sort_key)[0].partition
    2
    """

    order: int
    key: bytes | None
    value: bytes | None
    partition: int
    offset: int
    topic_index: int = 0

    def sort_key(self) -> tuple:
        return (self.order,
                (0, b"") if self.key is None else (1, self.key),
                (0, b"") if self.value is None else (1, self.value),
                self.topic_index, self.partition, self.offset)


class EventTimeMerge(Generic[T]):
    """See the module docstring; ``sources`` are numbered 0..n-1."""

    def __init__(self, sources: int, max_delay_ms: int) -> None:
        self.max_delay_ms = max_delay_ms
        self._high: list[int | None] = [None] * sources
        self._ended = [False] * sources
        self._heap: list[tuple[tuple, int, T]] = []
        self._tie = itertools.count()

    def high(self, source: int) -> int | None:
        """The largest order value seen on ``source``, None before its first record."""
        return self._high[source]

    def _mark(self, source: int) -> float:
        high = self._high[source]
        return _MIN if high is None else high - self.max_delay_ms

    def is_late(self, source: int, order: int) -> bool:
        return order < self._mark(source)

    def accept(self, source: int, order: int) -> None:
        """Record a record that is not late (of any virtual partition) on ``source``."""
        high = self._high[source]
        if high is None or order > high:
            self._high[source] = order

    def add(self, pending: Pending, item: T) -> None:
        heapq.heappush(self._heap, (pending.sort_key(), next(self._tie), item))

    def end(self, source: int) -> None:
        self._ended[source] = True

    def ended(self, source: int) -> bool:
        return self._ended[source]

    def all_ended(self) -> bool:
        return all(self._ended)

    def watermark(self) -> float:
        marks = [self._mark(s) for s, done in enumerate(self._ended) if not done]
        return min(marks) if marks else float("inf")

    def holds_watermark(self, source: int) -> bool:
        return not self._ended[source] and self._mark(source) == self.watermark()

    def poll(self) -> T | None:
        """The next item in order if it can be released now, else None."""
        if not self._heap:
            return None
        if self.all_ended() or self._heap[0][0][0] < self.watermark():
            return heapq.heappop(self._heap)[2]
        return None

    @property
    def buffered(self) -> int:
        return len(self._heap)

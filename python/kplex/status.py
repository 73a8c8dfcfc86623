"""``kplex status <table>``: a table's state in one place, for an operator.

Its definition (``_kplex_tables``); per physical partition its offsets; per virtual
partition the highest order value written (the marks in ``_kplex_commits``) and, with
``count=True``, its record count (read from the records' headers with a plain
read_committed consumer); who holds the writer claim and since when; a pending commit and
what recovery would do with it; commits Kafka cut short; the table's open transactions
(Kafka's admin API); and per streaming query its last epoch, its held-back records (how
many, in how many files), the source partitions idle at its last epoch, and its lag (the offsets it committed to its monitoring group ``kplex.<table>.<query>``).

>>> state = status("127.0.0.1:9092", "pageviews_by_user", count=True)  # doctest: +SKIP
>>> state["writer_claim"], state["records_per_virtual_partition"]["3"]  # doctest: +SKIP
(None, 1187)
"""
from __future__ import annotations

import json
from collections import Counter
from datetime import datetime, timezone
from typing import Any, Mapping

from kplex.definitions import TABLES_TOPIC
from kplex.placement import VP_HEADER, murmur2, to_positive

__all__ = ["status", "count_per_virtual_partition", "render", "control_plane_partition"]

#: Over how many partitions a control plane kplex creates spreads its tables (``CompactedTopic``;
#: tests/vectors/control_plane.json pins both, with :func:`control_plane_partition`).
CONTROL_PLANE_PARTITIONS = 16


def control_plane_partition(table: str, partitions: int = CONTROL_PLANE_PARTITIONS) -> int:
    """The partition of ``_kplex_commits`` that holds a table's records (its writer claims,
    epoch marks and pending commits) when the log spreads tables over ``partitions`` (1: a log
    written by a kplex before it was scoped, and never spread), as the JVM plugin places them
    (``CompactedTopic.ofScope``): ``toPositive(murmur2(table)) % partitions``, the rule
    tests/vectors/control_plane.json pins on both sides.

    >>> control_plane_partition("pageviews_by_user", 1)
    0
    """
    return 0 if partitions <= 1 else to_positive(murmur2(table.encode("utf-8"))) % partitions


def status(bootstrap: str, table: str, *, count: bool = False, metadata_topic: str = TABLES_TOPIC,
           kafka_options: Mapping[str, str] | None = None, config: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The state of ``table`` as a dict (the ``--json`` form). ``kafka_options``: Java client
    settings for the JVM side (as the catalog's ``kafka.*``); ``config``: librdkafka settings
    for counting."""
    from kplex.admin import catalog_options, run_admin

    if count and config:  # librdkafka's refusal of its settings, before the JVM starts
        from kplex.kafka.clients import check_settings

        check_settings(config)
    state = json.loads(run_admin(["status", table], catalog_options(bootstrap, metadata_topic, kafka_options)))
    if count and state.get("kind") == "kplex-written":
        counts = count_per_virtual_partition(bootstrap, state["topic"], config)
        state["records_per_virtual_partition"] = {str(vp): n for vp, n in sorted(counts.items())}
    return state


def count_per_virtual_partition(bootstrap: str, topic: str, config: Mapping[str, Any] | None = None,
                                timeout: float = 15.0) -> Counter:
    """Committed records per ``kplex.vp`` header, from the start of each partition to its
    last stable offset, read with a plain read_committed consumer."""
    from confluent_kafka import KafkaError, TopicPartition

    from kplex.kafka.clients import access_error, consume, consumer, partitions

    client = consumer(bootstrap, config)
    counts: Counter = Counter()
    try:
        parts = partitions(client, topic, timeout) or []
        client.assign([TopicPartition(topic, p, 0) for p in parts])
        todo = set(parts)
        while todo:
            msgs = consume(client, timeout)
            if not msgs:
                raise access_error(client) or TimeoutError(f"counting {topic}: no progress for {timeout:g} s")
            for m in msgs:
                if m.error() is not None:
                    if m.error().code() != KafkaError._PARTITION_EOF:
                        raise access_error(client, m.error()) or RuntimeError(str(m.error()))
                    todo.discard(m.partition())
                    continue
                vp = dict(m.headers() or ()).get(VP_HEADER)
                if vp is not None:
                    counts[int(vp)] += 1
    finally:
        client.close()
    return counts


def render(state: Mapping[str, Any]) -> str:
    """The state as the terminal shows it."""
    d = state["definition"]
    lines = [f"table {state['table']} ({state['kind']}): " + ", ".join(f"{k} = {v}" for k, v in d.items())]
    if state["kind"] != "kplex-written":
        return "\n".join(lines + ["read-time table: nothing is written, no writer state"])
    lines.append(f"topic {state['topic']}:")
    for p in state["partitions"]:
        lines.append(f"  partition {p['partition']}: offsets {p['start_offset']}..{p['end_offset']}"
                     f" (last stable {p['last_stable_offset']})")
    counts = state.get("records_per_virtual_partition", {})
    highs = state["high_order_per_virtual_partition"]
    over = f"DROP TABLE kplex.{state['table']}, then CREATE TABLE, starts the table over"
    if any(p["end_offset"] > 0 for p in state["partitions"]):  # others' records: DROP keeps them
        replaced = (f"DROP TABLE kplex.{state['table']} keeps this topic and the records others wrote to it, a plain"
                    " topic of that name then: to CREATE the table again, delete the topic with Kafka's tools first")
    else:
        replaced = over
    if not state["partitions"]:
        lines.append(f"  does not exist: it was deleted outside kplex, and the next write or read fails ({over})")
    elif highs and state.get("written_topic_id") and state.get("topic_id") not in (None, state["written_topic_id"]):
        lines.append(f"  is not the topic kplex committed records to (its topic id is {state['topic_id']}, kplex wrote to"
                     f" {state['written_topic_id']}): it was deleted and created again outside kplex, what kplex wrote"
                     f" is gone, and the next write fails ({replaced})")
    elif highs and all(p["end_offset"] == 0 for p in state["partitions"]):
        lines.append("  holds no records and never held any, yet kplex committed records to it (the highest order"
                     " values below): it was deleted and created again outside kplex, and the next write fails"
                     f" ({over})")
    if "records_per_virtual_partition" in state:
        lines.append("virtual partitions (records, highest order value written):")
        for vp in range(state["virtual_partitions"]):
            lines.append(f"  {vp:>4}  {counts.get(str(vp), 0):>10}  {highs.get(str(vp), '-')}")
    else:
        lines.append("virtual partitions (highest order value written; --count adds their records):")
        for vp in range(state["virtual_partitions"]):
            lines.append(f"  {vp:>4}  {highs.get(str(vp), '-')}")
    if "floor_every_virtual_partition" in state:
        lines.append(f"floor of every virtual partition: {state['floor_every_virtual_partition']}"
                     " (a strict stream's published watermark: no writer writes below it)")
    claim = state["writer_claim"]
    lines.append("writer claim: " + ("free" if claim is None else
                                     f"{claim.get('query')} since {_utc(claim.get('claimed_at_ms'))}"
                                     f" (renewed {claim.get('age_ms')} ms ago"
                                     + (", stale: the next write takes it over)" if claim.get("stale") else ")")))
    pending = state["pending_commit"]
    lines.append("pending commit: " + ("none" if pending is None else
                                       f"query {pending['query']}, {pending['transactions']} transactions;"
                                       f" {pending['recovery']}"))
    lines += [f"cut short: {p}" for p in state["partial_commits"]]
    txns = state["open_transactions"]
    lines.append(f"open transactions: {len(txns)}" + "".join(
        f"\n  {t['transactional_id']} {t['state']} open {t.get('open_ms', '?')} ms" for t in txns))
    if "open_transactions_error" in state:
        lines.append(f"  ({state['open_transactions_error']})")
    for q in state["streams"]:
        lag = "" if q.get("kind") != "streaming query" else (
            f", lag {q['total_lag']} ({q['monitor_group']})" if q.get("monitor_group") else ", lag unknown (no group)")
        held = (f"{q['held_records']} held records in {q['held_files']} files" if "held_records" in q
                else f"{q['held_files']} held files")
        idle = f", idle partitions {q['idle_partitions']}" if q.get("idle_partitions") else ""
        source = q.get("source")
        lineage = "" if not source else (
            f", from topic {source['topic']} at offsets {source['ends']}"
            + (f", resumed from {q['resumed_from']}" if q.get("resumed_from") else ""))
        if q.get("reads"):  # the INSERTs': what they read of each source topic
            lineage = ", read " + "; ".join(f"{topic.replace(' where ', ' through filter ')} {ranges}"
                                            for topic, ranges in sorted(q["reads"].items()))
        lines.append(f"{q['kind']} {q['query']}: last epoch {q['last_epoch']}, {held}{idle}{lineage}{lag}")
    plane = state.get("control_plane")
    if plane and "end_offset" in plane:
        lines.append(f"control plane {plane['topic']}, partition {plane.get('partition', 0)} of"
                     f" {plane.get('partitions', 1)}: {plane['live_keys']} live keys, offsets"
                     f" {plane['start_offset']}..{plane['end_offset']} (each JVM reads what was appended since its"
                     " last read, of this table's partition only)")
    return "\n".join(lines)


def _utc(ms: int | None) -> str:
    """Epoch milliseconds as UTC ISO-8601, as DESCRIBE TABLE EXTENDED shows them."""
    if ms is None:
        return "?"
    return datetime.fromtimestamp(ms / 1000, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")

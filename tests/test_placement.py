"""kplex.placement against Kafka's own Java implementation (no broker needed).

The vectors below were printed by org.apache.kafka.common.utils.Utils.murmur2
and Utils.toPositive from kafka-clients-4.1.1.jar (the jar kplex ships), run
on the listed bytes; vp is toPositive(murmur2) % 9 and physical is vp % 3.
"""

from __future__ import annotations

import pytest

from kplex.placement import (
    canonical_bigint_key,
    canonical_int_key,
    canonical_key,
    murmur2,
    physical_partition,
    to_positive,
    virtual_partition,
)

# (bytes in hex, Utils.murmur2, Utils.toPositive, % 9, % 3) as printed by Java.
JAVA_VECTORS = [
    ("", 275646681, 275646681, 0, 0),  # empty
    ("61", -1563381124, 584102524, 4, 1),  # "a", length 1
    ("6162", 316155434, 316155434, 5, 2),  # "ab"
    ("616263", 479470107, 479470107, 3, 0),  # "abc"
    ("61626364", -1323649548, 823834100, 2, 2),  # "abcd", one full block
    ("6162636465", 461995741, 461995741, 1, 1),  # "abcde"
    ("616263646566", 1870650108, 1870650108, 0, 0),  # "abcdef"
    ("61626364656667", -346467175, 1801016473, 4, 1),  # "abcdefg"
    ("6162636465666768", -955427363, 1192056285, 3, 0),  # "abcdefgh", two blocks
    ("616263646566676869", -619679810, 1527803838, 0, 0),  # "abcdefghi", length 9
    ("557365725f31", 75255973, 75255973, 7, 1),  # "User_1"
    ("557365725f36", -1817233923, 330249725, 8, 2),  # "User_6"
    ("506167655f3632", 285540470, 285540470, 8, 2),  # "Page_62"
    ("6b61666b61", -798503068, 1348980580, 1, 1),  # "kafka"
    ("5573c3a9725fc3bc5f33", -1682407848, 465075800, 8, 2),  # "Usér_ü_3" UTF-8
    ("e794a8e688b75f35", 182946301, 182946301, 7, 1),  # "用户_5" UTF-8
    ("c3bc", 1419834458, 1419834458, 2, 2),  # "ü"
    ("f09f9880", 131881617, 131881617, 0, 0),  # "😀", 4-byte UTF-8
    ("ff", -311467685, 1836015963, 6, 0),  # high bit set in the tail
    ("80ff7f00", -1282299421, 865184227, 7, 1),  # high bits set in a block
    ("fffefdfcfbfaf9", -166236347, 1981247301, 0, 0),  # block + 3-byte tail, all high
    ("000000000000002a", 506863552, 506863552, 4, 1),  # LongSerializer(42)
    ("ffffffffffffffff", 185950397, 185950397, 2, 2),  # LongSerializer(-1)
    ("0000002a", 1606757304, 1606757304, 3, 0),  # IntegerSerializer(42)
    ("fffffff9", 1512427270, 1512427270, 4, 1),  # IntegerSerializer(-7)
]


@pytest.mark.parametrize("hex_bytes, java_hash, java_positive, vp9, physical3", JAVA_VECTORS)
def test_murmur2_matches_kafka_java_utils_bit_for_bit(
    hex_bytes: str, java_hash: int, java_positive: int, vp9: int, physical3: int
) -> None:
    data = bytes.fromhex(hex_bytes)
    assert murmur2(data) == java_hash
    assert to_positive(murmur2(data)) == java_positive


@pytest.mark.parametrize("hex_bytes, java_hash, java_positive, vp9, physical3", JAVA_VECTORS)
def test_virtual_and_physical_partition_follow_kafkas_default_partitioner(
    hex_bytes: str, java_hash: int, java_positive: int, vp9: int, physical3: int
) -> None:
    vp = virtual_partition(bytes.fromhex(hex_bytes), 9)
    assert vp == vp9
    assert physical_partition(vp, 3) == physical3


def test_murmur2_accepts_bytearray_and_memoryview() -> None:
    assert murmur2(bytearray(b"kafka")) == murmur2(memoryview(b"kafka")) == -798503068


def test_murmur2_returns_a_signed_32_bit_int() -> None:
    hashes = [murmur2(str(i).encode()) for i in range(2000)]
    assert all(-(2**31) <= h < 2**31 for h in hashes)
    assert any(h < 0 for h in hashes) and any(h > 0 for h in hashes)


@pytest.mark.parametrize("v, p", [(9, 3), (12, 4), (6, 6), (100, 10)])
def test_when_p_divides_v_the_physical_partition_is_the_one_a_plain_producer_picks(
    v: int, p: int
) -> None:
    # G4: (h % V) % P == h % P whenever P divides V.
    for i in range(2000):
        key = f"User_{i}".encode()
        assert physical_partition(virtual_partition(key, v), p) == virtual_partition(key, p)


@pytest.mark.parametrize(
    "value, expected_hex",
    [
        ("User_6", "557365725f36"),
        ("Usér_ü_3", "5573c3a9725fc3bc5f33"),
        ("用户_5", "e794a8e688b75f35"),
        ("", ""),
        (b"\x00\xff", "00ff"),
        (bytearray(b"ab"), "6162"),
        (42, "000000000000002a"),
        (-1, "ffffffffffffffff"),
        (2**63 - 1, "7fffffffffffffff"),
        (-(2**63), "8000000000000000"),
    ],
)
def test_canonical_key_of_strings_bytes_and_ints_matches_kafkas_serializers(
    value: object, expected_hex: str
) -> None:
    assert canonical_key(value).hex() == expected_hex


@pytest.mark.parametrize(
    "value, expected",
    [
        ({"b": 1, "a": 2}, '{"a":2,"b":1}'),
        ({"z": {"y": 1, "x": [2, 1]}, "a": None}, '{"a":null,"z":{"x":[2,1],"y":1}}'),
        ([3, "ü", {"k": "用户"}], '[3,"ü",{"k":"用户"}]'),
        (True, "true"),
        (1.5, "1.5"),
    ],
)
def test_canonical_key_of_other_values_is_compact_json_with_sorted_keys_in_utf8(
    value: object, expected: str
) -> None:
    assert canonical_key(value) == expected.encode("utf-8")


def test_int_keys_are_4_bytes_and_bigint_keys_8_bytes_big_endian() -> None:
    assert canonical_int_key(42).hex() == "0000002a"
    assert canonical_int_key(-7).hex() == "fffffff9"
    assert canonical_int_key(-(2**31)).hex() == "80000000"
    assert canonical_bigint_key(42) == canonical_key(42)


@pytest.mark.parametrize(
    "call, error",
    [
        (lambda: canonical_key(None), ValueError),
        (lambda: canonical_key(2**63), ValueError),
        (lambda: canonical_key(float("nan")), TypeError),
        (lambda: canonical_key({1, 2}), TypeError),
        (lambda: canonical_int_key(2**31), ValueError),
        (lambda: canonical_int_key("1"), TypeError),
        (lambda: canonical_int_key(True), TypeError),
        (lambda: virtual_partition(b"k", 0), ValueError),
        (lambda: physical_partition(1, 0), ValueError),
        (lambda: physical_partition(-1, 3), ValueError),
    ],
)
def test_invalid_keys_and_partition_counts_are_rejected(call, error) -> None:
    with pytest.raises(error):
        call()

package io.kplex.spark.functions;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import io.kplex.spark.errors.KplexException;
import io.kplex.spark.functions.ConfluentWire.Format;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.Test;

/**
 * The Confluent framing, byte by byte. The framed values are those Confluent's own
 * serializers wrote (confluent-kafka's AvroSerializer and ProtobufSerializer, schema ids 1
 * and 2, captured once): tests/test_confluent_sources.py decodes such values with Spark's
 * from_avro / from_protobuf against a real broker.
 */
public class ConfluentWireTest {
  private static byte[] bytes(int... b) {
    byte[] out = new byte[b.length];
    for (int i = 0; i < b.length; i++) out[i] = (byte) b[i];
    return out;
  }

  /** AvroSerializer: {"userid": "User_1", "viewtime": 123}, schema id 1. */
  private static final byte[] AVRO = bytes(0, 0, 0, 0, 1, 0x0c, 'U', 's', 'e', 'r', '_', '1', 0xf6, 0x01);
  /** ProtobufSerializer: the same as a proto3 message, schema id 2, message indexes [0] as one 0 byte. */
  private static final byte[] PROTOBUF = bytes(0, 0, 0, 0, 2, 0, 0x0a, 6, 'U', 's', 'e', 'r', '_', '1', 0x10, 0x7b);

  @Test
  public void theSchemaIdIsTheBigEndianIntAfterTheMagicByte() {
    assertEquals(1, ConfluentWire.schemaId(AVRO));
    assertEquals(2, ConfluentWire.schemaId(PROTOBUF));
    assertEquals(0x01020304, ConfluentWire.schemaId(bytes(0, 1, 2, 3, 4)));
  }

  @Test
  public void avroAndJsonPayloadsStartAfterFiveBytes() {
    assertArrayEquals(bytes(0x0c, 'U', 's', 'e', 'r', '_', '1', 0xf6, 0x01), ConfluentWire.payload(AVRO, Format.AVRO));
    assertArrayEquals(bytes('{', '}'), ConfluentWire.payload(bytes(0, 0, 0, 0, 9, '{', '}'), Format.JSON));
    assertArrayEquals(new byte[0], ConfluentWire.payload(bytes(0, 0, 0, 0, 9), Format.AVRO));
  }

  @Test
  public void protobufPayloadsSkipTheMessageIndexes() {
    assertArrayEquals(bytes(0x0a, 6, 'U', 's', 'e', 'r', '_', '1', 0x10, 0x7b),
        ConfluentWire.payload(PROTOBUF, Format.PROTOBUF));
    // Indexes [1, 2]: count 2 and the indexes, each zig-zag encoded (2 -> 4, 1 -> 2, 2 -> 4).
    assertArrayEquals(bytes(0x08, 1), ConfluentWire.payload(bytes(0, 0, 0, 0, 3, 4, 2, 4, 0x08, 1), Format.PROTOBUF));
    // A multi-byte varint index: 300 zig-zag encoded is 600 = 0xd8 0x04.
    assertArrayEquals(bytes(0x08), ConfluentWire.payload(bytes(0, 0, 0, 0, 3, 2, 0xd8, 0x04, 0x08), Format.PROTOBUF));
  }

  @Test
  public void valuesNotInTheFormatAreNamedByLengthAndFirstBytes() {
    KplexException magic = assertThrows(KplexException.class,
        () -> ConfluentWire.payload(bytes('{', '"', 'a', '"', ':', '1', '}'), Format.AVRO));
    assertTrue(magic.getMessage(), magic.getMessage().startsWith("[KPLEX_NOT_CONFLUENT_FRAMED] a value of 7 bytes"
        + " (starting 0x7b2261223a317d)"));
    assertTrue(magic.getMessage().contains("magic byte 123, not 0"));
    KplexException shortValue = assertThrows(KplexException.class, () -> ConfluentWire.schemaId(bytes(0, 0, 1)));
    assertTrue(shortValue.getMessage().contains("fewer than 5 bytes"));
    KplexException past = assertThrows(KplexException.class,
        () -> ConfluentWire.payload(bytes(0, 0, 0, 0, 3, 4, 2), Format.PROTOBUF));
    assertTrue(past.getMessage().contains("message indexes running past its end"));
  }

  @Test
  public void theBoundFunctionsPassNullAndReadTheFormatArgument() {
    ConfluentWire.Payload payload = new ConfluentWire.Payload(org.apache.spark.sql.types.DataTypes.BinaryType, true);
    assertNull(payload.invoke(null, UTF8String.fromString("protobuf")));
    assertArrayEquals(ConfluentWire.payload(PROTOBUF, Format.PROTOBUF),
        payload.invoke(PROTOBUF, UTF8String.fromString("PROTOBUF")));
    KplexException bad = assertThrows(KplexException.class, () -> payload.invoke(AVRO, UTF8String.fromString("thrift")));
    assertTrue(bad.getMessage(), bad.getMessage().contains("'thrift'"));
  }
}

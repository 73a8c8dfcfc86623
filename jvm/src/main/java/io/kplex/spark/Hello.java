package io.kplex.spark;
public class Hello { public static org.apache.spark.sql.types.DataType t() { return org.apache.spark.sql.types.DataTypes.BinaryType; } }

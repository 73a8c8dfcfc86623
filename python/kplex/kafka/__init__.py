"""kplex's Kafka clients from Python: client settings as kplex reads them (`config`), and the
confluent-kafka clients made from them (`clients`)."""

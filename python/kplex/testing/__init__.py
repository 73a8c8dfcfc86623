"""Tools for demos, tests and benchmarks: not part of the user API.

Nothing in the library (``kplex`` and ``kplex.sqltools``) imports these modules; they
use the library, and the ``kplex demo`` and ``kplex datagen`` commands load them only
when they run.

- :mod:`kplex.testing.datagen`: the seed article's ``pageviews`` topic, generated
- :mod:`kplex.testing.verify`: a derived topic checked against its source (G1-G5)
  with a plain Kafka consumer, the "different door" of the tests
- :mod:`kplex.testing.demo`: the seed article's example, run and checked
- :mod:`kplex.testing.local_kafka`: a real Apache Kafka broker (or cluster) on this
  machine, from a source checkout (``scripts/kafka.sh``)

>>> from kplex.testing.verify import check_derived_topic
>>> check_derived_topic("127.0.0.1:9092", "pageviews", "pageviews_by_user", 9, 3).ok  # doctest: +SKIP
True
"""

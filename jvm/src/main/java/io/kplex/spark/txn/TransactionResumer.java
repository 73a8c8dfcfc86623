package io.kplex.spark.txn;

import io.kplex.spark.errors.Errors;
import io.kplex.spark.errors.KplexException;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.utils.ProducerIdAndEpoch;

/**
 * The one place where kplex reaches into kafka-clients' internals (the route Apache
 * Flink's exactly-once Kafka sink takes): read a producer's id and epoch, and resume
 * an open transaction in another producer, in another JVM, so the driver can commit or
 * abort what a task wrote; and let the task's producer go on after the driver committed. No released Kafka offers a public API for this (KIP-939's
 * prepare/complete calls are not in any release yet).
 *
 * <p>Checked against the kafka-clients version pinned in gradle.properties
 * ({@code kafkaClientsVersion}); {@link #selfCheck()} fails loudly if the internals
 * it needs are gone, and a test calls it.
 */
public final class TransactionResumer {
  private TransactionResumer() {}

  private static final String MANAGER = "org.apache.kafka.clients.producer.internals.TransactionManager";
  private static final String STATE = MANAGER + "$State";
  private static final String COORDINATOR_TYPE = "org.apache.kafka.common.requests.FindCoordinatorRequest$CoordinatorType";

  private static Field field(Class<?> owner, String name) throws ReflectiveOperationException {
    Field f = owner.getDeclaredField(name);
    f.setAccessible(true);
    return f;
  }

  private static Object manager(KafkaProducer<?, ?> producer) throws ReflectiveOperationException {
    return field(KafkaProducer.class, "transactionManager").get(producer);
  }

  /** The producer id and epoch of a transactional producer after initTransactions. */
  public static ProducerIdAndEpoch idAndEpoch(KafkaProducer<?, ?> producer) {
    try {
      Object manager = manager(producer);
      return (ProducerIdAndEpoch) field(manager.getClass(), "producerIdAndEpoch").get(manager);
    } catch (ReflectiveOperationException e) {
      throw incompatible(e);
    }
  }

  /**
   * Puts a fresh producer (same transactional.id, no initTransactions), or one that resumed
   * and committed a transaction before (READY), into the open transaction of (producerId,
   * epoch), so that commitTransaction / abortTransaction finish it.
   */
  public static void resume(KafkaProducer<?, ?> producer, long producerId, short epoch) {
    try {
      Object manager = manager(producer);
      Class<?> type = manager.getClass();
      synchronized (manager) {
        Object partitions = field(type, "txnPartitionMap").get(manager);
        if ("READY".equals(String.valueOf(field(type, "currentState").get(manager)))) {
          // A kept producer that committed before: back to where a new one starts.
          transition(manager, "UNINITIALIZED");
        }
        transition(manager, "INITIALIZING");
        Method reset = partitions.getClass().getDeclaredMethod("reset");
        reset.setAccessible(true);
        reset.invoke(partitions);
        field(type, "producerIdAndEpoch").set(manager, new ProducerIdAndEpoch(producerId, epoch));
        transition(manager, "READY");
        transition(manager, "IN_TRANSACTION");
        field(type, "transactionStarted").setBoolean(manager, true);
      }
    } catch (ReflectiveOperationException e) {
      throw incompatible(e);
    }
  }

  /**
   * Has a fresh producer (same transactional.id, no initTransactions) look up its
   * transaction coordinator now, in the background, as {@code initTransactions} would first
   * do, without asking the coordinator anything about the id: a transaction resumed in it
   * later ({@link #resume}) is committed in one request instead of a lookup, a back-off and
   * the request.
   */
  public static void findCoordinator(KafkaProducer<?, ?> producer, String transactionalId) {
    try {
      Object manager = manager(producer);
      Class<?> types = Class.forName(COORDINATOR_TYPE, true, manager.getClass().getClassLoader());
      Method lookup = manager.getClass().getDeclaredMethod("lookupCoordinator", types, String.class);
      lookup.setAccessible(true);
      synchronized (manager) {
        lookup.invoke(manager, transactionCoordinatorType(types), transactionalId);
      }
      Object sender = field(KafkaProducer.class, "sender").get(producer);
      sender.getClass().getMethod("wakeup").invoke(sender);
    } catch (ReflectiveOperationException e) {
      throw incompatible(e);
    }
  }

  /** Whether the producer's transaction state is an error (a failed lookup): it can resume nothing. */
  public static boolean failed(KafkaProducer<?, ?> producer) {
    try {
      Object manager = manager(producer);
      synchronized (manager) {
        return String.valueOf(field(manager.getClass(), "currentState").get(manager)).endsWith("ERROR");
      }
    } catch (ReflectiveOperationException e) {
      throw incompatible(e);
    }
  }

  @SuppressWarnings({"unchecked", "rawtypes"})
  private static Object transactionCoordinatorType(Class<?> types) {
    return Enum.valueOf((Class<? extends Enum>) types, "TRANSACTION");
  }

  /**
   * Makes a task's producer, whose transaction the driver committed by resuming it in
   * another producer, ready for its next transaction under the same producer id and epoch:
   * what the producer does itself once its own commit is answered (it goes through
   * COMMITTING_TRANSACTION, then completes the transaction: READY, no partitions in it).
   * Only for a producer that flushed everything it sent, and whose transaction is known to
   * be committed (the epoch it wrote is the table's last committed one).
   */
  public static void adoptCommitted(KafkaProducer<?, ?> producer) {
    try {
      Object manager = manager(producer);
      synchronized (manager) {
        transition(manager, "COMMITTING_TRANSACTION");
        Method complete = manager.getClass().getDeclaredMethod("completeTransaction");
        complete.setAccessible(true);
        complete.invoke(manager);
      }
    } catch (ReflectiveOperationException e) {
      throw incompatible(e);
    }
  }

  @SuppressWarnings({"unchecked", "rawtypes"})
  private static void transition(Object manager, String state) throws ReflectiveOperationException {
    Class<? extends Enum> states = (Class<? extends Enum>) Class.forName(STATE, true,
        manager.getClass().getClassLoader());
    Method transitionTo = manager.getClass().getDeclaredMethod("transitionTo", states);
    transitionTo.setAccessible(true);
    transitionTo.invoke(manager, Enum.valueOf(states, state));
  }

  /** Throws if this kafka-clients lacks any internal that {@link #resume} uses. */
  public static void selfCheck() {
    try {
      Class<?> manager = Class.forName(MANAGER);
      field(KafkaProducer.class, "transactionManager");
      field(manager, "txnPartitionMap").getType().getDeclaredMethod("reset");
      field(manager, "producerIdAndEpoch");
      field(manager, "transactionStarted");
      field(manager, "currentState");
      Class<?> states = Class.forName(STATE);
      manager.getDeclaredMethod("transitionTo", states);
      manager.getDeclaredMethod("completeTransaction");
      Class<?> types = Class.forName(COORDINATOR_TYPE);
      manager.getDeclaredMethod("lookupCoordinator", types, String.class);
      transactionCoordinatorType(types);
      field(KafkaProducer.class, "sender").getType().getMethod("wakeup");
      for (String s : new String[] {"UNINITIALIZED", "INITIALIZING", "READY", "IN_TRANSACTION",
          "COMMITTING_TRANSACTION"}) {
        boolean found = false;
        for (Object c : states.getEnumConstants()) found |= ((Enum<?>) c).name().equals(s);
        if (!found) throw new NoSuchFieldException(STATE + "." + s);
      }
    } catch (ReflectiveOperationException e) {
      throw incompatible(e);
    }
  }

  private static KplexException incompatible(ReflectiveOperationException e) {
    return Errors.kafkaClientsInternals(org.apache.kafka.common.utils.AppInfoParser.getVersion(), e);
  }
}

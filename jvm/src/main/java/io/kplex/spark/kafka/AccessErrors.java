package io.kplex.spark.kafka;

import io.kplex.spark.errors.Errors;
import io.kplex.spark.errors.Errors.Resource;
import io.kplex.spark.errors.KplexException;
import org.apache.kafka.common.errors.AuthenticationException;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.ClusterAuthorizationException;
import org.apache.kafka.common.errors.GroupAuthorizationException;
import org.apache.kafka.common.errors.SslAuthenticationException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.errors.TransactionalIdAuthorizationException;

/**
 * Turns Kafka's authentication and authorization failures into errors that name the
 * principal (never its secret), the resource and the operation, so that an operator
 * knows which ACL to grant. Kafka's own exceptions say only "Not authorized to access
 * topics: [t]" or "Transactional Id authorization failed."
 */
public final class AccessErrors {
  private AccessErrors() {}

  /**
   * The kplex error for an access failure found in {@code t} or its causes, or null.
   * {@code operation} (READ, WRITE, DESCRIBE, CREATE, DELETE) and {@code resource} (for
   * example {@code Resource.topic("a")}) say what kplex was doing; a topic named by Kafka's
   * exception wins.
   */
  public static KplexException of(KafkaConf kafka, Throwable t, String operation, Resource resource) {
    for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
      if (c instanceof KplexException k && (k.code().equals("NOT_AUTHORIZED") || k.code().equals("NOT_AUTHENTICATED"))) {
        return k;
      }
      if (c instanceof AuthenticationException) {
        return notAuthenticated(kafka, (AuthenticationException) c);
      }
      if (c instanceof AuthorizationException) {
        return notAuthorized(kafka, (AuthorizationException) c, operation, resource);
      }
    }
    return null;
  }

  /** {@code t} as an access error if it is one, else as it is (unchecked) or wrapped. */
  public static RuntimeException rethrow(KafkaConf kafka, Throwable t, String operation, Resource resource) {
    KplexException access = of(kafka, t, operation, resource);
    if (access != null) return access;
    return t instanceof RuntimeException r ? r : Errors.kafka(t);
  }

  public static KplexException notAuthorized(KafkaConf kafka, Throwable cause, String operation, Resource resource) {
    Resource what = resource;
    if (cause instanceof TopicAuthorizationException topics && !topics.unauthorizedTopics().isEmpty()) {
      what = Resource.topics(topics.unauthorizedTopics());
    } else if (cause instanceof GroupAuthorizationException group && group.groupId() != null) {
      what = Resource.consumerGroup(group.groupId());
    } else if (cause instanceof ClusterAuthorizationException) {
      what = Resource.cluster();
    } else if (cause instanceof TransactionalIdAuthorizationException && (what == null || !what.transactional())) {
      what = Resource.transactionalIds();
    }
    String op = operation == null ? "use" : operation;
    return Errors.notAuthorized(kafka.principal(), op, what, kafka.bootstrap(), cause);
  }

  /** The broker lists {@code allowed} as the principal's operations on {@code topic}, without {@code operation}. */
  public static KplexException notListed(KafkaConf kafka, String operation, String topic,
      java.util.Collection<String> allowed) {
    return Errors.topicOperationNotListed(kafka.principal(), operation, topic, allowed, kafka.bootstrap());
  }

  public static KplexException notAuthenticated(KafkaConf kafka, AuthenticationException cause) {
    String hint = cause instanceof SslAuthenticationException
        ? "the TLS handshake failed: check kafka.ssl.truststore.* (the broker's CA) and kafka.ssl.endpoint.identification.algorithm"
        : "wrong password, unknown user or a SASL mechanism the broker does not enable: check kafka.sasl.mechanism and kafka.sasl.jaas.config";
    String how = kafka.securityProtocol()
        + (kafka.securityProtocol().toUpperCase(java.util.Locale.ROOT).startsWith("SASL") ? ", " + kafka.saslMechanism() : "");
    return Errors.notAuthenticated(kafka.bootstrap(), kafka.principal(), how, hint, cause);
  }
}

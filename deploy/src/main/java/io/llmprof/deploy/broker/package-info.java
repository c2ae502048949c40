/** The in-process single-node KRaft broker (Kafka's own server classes) and the `broker` command. */
package io.llmprof.deploy.broker;

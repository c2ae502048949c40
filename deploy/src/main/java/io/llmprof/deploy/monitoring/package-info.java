/** The Debian Prometheus and Alertmanager as child processes on loopback: binary lookup, configs, start and stop. */
package io.llmprof.deploy.monitoring;

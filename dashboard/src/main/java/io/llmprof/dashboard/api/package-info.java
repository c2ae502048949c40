/** The HTTP API (Javalin): REST views of ranks and passes, health, and the Prometheus endpoint. */
package io.llmprof.dashboard.api;

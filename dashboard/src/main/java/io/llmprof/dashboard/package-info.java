/** The dashboard: {@link io.llmprof.dashboard.DashboardServer} wires the feed, the store, the meters and the HTTP API. */
package io.llmprof.dashboard;

/** Every meter name and tag key of the dashboard, in {@link io.llmprof.dashboard.metrics.DashboardMeters}. */
package io.llmprof.dashboard.metrics;

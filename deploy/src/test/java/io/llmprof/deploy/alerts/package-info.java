/** Tests of the Prometheus alert rules in grafana/alerts: promtool checks and the metric names they select. */
package io.llmprof.deploy.alerts;

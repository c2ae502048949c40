/** Who may call llmprof's listeners: the shared API token of the dashboard, the ingest and the metrics endpoints. */
package io.llmprof.events.access;

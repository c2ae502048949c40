/** Per-layer-type (cluster) statistics over the layers of a set of passes: one core for text report and dashboard. */
package io.llmprof.events.cluster;

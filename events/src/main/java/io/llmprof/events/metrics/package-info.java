/** Metric helpers shared by the modules that expose Micrometer meters. */
package io.llmprof.events.metrics;

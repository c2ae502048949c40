/** Readers of service-level events (msServiceProfiler style) and llmprof's own JSON-lines format. */
package io.llmprof.agent.service;

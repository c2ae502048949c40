/** Per (rank, lane) start-time ordering of trace events with a bounded reorder buffer. */
package io.llmprof.agent.sequence;

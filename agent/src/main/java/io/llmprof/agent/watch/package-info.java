/** Polls a directory for new and growing trace files and ships them, with an acknowledged checkpoint. */
package io.llmprof.agent.watch;

/** Replays trace files through the producer, paced to trace time at a chosen speed. */
package io.llmprof.agent.replay;

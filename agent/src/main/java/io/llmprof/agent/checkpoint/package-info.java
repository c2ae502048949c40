/** What the agents' checkpoints share: durable JSON files, their default place, the topic id they were written for. */
package io.llmprof.agent.checkpoint;

/** Every meter name and tag key of the agent. */
package io.llmprof.agent.metrics;

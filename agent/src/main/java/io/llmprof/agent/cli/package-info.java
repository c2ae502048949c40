/** picocli commands of the agent: {@code agent replay}, {@code agent watch}, {@code agent bench}. */
package io.llmprof.agent.cli;

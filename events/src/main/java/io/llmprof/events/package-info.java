/** Wire records shared by agent, streams app and dashboard, the topic registry, and the one JSON mapper. */
package io.llmprof.events;

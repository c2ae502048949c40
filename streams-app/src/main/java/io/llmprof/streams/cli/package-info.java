/** The `llmprof streams` subcommand: wiring of config, meters, the streams app and its /metrics endpoint. */
package io.llmprof.streams.cli;

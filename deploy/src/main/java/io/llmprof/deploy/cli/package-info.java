/** The `llmprof` command line: wiring of every module's subcommands, and the demo. */
package io.llmprof.deploy.cli;

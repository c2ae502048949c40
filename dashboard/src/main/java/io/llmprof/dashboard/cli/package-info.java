/** The `dashboard` subcommand. */
package io.llmprof.dashboard.cli;

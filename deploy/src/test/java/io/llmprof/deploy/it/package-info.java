/** End-to-end tests: agent, real in-process broker, streams app and dashboard together. */
package io.llmprof.deploy.it;

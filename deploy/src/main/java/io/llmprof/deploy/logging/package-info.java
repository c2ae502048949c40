/** The launcher's console logging: slf4j-simple's output, less retried-and-harmless errors and stack traces. */
package io.llmprof.deploy.logging;

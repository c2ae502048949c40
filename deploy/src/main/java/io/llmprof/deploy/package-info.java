/** Deployment: the embedded broker, the llmprof CLI and the one-command demo. */
package io.llmprof.deploy;

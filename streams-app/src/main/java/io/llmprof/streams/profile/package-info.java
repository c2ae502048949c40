/** Model profiles as data (anchor, blocks per layer, role, category rules), config.json inference and layer typing. */
package io.llmprof.streams.profile;

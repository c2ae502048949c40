/** Every meter name and tag key of the streams app, and the Prometheus scrape endpoint of `llmprof streams`. */
package io.llmprof.streams.metrics;

/** Exception handlers: bad records are dead-lettered, counted and reported as anomalies, never fatal. */
package io.llmprof.streams.error;

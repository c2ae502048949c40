/** Bounded in-memory passes per rank, with their layers joined as they arrive. */
package io.llmprof.dashboard.store;

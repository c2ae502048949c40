/** Kernel categories (ordered regex rules, first match wins) and canonical kernel names. */
package io.llmprof.streams.category;

/** The processor that adapts the per-rank pass segmenter to a state store, de-duplication and an idle punctuator. */
package io.llmprof.streams.processor;

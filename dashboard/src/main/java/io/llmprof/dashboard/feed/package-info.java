/** The read_committed consumer that fills the store and the meters from llmprof's output topics. */
package io.llmprof.dashboard.feed;

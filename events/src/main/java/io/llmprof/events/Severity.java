package io.llmprof.events;

/** How bad a data-quality anomaly is. */
public enum Severity {
    /** Expected in real traces; counted for visibility. */
    INFO,
    /** Results are degraded (a damaged pass) but nothing was dropped. */
    WARN,
    /** Input could not be read or processed: some data did not make it into results. */
    DATA_LOSS
}

package io.llmprof.dashboard.store;

/** Result of looking up one pass of one rank. */
public sealed interface PassLookup {
    /** The pass record arrived (its layers may still be arriving). */
    record Found(StoredPass pass) implements PassLookup {}

    /** Layers of this pass arrived, the pass record itself not yet. */
    record Pending(int layersReceived) implements PassLookup {}

    /** Nothing of this pass is held: never seen, or dropped by the bounds. */
    record Missing() implements PassLookup {}
}

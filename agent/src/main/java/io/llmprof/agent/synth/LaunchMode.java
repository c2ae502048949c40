package io.llmprof.agent.synth;

/** How the host launches a pass's kernels. */
public enum LaunchMode {
    /** One cudaLaunchKernel (or driver launch) per kernel, each inside its cpu_op; the GPU waits on the CPU. */
    EAGER,
    /** One cudaGraphLaunch per pass; every kernel of the pass carries that launch's correlation id. */
    GRAPH
}

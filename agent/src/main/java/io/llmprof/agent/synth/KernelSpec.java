package io.llmprof.agent.synth;

/**
 * One kernel of the pass template.
 *
 * @param name full kernel name as CUPTI reports it
 * @param meanUs mean duration before jitter (comm kernels: the transfer time once every rank has arrived)
 * @param comm whether it is a collective on the comm stream
 * @param api how it is launched in eager mode
 * @param op the cpu_op that launches it, or null when it is launched by the same cpu_op as the kernel before it
 * @param section prologue, a model layer, or epilogue
 * @param layer model layer index (meaningful in section LAYER)
 * @param anchor whether it is the profile's anchor kernel
 * @param geometry launch geometry and the args CUPTI derives from it
 */
record KernelSpec(
        String name,
        double meanUs,
        Comm comm,
        LaunchApi api,
        OpSpec op,
        Section section,
        int layer,
        boolean anchor,
        Geometry geometry) {

    enum Section {
        PROLOGUE,
        LAYER,
        EPILOGUE
    }

    enum Comm {
        NONE,
        ALL_REDUCE,
        ALL_GATHER;

        boolean onCommStream() {
            return this != NONE;
        }
    }

    enum LaunchApi {
        CUDA_LAUNCH_KERNEL("cuda_runtime", "cudaLaunchKernel", 211),
        CU_LAUNCH_KERNEL("cuda_driver", "cuLaunchKernel", 307),
        CU_LAUNCH_KERNEL_EX("cuda_driver", "cuLaunchKernelEx", 652);

        final String cat;
        final String apiName;
        final int cbid;

        LaunchApi(String cat, String apiName, int cbid) {
            this.cat = cat;
            this.apiName = apiName;
            this.cbid = cbid;
        }
    }

    /**
     * The cpu_op around one or more launches.
     *
     * @param name aten or custom op name
     * @param inputDims JSON array text for "Input Dims"
     * @param inputTypes JSON array text for "Input type"
     */
    record OpSpec(String name, String inputDims, String inputTypes) {}

    /** Grid and block as CUPTI reports them, on a 132-SM H100. */
    record Geometry(int gx, int gy, int gz, int bx, int regs, int smem) {
        static final int SMS = 132;

        long blocks() {
            return (long) gx * gy * gz;
        }

        double blocksPerSm() {
            return blocks() / (double) SMS;
        }

        double warpsPerSm() {
            return blocks() * Math.ceil(bx / 32.0) / SMS;
        }

        int occupancyPercent() {
            double warps = Math.min(64, warpsPerSm());
            return (int) Math.round(Math.min(100, 100 * warps / 64));
        }
    }
}

package io.llmprof.streams.host;

import java.util.HashMap;
import java.util.Map;
import java.util.Set;

/**
 * What a runtime/driver API call is, by name. Names are matched without their version suffix ({@code _v7000})
 * and without the per-thread-stream suffixes {@code _ptsz}/{@code _ptds}.
 *
 * <ul>
 *   <li>launch (M2): the names of ANALYSIS.md section 1 ({@code cudaLaunchKernel}, {@code cuLaunchKernel},
 *       {@code cuLaunchKernelEx}, {@code cudaLaunchKernelExC}, {@code cudaGraphLaunch}, {@code hipLaunchKernel},
 *       {@code hipExtModuleLaunchKernel}, {@code hipGraphLaunch}) plus the other calls that only launch kernels:
 *       {@code cudaLaunchKernelEx}, {@code cudaLaunchCooperativeKernel}, {@code cuLaunchCooperativeKernel},
 *       {@code cuGraphLaunch}, {@code hipModuleLaunchKernel}, {@code hipExtLaunchKernel}, {@code
 *       hipLaunchCooperativeKernel}.
 *   <li>graph launch: {@code cudaGraphLaunch}, {@code cuGraphLaunch}, {@code hipGraphLaunch}.
 *   <li>sync: stream, device, context and event synchronization ({@code cudaStreamSynchronize}, {@code
 *       cudaDeviceSynchronize}, {@code cudaEventSynchronize}, {@code cudaThreadSynchronize}, {@code
 *       cuStreamSynchronize}, {@code cuCtxSynchronize}, {@code cuEventSynchronize}, {@code hip*} equivalents).
 *   <li>D2H copy: {@code cuMemcpyDtoH*}, {@code hipMemcpyDtoH*} by name; the generic copies ({@code
 *       cudaMemcpy*}, {@code cuMemcpy}, {@code hipMemcpy*}) only when their correlated GPU memcpy says DtoH.
 *   <li>alloc: {@code cudaMalloc*}, {@code cudaFree*}, {@code cudaHostAlloc}, {@code cuMemAlloc*}, {@code
 *       cuMemFree*}, {@code cuMemCreate}, {@code cuMemRelease}, {@code cuMemHostAlloc}, {@code hipMalloc*}, {@code
 *       hipFree*}, {@code hipHostMalloc}, {@code hipHostFree}, {@code hipExtMallocWithFlags}.
 *   <li>GPU work: launches, copies and memsets ({@code *Memcpy*}, {@code *Memset*}): the calls whose correlation
 *       a GPU operation carries.
 * </ul>
 */
public final class ApiNames {
    public static final int LAUNCH = 1;
    public static final int GRAPH_LAUNCH = 2;
    static final int SYNC = 4;
    static final int ALLOC = 8;
    /** A copy that is D2H only when its GPU memcpy says so. */
    static final int MEMCPY = 16;

    static final int D2H = 32;
    static final int GPU_WORK = 64;

    private static final Set<String> LAUNCHES = Set.of(
            "cudaLaunchKernel",
            "cuLaunchKernel",
            "cuLaunchKernelEx",
            "cudaLaunchKernelExC",
            "cudaLaunchKernelEx",
            "cudaLaunchCooperativeKernel",
            "cuLaunchCooperativeKernel",
            "hipLaunchKernel",
            "hipExtModuleLaunchKernel",
            "hipModuleLaunchKernel",
            "hipExtLaunchKernel",
            "hipLaunchCooperativeKernel");
    private static final Set<String> GRAPH_LAUNCHES = Set.of("cudaGraphLaunch", "cuGraphLaunch", "hipGraphLaunch");
    private static final Set<String> SYNCS = Set.of(
            "cudaStreamSynchronize",
            "cudaDeviceSynchronize",
            "cudaEventSynchronize",
            "cudaThreadSynchronize",
            "cuStreamSynchronize",
            "cuCtxSynchronize",
            "cuEventSynchronize",
            "hipStreamSynchronize",
            "hipDeviceSynchronize",
            "hipEventSynchronize");
    private static final String[] ALLOC_PREFIXES = {
        "cudaMalloc",
        "cudaFree",
        "cudaHostAlloc",
        "cuMemAlloc",
        "cuMemFree",
        "cuMemCreate",
        "cuMemRelease",
        "cuMemHostAlloc",
        "hipMalloc",
        "hipFree",
        "hipHostMalloc",
        "hipHostFree",
        "hipExtMallocWithFlags"
    };
    private static final int CACHE = 4096;

    private final Map<String, Integer> cache = new HashMap<>();

    /**
     * The name without an export's version suffix, a CUDA version of 4+ digits ({@code cudaLaunchKernel_v7000} to
     * {@code cudaLaunchKernel}); the API's own {@code _v2} stays ({@code cuMemcpyDtoHAsync_v2}), as it is another
     * entry point. {@link #classify} reads past it.
     */
    static String stripVersion(String name) {
        return stripVersion(name, 4);
    }

    private static String stripVersion(String name, int minDigits) {
        int u = name.lastIndexOf("_v");
        if (u < 0 || name.length() - (u + 2) < minDigits) {
            return name;
        }
        for (int i = u + 2; i < name.length(); i++) {
            if (!Character.isDigit(name.charAt(i))) {
                return name;
            }
        }
        return name.substring(0, u);
    }

    /** Flags of a (version-stripped) name. */
    int flags(String name) {
        Integer hit = cache.get(name);
        if (hit != null) {
            return hit;
        }
        int f = classify(name);
        if (cache.size() >= CACHE) {
            cache.clear(); // API names are few; a flood of odd names only costs re-classification
        }
        cache.put(name, f);
        return f;
    }

    static int classify(String stripped) {
        String n = stripVersion(stripped, 1); // cuMemcpyDtoHAsync_v2 is a D2H copy as cuMemcpyDtoHAsync is
        if (n.endsWith("_ptsz") || n.endsWith("_ptds")) {
            n = n.substring(0, n.length() - 5);
        }
        int f = 0;
        if (GRAPH_LAUNCHES.contains(n)) {
            f |= LAUNCH | GRAPH_LAUNCH | GPU_WORK;
        } else if (LAUNCHES.contains(n)) {
            f |= LAUNCH | GPU_WORK;
        }
        if (SYNCS.contains(n)) {
            f |= SYNC;
        }
        for (String p : ALLOC_PREFIXES) {
            if (n.startsWith(p)) {
                f |= ALLOC;
                break;
            }
        }
        if (n.startsWith("cuMemcpyDtoH") || n.startsWith("hipMemcpyDtoH")) {
            f |= D2H | GPU_WORK;
        } else if (n.startsWith("cudaMemcpy") || n.startsWith("hipMemcpy") || n.startsWith("cuMemcpy")) {
            f |= MEMCPY | GPU_WORK;
        }
        if (n.startsWith("cudaMemset") || n.startsWith("hipMemset") || n.startsWith("cuMemset")) {
            f |= GPU_WORK;
        }
        return f;
    }

    /**
     * What a runtime call launches, by its raw name (suffixes stripped): {@link #LAUNCH}, {@link #GRAPH_LAUNCH} or 0;
     * through this instance's cache of {@link #flags}.
     */
    public int launchKind(String rawName) {
        int f = flags(stripVersion(rawName));
        return is(f, GRAPH_LAUNCH) ? GRAPH_LAUNCH : is(f, LAUNCH) ? LAUNCH : 0;
    }

    static boolean is(int flags, int flag) {
        return (flags & flag) != 0;
    }

    /** Whether a GPU memcpy's name says device to host (Kineto and nsys names). */
    static boolean isD2hCopyName(String name) {
        return name.contains("DtoH") || name.contains("Device -> Host") || name.contains("Device -> Pinned");
    }
}

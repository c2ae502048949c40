package io.llmprof.streams.boundary;

import io.llmprof.events.TraceEvent;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

/**
 * What in a trace says a step trains (docs/analysis.md "Training steps"): the autograd engine running backward
 * nodes ({@code autograd::engine::evaluate_function: XxxBackward0} cpu_ops, or a node's own {@code XxxBackward0}
 * cpu_op), and the optimizer's {@code Optimizer.step#..} / {@code Optimizer.zero_grad#..} annotations, host or GPU
 * side. Forward-only work (inference, an eval step) has none of them.
 */
public final class TrainingEvidence {
    /** Backward ops (autograd engine nodes). */
    public static final long BACKWARD = 1;
    /** An optimizer step or zero_grad. */
    public static final long OPTIMIZER = 2;

    private static final String EVALUATE_FUNCTION = "autograd::engine::evaluate_function";
    private static final Pattern BACKWARD_NODE = Pattern.compile("[A-Za-z0-9_]+Backward\\d+");

    private TrainingEvidence() {}

    /** {@link #BACKWARD} / {@link #OPTIMIZER} bits of one host or GPU-annotation event; 0 for anything else. */
    public static long of(TraceEvent e) {
        String name = e.name();
        return switch (e.kind()) {
            case CPU_OP -> name.startsWith(EVALUATE_FUNCTION)
                            || (name.contains("Backward")
                                    && BACKWARD_NODE.matcher(name).matches())
                    ? BACKWARD
                    : 0;
            case USER_ANNOTATION, GPU_ANNOTATION -> name.startsWith("Optimizer.step#")
                            || name.startsWith("Optimizer.zero_grad#")
                    ? OPTIMIZER
                    : 0;
            default -> 0;
        };
    }

    /** "backward ops and an optimizer step", for notes. */
    public static String describe(long bits) {
        List<String> what = new ArrayList<>(2);
        if ((bits & BACKWARD) != 0) {
            what.add("backward ops");
        }
        if ((bits & OPTIMIZER) != 0) {
            what.add("an optimizer step");
        }
        return String.join(" and ", what);
    }
}

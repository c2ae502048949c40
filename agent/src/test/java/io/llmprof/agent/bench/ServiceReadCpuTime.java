package io.llmprof.agent.bench;

import io.llmprof.agent.service.ServiceReaders;
import io.llmprof.events.service.ServiceBatch;
import io.llmprof.events.service.ServiceEvent;
import io.llmprof.events.wire.ProtoServiceBatchSerde;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * CPU of the agent's service path without Kafka, on the calling thread: read a service file ({@link ServiceReaders}:
 * parse and reorder) and encode its batches of {@code batch} events as the shipper does ({@code ServiceBatch}
 * protobuf). Prints each round's thread CPU and events per CPU second, for the read alone and with encoding.
 *
 * <pre>
 * java -cp agent/target/test-classes:agent/target/classes:$(cat agent/target/bench-classpath.txt) \
 *     io.llmprof.agent.bench.ServiceReadCpuTime FILE [WARMUP_ROUNDS] [ROUNDS] [BATCH]
 * </pre>
 */
public final class ServiceReadCpuTime {
    private ServiceReadCpuTime() {}

    public static void main(String[] args) throws Exception {
        Path file = Path.of(args[0]);
        int warmup = args.length > 1 ? Integer.parseInt(args[1]) : 2;
        int rounds = args.length > 2 ? Integer.parseInt(args[2]) : 4;
        int batch = args.length > 3 ? Integer.parseInt(args[3]) : 1024;
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        ProtoServiceBatchSerde serde = new ProtoServiceBatchSerde();
        for (int round = 0; round < warmup + rounds; round++) {
            for (boolean encode : new boolean[] {false, true}) {
                long[] events = {0, 0};
                List<ServiceEvent> pending = new ArrayList<>(batch);
                long cpu0 = threads.getCurrentThreadCpuTime();
                ServiceReaders.read(
                        file,
                        e -> {
                            events[0]++;
                            if (encode) {
                                pending.add(e);
                                if (pending.size() == batch) {
                                    events[1] += serde.encode(new ServiceBatch(
                                                    "job", "inst", "src", events[0], List.copyOf(pending), false))
                                            .length;
                                    pending.clear();
                                }
                            }
                        },
                        p -> {});
                double cpu = (threads.getCurrentThreadCpuTime() - cpu0) / 1e9;
                System.out.printf(
                        Locale.ROOT,
                        "%s round %d, %s: %,d events, %.3f CPU s, %,.0f events per CPU second%s%n",
                        round < warmup ? "warm-up" : "measured",
                        round,
                        encode ? "read + encode" : "read",
                        events[0],
                        cpu,
                        events[0] / cpu,
                        encode ? String.format(Locale.ROOT, " (%,d bytes encoded)", events[1]) : "");
            }
        }
    }
}

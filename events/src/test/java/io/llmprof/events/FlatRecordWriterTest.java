package io.llmprof.events;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.RecordComponent;
import java.lang.reflect.Type;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/** The flat writer against data binding: the same bytes for every output record it takes, else it declines. */
public class FlatRecordWriterTest {
    @Test
    void writesTheServiceRecordsAndLeavesNestedOnesToDataBinding() {
        TreeSet<String> flat = new TreeSet<>();
        for (Topic<?, ?> topic : Topics.registry()) {
            if (topic.valueSerde() instanceof JsonSerde<?> json
                    && FlatRecordWriter.of(json.type()).isPresent()) {
                flat.add(json.type().getSimpleName());
            }
        }
        // PdRecord holds a list of records, the trace and host records nested records: data binding writes those.
        assertThat(flat)
                .containsExactly(
                        "BatchRecord",
                        "CoordinatorRecord",
                        "EpBalanceRecord",
                        "ForwardRecord",
                        "KvCacheRecord",
                        "MoeRecord",
                        "RequestRecord",
                        "RequestStateRecord");
    }

    /** Every flat record type, random values (nulls, extremes, escapes, non-ASCII): the mapper's bytes exactly. */
    @Test
    void writesTheBytesTheMapperWrites() throws Exception {
        Random random = new Random(27);
        int types = 0;
        for (Topic<?, ?> topic : Topics.registry()) {
            if (!(topic.valueSerde() instanceof JsonSerde<?> json)) {
                continue;
            }
            @SuppressWarnings("unchecked")
            Class<Object> type = (Class<Object>) json.type();
            FlatRecordWriter<Object> writer = FlatRecordWriter.of(type).orElse(null);
            if (writer == null) {
                continue;
            }
            types++;
            int compared = 0;
            for (int n = 0; n < 2_000; n++) {
                Object record = randomRecord(type, random, false);
                if (record == null) {
                    continue;
                }
                byte[] expected = Json.mapper().writeValueAsBytes(record);
                byte[] written = writer.write(record);
                assertThat(written)
                        .as("%s %s", type.getSimpleName(), new String(expected, StandardCharsets.UTF_8))
                        .isNotNull();
                assertThat(new String(written, StandardCharsets.UTF_8))
                        .isEqualTo(new String(expected, StandardCharsets.UTF_8));
                assertThat(Arrays.equals(written, expected)).isTrue();
                compared++;
            }
            assertThat(compared).as(type.getSimpleName()).isGreaterThan(1_000);
        }
        assertThat(types).isEqualTo(8);
    }

    /** A record type of the writer's kinds whose lists and maps may hold nulls (the output records copy theirs). */
    public record Probe(String name, List<String> tags, Map<String, Long> counts, double share) {}

    /** A null inside a list or a map: the writer declines, and the serde writes data binding's bytes. */
    @Test
    void aNullInsideAListOrMapGoesToDataBinding() throws Exception {
        FlatRecordWriter<Probe> writer = FlatRecordWriter.of(Probe.class).orElseThrow();
        JsonSerde<Probe> serde = new JsonSerde<>(Probe.class);
        Map<String, Long> nullValue = new LinkedHashMap<>();
        nullValue.put("a", 1L);
        nullValue.put("b", null);
        List<Probe> declined = List.of(
                new Probe("x", Arrays.asList("a", null), Map.of(), 0.5), new Probe("x", List.of(), nullValue, 0.5));
        for (Probe p : declined) {
            assertThat(writer.write(p)).as("%s", p).isNull();
            assertThat(serde.serializer().serialize("t", p))
                    .isEqualTo(Json.mapper().writeValueAsBytes(p));
        }
        Probe plain = new Probe(null, List.of("a"), Map.of("k", 2L), Double.NaN);
        assertThat(writer.write(plain))
                .isNotNull()
                .isEqualTo(Json.mapper().writeValueAsBytes(plain))
                .isEqualTo(serde.serializer().serialize("t", plain));
    }

    private static Object randomRecord(Class<?> type, Random random, boolean nullsInside) throws Exception {
        RecordComponent[] components = type.getRecordComponents();
        Class<?>[] types = new Class<?>[components.length];
        Object[] values = new Object[components.length];
        for (int i = 0; i < components.length; i++) {
            types[i] = components[i].getType();
            values[i] = randomValue(components[i].getGenericType(), random, nullsInside);
        }
        Constructor<?> c = type.getDeclaredConstructor(types);
        try {
            return c.newInstance(values);
        } catch (InvocationTargetException e) {
            return null; // values the record refuses
        }
    }

    private static Object randomValue(Type type, Random random, boolean nullsInside) {
        boolean nullable = !(type instanceof Class<?> c && c.isPrimitive());
        if (nullable && random.nextInt(5) == 0) {
            return null;
        }
        if (type == String.class) {
            return randomString(random);
        } else if (type == long.class || type == Long.class) {
            return switch (random.nextInt(4)) {
                case 0 -> Long.MIN_VALUE;
                case 1 -> Long.MAX_VALUE;
                case 2 -> (long) random.nextInt(1000) - 500;
                default -> random.nextLong();
            };
        } else if (type == int.class || type == Integer.class) {
            return random.nextInt(4) == 0 ? Integer.MIN_VALUE : random.nextInt();
        } else if (type == double.class || type == Double.class) {
            return switch (random.nextInt(8)) {
                case 0 -> -0.0;
                case 1 -> Double.MIN_VALUE;
                case 2 -> 1e300 * random.nextDouble();
                case 3 -> (double) random.nextInt(100);
                case 4 -> Double.NaN;
                case 5 -> Double.NEGATIVE_INFINITY;
                case 6 -> 1e-7 * random.nextDouble();
                default -> random.nextDouble();
            };
        } else if (type == boolean.class || type == Boolean.class) {
            return random.nextBoolean();
        } else if (type instanceof ParameterizedType p && p.getRawType() == List.class) {
            List<String> list = new ArrayList<>();
            for (int n = random.nextInt(4); n > 0; n--) {
                list.add(nullsInside && random.nextInt(3) == 0 ? null : randomString(random));
            }
            return list;
        } else if (type instanceof ParameterizedType p && p.getRawType() == Map.class) {
            Map<String, Long> map = new LinkedHashMap<>();
            for (int n = random.nextInt(4); n > 0; n--) {
                map.put(randomString(random), nullsInside && random.nextInt(3) == 0 ? null : random.nextLong());
            }
            return map;
        }
        throw new AssertionError("no random value for " + type);
    }

    private static String randomString(Random random) {
        return switch (random.nextInt(7)) {
            case 0 -> "";
            case 1 -> "quote\" backslash\\ newline\n tab\t \u0001 </script>";
            case 2 -> "naïve ✓ 𝄞";
            case 3 -> "rid-" + random.nextInt(100);
            case 4 -> "x".repeat(random.nextInt(3_000));
            case 5 -> "\ud800 lone surrogate";
            default -> Long.toString(random.nextLong());
        };
    }
}

package io.llmprof.dashboard.feed;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.llmprof.events.Json;
import io.llmprof.events.JsonSerde;
import io.llmprof.events.Topic;
import io.llmprof.events.Topics;
import io.llmprof.events.service.BatchRecord;
import io.llmprof.events.service.ForwardRecord;
import io.llmprof.events.service.RequestStateRecord;
import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.RecordComponent;
import java.lang.reflect.Type;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeSet;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.errors.SerializationException;
import org.junit.jupiter.api.Test;

class FlatRecordReaderTest {
    private static final String FORWARD =
            "{\"job\":\"j\",\"instance\":\"i\",\"pid\":7,\"dpRank\":\"0\",\"iteration\":3,"
                    + "\"startNs\":100,\"durNs\":20,\"bubbleNs\":-5,\"batchType\":\"decode\",\"batchSize\":8,\"spec\":true}";

    private static Object bind(Class<?> type, String json) {
        return new JsonSerde<>(type).deserializer().deserialize("t", json.getBytes(StandardCharsets.UTF_8));
    }

    private static <T> T flat(Class<T> type, String json) {
        return FlatRecordReader.of(type).orElseThrow().read(json.getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void readsTheServiceRecordsFieldByFieldAndLeavesNestedOnesToDataBinding() {
        TreeSet<String> flat = new TreeSet<>();
        for (Topic<?, ?> topic : Topics.registry()) {
            if (topic.valueSerde() instanceof JsonSerde<?> json
                    && FlatRecordReader.of(json.type()).isPresent()) {
                flat.add(json.type().getSimpleName());
            }
        }

        // PdRecord holds a list of records, the trace and host records nested records: data binding reads those.
        // The four busiest service records travel as protobuf (OutputRecordSerde).
        assertThat(flat).containsExactly("CoordinatorRecord", "EpBalanceRecord", "KvCacheRecord", "MoeRecord");
    }

    /** Every flat record type, random values (nulls, extremes, escapes) written by the one mapper: read the same. */
    @Test
    void readsWhatTheMapperWritesAsDataBindingDoes() throws Exception {
        Random random = new Random(15);
        for (Topic<?, ?> topic : Topics.registry()) {
            if (!(topic.valueSerde() instanceof JsonSerde<?> json)) {
                continue;
            }
            Class<?> type = json.type();
            FlatRecordReader<?> reader = FlatRecordReader.of(type).orElse(null);
            if (reader == null) {
                continue;
            }
            int compared = 0;
            for (int n = 0; n < 2_000; n++) {
                Object record = randomRecord(type, random);
                if (record == null) {
                    continue;
                }
                byte[] bytes = Json.mapper().writeValueAsBytes(record);
                Object read = reader.read(bytes);
                String why = type.getSimpleName() + " " + new String(bytes, StandardCharsets.UTF_8);
                assertThat(read)
                        .as(why)
                        .isNotNull()
                        .isEqualTo(record)
                        .isEqualTo(bind(type, new String(bytes, StandardCharsets.UTF_8)));
                compared++;
            }
            assertThat(compared).as(type.getSimpleName()).isGreaterThan(1_000);
        }
    }

    @Test
    void skipsUnknownFieldsAndTakesAnyOrder() {
        String json = "{\"extra\":{\"a\":[1,{\"b\":null}]},\"spec\":true,\"batchSize\":8,\"batchType\":\"decode\","
                + "\"bubbleNs\":-5,\"more\":[\"x\"],\"durNs\":20,\"startNs\":100,\"iteration\":3,\"dpRank\":\"0\","
                + "\"pid\":7,\"instance\":\"i\",\"job\":\"j\"}";

        ForwardRecord read = flat(ForwardRecord.class, json);

        assertThat(read)
                .isEqualTo(new ForwardRecord("j", "i", 7L, "0", 3, 100, 20, -5L, "decode", 8, true))
                .isEqualTo(flat(ForwardRecord.class, FORWARD))
                .isEqualTo(bind(ForwardRecord.class, json));
    }

    @Test
    void absentBoxedFieldsAreNullAsInDataBinding() {
        String json = "{\"job\":\"j\",\"iteration\":3,\"startNs\":100,\"durNs\":20,\"batchSize\":8,\"spec\":false}";

        assertThat(flat(ForwardRecord.class, json))
                .isEqualTo(new ForwardRecord("j", null, null, null, 3, 100, 20, null, null, 8, false))
                .isEqualTo(bind(ForwardRecord.class, json));
    }

    /**
     * Shapes the mapper never writes are left to data binding (null here), which reads them (coercions) or refuses them
     * with its own message, as before.
     */
    @Test
    void leavesOtherShapesToDataBinding() {
        List<String> others = List.of(
                FORWARD.replace("\"batchSize\":8", "\"batchSize\":\"8\""), // number as a string: coerced
                FORWARD.replace("\"batchSize\":8", "\"batchSize\":8.0"), // float for an int: coerced
                FORWARD.replace("\"durNs\":20,", ""), // primitive absent
                FORWARD.replace("\"durNs\":20", "\"durNs\":null"), // primitive null
                FORWARD.replace("\"batchSize\":8", "\"batchSize\":4294967296"), // int overflow: refused
                FORWARD.replace("\"pid\":7", "\"pid\":92233720368547758070"), // long overflow: refused
                FORWARD.replace("\"job\":\"j\"", "\"job\":5"), // number for a string: coerced
                FORWARD.replace("\"spec\":true", "\"spec\":1"),
                FORWARD.replace("\"job\":\"j\"", "\"job\":\"j\",\"job\":\"k\""), // twice
                FORWARD.substring(0, FORWARD.length() - 1), // cut
                "[" + FORWARD + "]",
                "\"text\"",
                "");
        for (String json : others) {
            assertThat(flat(ForwardRecord.class, json)).as(json).isNull();
        }
        assertThat(bind(ForwardRecord.class, others.get(0))).isEqualTo(flat(ForwardRecord.class, FORWARD));
        assertThatThrownBy(() -> bind(ForwardRecord.class, others.get(4))).isInstanceOf(SerializationException.class);
    }

    @Test
    void leavesDoublesWrittenAsTextOrIntegersToDataBinding() {
        String batch = "{\"job\":\"j\",\"instance\":\"i\",\"name\":\"modelExec\",\"kind\":\"execute\",\"startNs\":1,"
                + "\"durNs\":2,\"batchSize\":3,\"kvUsage\":%s,\"rids\":[\"a\",\"b\"]}";

        assertThat(flat(BatchRecord.class, batch.formatted("0.25")).kvUsage()).isEqualTo(0.25);
        // The mapper writes NaN as a string; an integer for a double is coerced by data binding.
        assertThat(flat(BatchRecord.class, batch.formatted("\"NaN\""))).isNull();
        assertThat(flat(BatchRecord.class, batch.formatted("1"))).isNull();
        assertThat(((BatchRecord) bind(BatchRecord.class, batch.formatted("\"NaN\""))).kvUsage())
                .isNaN();
        assertThat(flat(BatchRecord.class, batch.formatted("0.25").replace("\"b\"", "null")))
                .isNull();
    }

    @Test
    void aRecordItsConstructorRefusesIsLeftToDataBindingWhichRefusesItToo() {
        // Map.copyOf refuses a null count.
        String json = "{\"job\":\"j\",\"instance\":\"i\",\"timeNs\":1,\"waiting\":0,\"running\":1,\"swapped\":0,"
                + "\"states\":{\"RUNNING\":null}}";

        assertThat(flat(RequestStateRecord.class, json)).isNull();
        assertThatThrownBy(() -> bind(RequestStateRecord.class, json)).isInstanceOf(SerializationException.class);
    }

    @Test
    void theFeedReadsTombstonesAndBadValuesAsBefore() {
        FeedHandler.TopicReader<ForwardRecord> reader = new FeedHandler.TopicReader<>(Topics.SERVICE_FORWARDS);
        String topic = Topics.SERVICE_FORWARDS.name();

        ForwardRecord forward = new ForwardRecord("j", "i", 7L, "0", 3, 100, 20, -5L, "decode", 8, true);

        // protobuf on this topic, and a JSON record written before that format reads as it did
        assertThat(reader.flat()).isFalse();
        assertThat(reader.read(new ConsumerRecord<>(topic, 0, 0, null, null))).isNull();
        assertThat(reader.read(new ConsumerRecord<>(topic, 0, 1, null, FORWARD.getBytes(StandardCharsets.UTF_8))))
                .isEqualTo(forward);
        byte[] proto = Topics.SERVICE_FORWARDS.valueSerde().serializer().serialize(topic, forward);
        assertThat(reader.read(new ConsumerRecord<>(topic, 0, 2, null, proto))).isEqualTo(forward);
        assertThatThrownBy(() ->
                        reader.read(new ConsumerRecord<>(topic, 0, 2, null, "{x".getBytes(StandardCharsets.UTF_8))))
                .isInstanceOf(SerializationException.class)
                .hasMessageStartingWith("cannot read ForwardRecord from " + topic);
        assertThat(new FeedHandler.TopicReader<>(Topics.LAYERS).flat()).isFalse();
        assertThat(new FeedHandler.TopicReader<>(Topics.SERVICE_KVCACHE).flat()).isTrue();
    }

    /** A record of random component values through its canonical constructor; null when the constructor refuses them. */
    private static Object randomRecord(Class<?> type, Random random) throws Exception {
        RecordComponent[] components = type.getRecordComponents();
        Class<?>[] types = new Class<?>[components.length];
        Object[] values = new Object[components.length];
        for (int i = 0; i < components.length; i++) {
            types[i] = components[i].getType();
            values[i] = randomValue(components[i].getGenericType(), random);
        }
        Constructor<?> c = type.getDeclaredConstructor(types);
        try {
            return c.newInstance(values);
        } catch (InvocationTargetException e) {
            return null;
        }
    }

    private static Object randomValue(Type type, Random random) {
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
            return switch (random.nextInt(5)) {
                case 0 -> -0.0;
                case 1 -> Double.MIN_VALUE;
                case 2 -> 1e300 * random.nextDouble();
                case 3 -> (double) random.nextInt(100);
                default -> random.nextDouble();
            };
        } else if (type == boolean.class || type == Boolean.class) {
            return random.nextBoolean();
        } else if (type instanceof ParameterizedType p && p.getRawType() == List.class) {
            List<String> list = new ArrayList<>();
            for (int n = random.nextInt(4); n > 0; n--) {
                list.add(randomString(random));
            }
            return list;
        } else if (type instanceof ParameterizedType p && p.getRawType() == Map.class) {
            Map<String, Long> map = new LinkedHashMap<>();
            for (int n = random.nextInt(4); n > 0; n--) {
                map.put(randomString(random), random.nextLong());
            }
            return map;
        }
        throw new AssertionError("no random value for " + type);
    }

    private static String randomString(Random random) {
        return switch (random.nextInt(6)) {
            case 0 -> "";
            case 1 -> "quote\" backslash\\ newline\n tab\t";
            case 2 -> "naïve ✓ 𝄞";
            case 3 -> "rid-" + random.nextInt(100);
            case 4 -> "x".repeat(random.nextInt(300));
            default -> Long.toString(random.nextLong());
        };
    }
}

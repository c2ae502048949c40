package io.llmprof.events;

import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.RecordComponent;
import java.lang.reflect.Type;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

/**
 * Random values for output records (strings, numbers, booleans, string and long lists, string-to-long maps, nested
 * records, lists and string-keyed maps of such records): nulls,
 * extremes, escapes, non-ASCII, a lone surrogate, long strings.
 */
public final class RandomRecords {
    private RandomRecords() {}

    /** A random instance of {@code type} (lists of records hold random records), null when the record refuses it. */
    public static Object record(Class<?> type, Random random, boolean nullsInside) throws Exception {
        RecordComponent[] components = type.getRecordComponents();
        Class<?>[] types = new Class<?>[components.length];
        Object[] values = new Object[components.length];
        for (int i = 0; i < components.length; i++) {
            types[i] = components[i].getType();
            values[i] = value(components[i].getGenericType(), random, nullsInside);
        }
        Constructor<?> c = type.getDeclaredConstructor(types);
        try {
            return c.newInstance(values);
        } catch (InvocationTargetException e) {
            return null; // values the record refuses
        }
    }

    private static Object value(Type type, Random random, boolean nullsInside) throws Exception {
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
        } else if (type instanceof Class<?> c && c.isRecord()) {
            return record(c, random, nullsInside);
        } else if (type instanceof ParameterizedType p
                && p.getRawType() == List.class
                && p.getActualTypeArguments()[0] == Long.class) {
            List<Long> list = new ArrayList<>();
            for (int n = random.nextInt(6); n > 0; n--) {
                list.add((Long) value(long.class, random, nullsInside));
            }
            return list;
        } else if (type instanceof ParameterizedType p
                && p.getRawType() == Map.class
                && p.getActualTypeArguments()[1] instanceof Class<?> element
                && element.isRecord()) {
            Map<String, Object> map = new LinkedHashMap<>();
            for (int n = random.nextInt(4); n > 0; n--) {
                Object item = record(element, random, nullsInside);
                if (item != null) {
                    map.put(randomString(random), item);
                }
            }
            return map;
        } else if (type instanceof ParameterizedType p
                && p.getRawType() == List.class
                && p.getActualTypeArguments()[0] instanceof Class<?> element
                && element.isRecord()) {
            List<Object> list = new ArrayList<>();
            for (int n = random.nextInt(4); n > 0; n--) {
                Object item = record(element, random, nullsInside);
                if (item != null) {
                    list.add(item);
                }
            }
            return list;
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

package io.llmprof.dashboard.feed;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.io.SerializedString;
import io.llmprof.events.FlatRecordWriter;
import io.llmprof.events.Json;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.RecordComponent;
import java.lang.reflect.Type;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Reads a flat record (components of type String, long, int, double, boolean, their boxes, List of String, Map of
 * String to Long) from the JSON {@link Json#mapper()} writes, with the streaming parser: at production rates Jackson's
 * data binding (a creator buffer, a deserializer call and a reflective constructor per field and record) was half of
 * the dashboard feed's CPU, and a record read field by field into its canonical constructor costs a fraction of it.
 *
 * <p>It reads only the shape the writer produces: a JSON object, each component by its name at most once, numbers of
 * the component's kind, nulls only for boxed components. Anything else (a number as a string, a missing primitive,
 * malformed JSON, a value the record's constructor refuses) returns null, and the caller reads the bytes with data
 * binding, so such a record is read, or refused with the same message, exactly as before. Unknown fields are skipped
 * as data binding does.
 */
final class FlatRecordReader<T> {
    private enum Kind {
        STRING,
        LONG,
        BOXED_LONG,
        INT,
        BOXED_INT,
        DOUBLE,
        BOXED_DOUBLE,
        BOOLEAN,
        BOXED_BOOLEAN,
        STRING_LIST,
        STRING_LONG_MAP
    }

    private static final JsonFactory FACTORY = Json.mapper().getFactory();

    private final Map<String, Integer> index = new HashMap<>();
    /** Component names in declaration order, the order the writer writes them in. */
    private final SerializedString[] names;

    private final Kind[] kinds;
    private final MethodHandle constructor;

    private FlatRecordReader(Kind[] kinds, Map<String, Integer> index, MethodHandle constructor) {
        this.kinds = kinds;
        this.index.putAll(index);
        this.names = new SerializedString[kinds.length];
        index.forEach((name, i) -> names[i] = new SerializedString(name));
        this.constructor = constructor;
    }

    /** A reader for {@code type}, empty when it is no record this reader can read as data binding would. */
    static <T> Optional<FlatRecordReader<T>> of(Class<T> type) {
        if (!type.isRecord()
                || Json.mapper().getPropertyNamingStrategy() != null
                || FlatRecordWriter.hasJacksonAnnotation(type.getAnnotations())) {
            return Optional.empty();
        }
        RecordComponent[] components = type.getRecordComponents();
        if (components.length > Long.SIZE) {
            return Optional.empty();
        }
        Kind[] kinds = new Kind[components.length];
        Map<String, Integer> index = new HashMap<>();
        Class<?>[] types = new Class<?>[components.length];
        for (int i = 0; i < components.length; i++) {
            RecordComponent c = components[i];
            Kind kind = kind(c.getGenericType());
            if (kind == null
                    || FlatRecordWriter.hasJacksonAnnotation(c.getAnnotations())
                    || FlatRecordWriter.hasJacksonAnnotation(c.getAccessor().getAnnotations())) {
                return Optional.empty();
            }
            kinds[i] = kind;
            index.put(c.getName(), i);
            types[i] = c.getType();
        }
        try {
            MethodHandle constructor = MethodHandles.publicLookup()
                    .findConstructor(type, MethodType.methodType(void.class, types))
                    .asSpreader(Object[].class, components.length)
                    .asType(MethodType.methodType(Object.class, Object[].class));
            return Optional.of(new FlatRecordReader<>(kinds, index, constructor));
        } catch (ReflectiveOperationException e) {
            return Optional.empty();
        }
    }

    /** The record, or null when the bytes are not of the shape this reader takes (read them with data binding). */
    @SuppressWarnings("unchecked")
    T read(byte[] json) {
        Object[] values = new Object[kinds.length];
        try (JsonParser p = FACTORY.createParser(json)) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                return null;
            }
            long seen = 0;
            int expected = 0;
            while (true) {
                int i;
                // The writer writes components in order, nulls left out: comparing the next name's bytes with the
                // expected one's skips decoding and looking up the name.
                if (expected < names.length && p.nextFieldName(names[expected])) {
                    i = expected;
                } else {
                    if (expected >= names.length) {
                        p.nextToken();
                    }
                    if (p.currentToken() != JsonToken.FIELD_NAME) {
                        break;
                    }
                    Integer found = index.get(p.currentName());
                    if (found == null) {
                        p.nextToken();
                        p.skipChildren();
                        continue;
                    }
                    i = found;
                }
                expected = i + 1;
                JsonToken token = p.nextToken();
                long bit = 1L << i;
                if ((seen & bit) != 0) {
                    return null;
                }
                seen |= bit;
                Object value = value(kinds[i], token, p);
                if (value == NOT_MINE) {
                    return null;
                }
                values[i] = value;
            }
            if (p.currentToken() != JsonToken.END_OBJECT) {
                return null;
            }
            for (int i = 0; i < kinds.length; i++) {
                if (values[i] == null && primitive(kinds[i])) {
                    return null;
                }
            }
        } catch (java.io.IOException | RuntimeException e) {
            return null;
        }
        try {
            return (T) constructor.invokeExact(values);
        } catch (Error e) {
            throw e;
        } catch (Throwable e) {
            return null;
        }
    }

    private static final Object NOT_MINE = new Object();

    private static Object value(Kind kind, JsonToken token, JsonParser p) throws java.io.IOException {
        if (token == JsonToken.VALUE_NULL) {
            return primitive(kind) ? NOT_MINE : null;
        }
        switch (kind) {
            case STRING:
                return token == JsonToken.VALUE_STRING ? p.getText() : NOT_MINE;
            case LONG:
            case BOXED_LONG:
                // Out of range, getLongValue throws: left to data binding, which refuses it.
                return token == JsonToken.VALUE_NUMBER_INT ? (Object) p.getLongValue() : NOT_MINE;
            case INT:
            case BOXED_INT:
                return token == JsonToken.VALUE_NUMBER_INT ? (Object) p.getIntValue() : NOT_MINE;
            case DOUBLE:
            case BOXED_DOUBLE:
                // The writer writes doubles with a fraction or exponent; an integer token is left to data binding.
                return token == JsonToken.VALUE_NUMBER_FLOAT ? (Object) p.getDoubleValue() : NOT_MINE;
            case BOOLEAN:
            case BOXED_BOOLEAN:
                return token == JsonToken.VALUE_TRUE
                        ? Boolean.TRUE
                        : token == JsonToken.VALUE_FALSE ? Boolean.FALSE : NOT_MINE;
            case STRING_LIST:
                return token == JsonToken.START_ARRAY ? stringList(p) : NOT_MINE;
            case STRING_LONG_MAP:
                return token == JsonToken.START_OBJECT ? stringLongMap(p) : NOT_MINE;
            default:
                return NOT_MINE;
        }
    }

    private static Object stringList(JsonParser p) throws java.io.IOException {
        List<String> out = new ArrayList<>();
        for (JsonToken t = p.nextToken(); t != JsonToken.END_ARRAY; t = p.nextToken()) {
            if (t != JsonToken.VALUE_STRING) {
                return NOT_MINE;
            }
            out.add(p.getText());
        }
        return out;
    }

    private static Object stringLongMap(JsonParser p) throws java.io.IOException {
        Map<String, Long> out = new LinkedHashMap<>();
        for (String name = p.nextFieldName(); name != null; name = p.nextFieldName()) {
            JsonToken t = p.nextToken();
            if (t != JsonToken.VALUE_NUMBER_INT || out.put(name, p.getLongValue()) != null) {
                return NOT_MINE;
            }
        }
        return p.currentToken() == JsonToken.END_OBJECT ? out : NOT_MINE;
    }

    private static boolean primitive(Kind kind) {
        return kind == Kind.LONG || kind == Kind.INT || kind == Kind.DOUBLE || kind == Kind.BOOLEAN;
    }

    private static Kind kind(Type type) {
        if (type == String.class) {
            return Kind.STRING;
        } else if (type == long.class) {
            return Kind.LONG;
        } else if (type == Long.class) {
            return Kind.BOXED_LONG;
        } else if (type == int.class) {
            return Kind.INT;
        } else if (type == Integer.class) {
            return Kind.BOXED_INT;
        } else if (type == double.class) {
            return Kind.DOUBLE;
        } else if (type == Double.class) {
            return Kind.BOXED_DOUBLE;
        } else if (type == boolean.class) {
            return Kind.BOOLEAN;
        } else if (type == Boolean.class) {
            return Kind.BOXED_BOOLEAN;
        } else if (type instanceof ParameterizedType p) {
            Type[] args = p.getActualTypeArguments();
            if (p.getRawType() == List.class && args[0] == String.class) {
                return Kind.STRING_LIST;
            }
            if (p.getRawType() == Map.class && args[0] == String.class && args[1] == Long.class) {
                return Kind.STRING_LONG_MAP;
            }
        }
        return null;
    }
}

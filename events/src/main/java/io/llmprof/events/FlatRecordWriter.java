package io.llmprof.events;

import com.fasterxml.jackson.annotation.JacksonAnnotation;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.io.SerializedString;
import com.fasterxml.jackson.core.util.ByteArrayBuilder;
import com.fasterxml.jackson.databind.MapperFeature;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.IOException;
import java.lang.annotation.Annotation;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.RecordComponent;
import java.lang.reflect.Type;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Writes a flat record (components of type String, long, int, double, boolean, their boxes, List of String, Map of
 * String to Long) as the bytes {@link Json#mapper()} writes for it, with the streaming generator: at production
 * rates Jackson's data binding (a reflective accessor call, a serializer and an inclusion check per field) was a
 * quarter of the service stream thread's CPU. Same bytes: the components in declaration order, nulls left out
 * (the mapper's NON_NULL), each value through the generator call data binding makes for its type
 * ({@code FlatRecordWriterTest} compares both on random records of every such output type).
 *
 * <p>A record whose list holds a null or whose map holds a null key or value returns null from {@link #write}:
 * the caller writes it with data binding, whose rules for those apply.
 */
public final class FlatRecordWriter<T> {
    private enum Kind {
        STRING,
        LONG,
        INT,
        DOUBLE,
        BOOLEAN,
        STRING_LIST,
        STRING_LONG_MAP
    }

    private static final JsonFactory FACTORY = Json.mapper().getFactory();

    private final SerializedString[] names;
    private final Kind[] kinds;
    private final MethodHandle[] accessors;

    private FlatRecordWriter(SerializedString[] names, Kind[] kinds, MethodHandle[] accessors) {
        this.names = names;
        this.kinds = kinds;
        this.accessors = accessors;
    }

    /** A writer for {@code type}, empty when it is no record this writer can write as data binding would. */
    public static <T> Optional<FlatRecordWriter<T>> of(Class<T> type) {
        var mapper = Json.mapper();
        if (!type.isRecord()
                || !Modifier.isPublic(type.getModifiers())
                || mapper.getPropertyNamingStrategy() != null
                || mapper.isEnabled(MapperFeature.SORT_PROPERTIES_ALPHABETICALLY)
                || mapper.isEnabled(SerializationFeature.ORDER_MAP_ENTRIES_BY_KEYS)
                || hasJacksonAnnotation(type.getAnnotations())
                || hasBeanGetters(type)) {
            return Optional.empty();
        }
        RecordComponent[] components = type.getRecordComponents();
        SerializedString[] names = new SerializedString[components.length];
        Kind[] kinds = new Kind[components.length];
        MethodHandle[] accessors = new MethodHandle[components.length];
        for (int i = 0; i < components.length; i++) {
            RecordComponent c = components[i];
            Kind kind = kind(c.getGenericType());
            if (kind == null
                    || hasJacksonAnnotation(c.getAnnotations())
                    || hasJacksonAnnotation(c.getAccessor().getAnnotations())) {
                return Optional.empty();
            }
            try {
                accessors[i] = MethodHandles.publicLookup()
                        .unreflect(c.getAccessor())
                        .asType(MethodType.methodType(Object.class, Object.class));
            } catch (IllegalAccessException e) {
                return Optional.empty();
            }
            names[i] = new SerializedString(c.getName());
            kinds[i] = kind;
        }
        return Optional.of(new FlatRecordWriter<>(names, kinds, accessors));
    }

    /**
     * A generator per thread over its own buffer, kept between records: creating one per record (its I/O context and
     * buffers) was a sixth of this writer's time. Records are root values one after another, with no separator; a
     * record that stops half-way (a null in a list, an exception) drops the thread's generator.
     */
    private static final class Output {
        final ByteArrayBuilder bytes = new ByteArrayBuilder(256);
        final JsonGenerator g;

        Output() throws IOException {
            g = FACTORY.createGenerator(bytes);
            g.setRootValueSeparator(null);
        }
    }

    private static final ThreadLocal<Output> OUTPUT = new ThreadLocal<>();

    /** The record's JSON, or null when data binding must write it (a null inside a list or map). */
    public byte[] write(T record) {
        Output out = OUTPUT.get();
        boolean done = false;
        try {
            if (out == null) {
                out = new Output();
                OUTPUT.set(out);
            }
            JsonGenerator g = out.g;
            g.writeStartObject();
            for (int i = 0; i < kinds.length; i++) {
                Object v = accessors[i].invokeExact((Object) record);
                if (v != null) {
                    g.writeFieldName(names[i]);
                    if (!value(g, kinds[i], v)) {
                        return null;
                    }
                }
            }
            g.writeEndObject();
            g.flush();
            byte[] json = out.bytes.toByteArray();
            out.bytes.reset();
            done = true;
            return json;
        } catch (Throwable e) {
            return null; // an accessor that throws, or an I/O error: data binding reports it as it always did
        } finally {
            if (!done) {
                OUTPUT.remove(); // half a record is in its generator and buffer
            }
        }
    }

    /** Writes {@code v}; false at a null inside a list or map (data binding's rules for those apply). */
    private static boolean value(JsonGenerator g, Kind kind, Object v) throws IOException {
        switch (kind) {
            case STRING -> g.writeString((String) v);
            case LONG -> g.writeNumber((Long) v);
            case INT -> g.writeNumber((Integer) v);
            case DOUBLE -> g.writeNumber((Double) v);
            case BOOLEAN -> g.writeBoolean((Boolean) v);
            case STRING_LIST -> {
                g.writeStartArray();
                for (Object s : (List<?>) v) {
                    if (s == null) {
                        return false;
                    }
                    g.writeString((String) s);
                }
                g.writeEndArray();
            }
            case STRING_LONG_MAP -> {
                g.writeStartObject();
                for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                    if (e.getKey() == null || e.getValue() == null) {
                        return false;
                    }
                    g.writeFieldName((String) e.getKey());
                    g.writeNumber((Long) e.getValue());
                }
                g.writeEndObject();
            }
        }
        return true;
    }

    private static Kind kind(Type type) {
        if (type == String.class) {
            return Kind.STRING;
        } else if (type == long.class || type == Long.class) {
            return Kind.LONG;
        } else if (type == int.class || type == Integer.class) {
            return Kind.INT;
        } else if (type == double.class || type == Double.class) {
            return Kind.DOUBLE;
        } else if (type == boolean.class || type == Boolean.class) {
            return Kind.BOOLEAN;
        } else if (type instanceof ParameterizedType p && p.getRawType() == List.class) {
            return p.getActualTypeArguments()[0] == String.class ? Kind.STRING_LIST : null;
        } else if (type instanceof ParameterizedType p && p.getRawType() == Map.class) {
            Type[] args = p.getActualTypeArguments();
            return args[0] == String.class && args[1] == Long.class ? Kind.STRING_LONG_MAP : null;
        }
        return null;
    }

    /** Public getX()/isX() methods besides the accessors: data binding would write them as properties too. */
    private static boolean hasBeanGetters(Class<?> type) {
        for (Method m : type.getMethods()) {
            if (Modifier.isStatic(m.getModifiers())
                    || m.getParameterCount() != 0
                    || m.getDeclaringClass() == Object.class) {
                continue;
            }
            String n = m.getName();
            boolean getter = (n.startsWith("get") && n.length() > 3) || (n.startsWith("is") && n.length() > 2);
            if (getter && !isAccessor(type, n)) {
                return true;
            }
        }
        return false;
    }

    private static boolean isAccessor(Class<?> type, String name) {
        for (RecordComponent c : type.getRecordComponents()) {
            if (c.getName().equals(name)) {
                return true;
            }
        }
        return false;
    }

    /** Whether any of {@code annotations} is Jackson's (it could rename, order or leave out a property). */
    public static boolean hasJacksonAnnotation(Annotation[] annotations) {
        for (Annotation a : annotations) {
            if (a.annotationType().isAnnotationPresent(JacksonAnnotation.class)) {
                return true;
            }
        }
        return false;
    }
}

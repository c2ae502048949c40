package io.llmprof.events;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.module.SimpleModule;

/** The one JSON mapper, shared by serdes, the REST API and the CLI. Configured once, never mutated. */
public final class Json {
    private static final ObjectMapper MAPPER = JsonMapper.builder()
            .serializationInclusion(JsonInclude.Include.NON_NULL)
            // Newer producers may add fields; older consumers must still read the record.
            .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .disable(SerializationFeature.FAIL_ON_EMPTY_BEANS)
            .enable(com.fasterxml.jackson.core.StreamWriteFeature.WRITE_BIGDECIMAL_AS_PLAIN)
            .addModule(new SimpleModule("llmprof-plain-decimals").addSerializer(new PlainDecimalSerializer()))
            .build();

    private Json() {}

    public static ObjectMapper mapper() {
        return MAPPER;
    }
}

/**
 * The binary wire format of the input topics and of the busiest output topics ({@code
 * src/main/proto/llmprof_wire.proto}): serdes that map the Java
 * records to the generated protobuf messages, and the record-to-JSON view used by {@code llmprof topic dump}.
 */
package io.llmprof.events.wire;

package io.llmprof.events;

import java.io.BufferedWriter;
import java.io.OutputStream;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.io.Writer;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;

/**
 * The command line's standard output as picocli would make it (the same charset, auto-flushed on println), which
 * also lets a command write bytes it already has in UTF-8 straight to the stream, when that is the charset: a
 * report spilled to disk by Jackson's byte generator is then copied, not decoded to characters and encoded again.
 */
public final class ConsoleOut extends PrintWriter {
    private final OutputStream stream;
    private final boolean utf8;

    public ConsoleOut(OutputStream stream, Charset charset) {
        super(new BufferedWriter(new OutputStreamWriter(stream, charset)), true);
        this.stream = stream;
        this.utf8 = StandardCharsets.UTF_8.equals(charset);
    }

    /**
     * The stream under {@code out} when UTF-8 bytes written to it read as the same text as characters written to
     * {@code out} (it is a {@link ConsoleOut} in UTF-8), after flushing {@code out}; else null.
     */
    public static OutputStream utf8Bytes(Writer out) {
        if (out instanceof ConsoleOut c && c.utf8) {
            c.flush();
            return c.stream;
        }
        return null;
    }
}

package io.llmprof.agent.checkpoint;

import com.fasterxml.jackson.core.JsonProcessingException;
import io.llmprof.events.Json;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;

/** How a checkpoint is kept on disk: one JSON document, replaced atomically, in the XDG state directory by default. */
public final class CheckpointFiles {
    private CheckpointFiles() {}

    /**
     * Reads a checkpoint document.
     *
     * @return null when the file does not exist
     * @throws IOException when it cannot be read or is not such a document (the message names the file)
     */
    static <T> T read(Path path, Class<T> type) throws IOException {
        if (!Files.exists(path)) {
            return null;
        }
        try {
            T value = Json.mapper().readValue(Files.readAllBytes(path), type);
            if (value == null) {
                throw new IOException("unreadable checkpoint " + path + ": it holds null");
            }
            return value;
        } catch (JsonProcessingException e) {
            throw new IOException("unreadable checkpoint " + path + ": " + e.getOriginalMessage(), e);
        }
    }

    /** A checkpoint document of a format that has a version. */
    public interface Versioned {
        int version();
    }

    /**
     * Reads a checkpoint document of format {@code version}.
     *
     * @return {@code empty} when the file does not exist
     * @throws IOException when it cannot be read, is not such a document or is of another version
     */
    public static <T extends Versioned> T load(Path path, Class<T> type, int version, T empty) throws IOException {
        T c = read(path, type);
        if (c == null) {
            return empty;
        }
        if (c.version() != version) {
            throw new IOException("checkpoint " + path + " is of version " + c.version() + ", not " + version);
        }
        return c;
    }

    /** Temp file beside the target, fsync, then an atomic rename: a crash leaves the old or the new file. */
    public static void writeAtomically(Path path, Object document) throws IOException {
        byte[] bytes = Json.mapper().writerWithDefaultPrettyPrinter().writeValueAsBytes(document);
        Path dir = path.toAbsolutePath().getParent();
        if (dir != null) {
            Files.createDirectories(dir);
        }
        Path tmp = path.resolveSibling(path.getFileName() + ".tmp");
        try (FileChannel ch = FileChannel.open(
                tmp, StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING)) {
            ByteBuffer buf = ByteBuffer.wrap(bytes);
            while (buf.hasRemaining()) {
                ch.write(buf);
            }
            ch.force(true);
        }
        try {
            Files.move(tmp, path, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (AtomicMoveNotSupportedException e) {
            Files.move(tmp, path, StandardCopyOption.REPLACE_EXISTING);
        }
    }

    /**
     * Where a command's checkpoint is by default: the XDG state directory (the spec's place for state that outlives a
     * run), {@code <state>/llmprof/<command>/<hash of identity>.json}, so that running the same command again finds it
     * and two different runs never share one. {@code llmprof.state.dir} (a system property) overrides
     * {@code <state>/llmprof}.
     *
     * @param identity what tells runs apart (cluster, job, run or instance, the input files), in a fixed order
     */
    public static Path defaultPath(String command, List<String> identity) {
        String dir = System.getProperty("llmprof.state.dir");
        Path base;
        if (dir != null && !dir.isBlank()) {
            base = Path.of(dir);
        } else {
            String xdg = System.getenv("XDG_STATE_HOME");
            base = xdg != null && !xdg.isBlank()
                    ? Path.of(xdg, "llmprof")
                    : Path.of(System.getProperty("user.home"), ".local", "state", "llmprof");
        }
        try {
            byte[] hash = MessageDigest.getInstance("SHA-256")
                    .digest(String.join("\n", identity).getBytes(StandardCharsets.UTF_8));
            return base.resolve(command).resolve(HexFormat.of().formatHex(hash, 0, 8) + ".json");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}

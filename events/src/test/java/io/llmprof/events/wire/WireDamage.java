package io.llmprof.events.wire;

import java.io.ByteArrayOutputStream;
import java.util.Random;

/** Damaged and unusual protobuf bytes for the field-by-field readers' tests. */
final class WireDamage {
    private WireDamage() {}

    /** Field 99 as a varint, a field no message of the schema has. */
    static final byte[] UNKNOWN_FIELD = {(byte) 0x98, 0x06, 0x2a};

    /**
     * Field 99 as a varint of ten bytes whose last byte still has its "more follow" bit: protobuf's generated parser
     * reads it (into its unknown fields), {@code CodedInputStream.skipField} refuses it.
     */
    static final byte[] LONG_VARINT = {
        (byte) 0x98,
        0x06,
        (byte) 0xe8,
        (byte) 0xa1,
        (byte) 0xf4,
        (byte) 0xff,
        (byte) 0x88,
        (byte) 0xc6,
        (byte) 0xde,
        (byte) 0xc1,
        (byte) 0xc8,
        (byte) 0xef
    };

    /** {@code bytes} with a bit flipped, cut short, a run repeated, or a byte set; no bytes become one random byte. */
    static byte[] damaged(byte[] bytes, Random random) {
        if (bytes.length == 0) {
            return new byte[] {(byte) random.nextInt(256)};
        }
        return switch (random.nextInt(4)) {
            case 0 -> {
                byte[] b = bytes.clone();
                b[random.nextInt(b.length)] ^= (byte) (1 << random.nextInt(8));
                yield b;
            }
            case 1 -> java.util.Arrays.copyOf(bytes, random.nextInt(bytes.length));
            case 2 -> {
                int at = random.nextInt(bytes.length);
                int len = Math.min(bytes.length - at, 1 + random.nextInt(8));
                byte[] b = new byte[bytes.length + len];
                System.arraycopy(bytes, 0, b, 0, at + len);
                System.arraycopy(bytes, at, b, at + len, bytes.length - at);
                yield b;
            }
            default -> {
                byte[] b = bytes.clone();
                b[random.nextInt(b.length)] = (byte) random.nextInt(256);
                yield b;
            }
        };
    }

    static byte[] concat(byte[]... parts) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (byte[] p : parts) {
            out.writeBytes(p);
        }
        return out.toByteArray();
    }

    /** A reader of whole messages: the field-by-field one, or the generated parser with the former mapping. */
    interface Read<T> {
        T read(byte[] bytes) throws Exception;
    }

    /**
     * Both read the same value, or both refuse the bytes (with any exception); true when they read them.
     *
     * @throws AssertionError naming the bytes when they differ
     */
    static <T> boolean sameAsReference(byte[] bytes, Read<T> reference, Read<T> reader) {
        T expected;
        try {
            expected = reference.read(bytes);
        } catch (Exception e) {
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> reader.read(bytes))
                    .as("refused by the generated parser (%s): %s", e, java.util.Arrays.toString(bytes))
                    .isInstanceOfAny(Exception.class);
            return false;
        }
        try {
            org.assertj.core.api.Assertions.assertThat(reader.read(bytes)).isEqualTo(expected);
        } catch (Exception e) {
            throw new AssertionError(
                    "read by the generated parser, refused here: " + java.util.Arrays.toString(bytes), e);
        }
        return true;
    }

    /**
     * {@code samples} encoded messages from {@code encoded}, each {@link #damaged}, through both readers ({@link
     * #sameAsReference}); asserts that both outcomes came up at least a tenth of the time each.
     */
    static <T> void damagedReadAsTheReference(
            java.util.function.Supplier<byte[]> encoded,
            Random random,
            int samples,
            Read<T> reference,
            Read<T> reader) {
        int read = 0;
        int refused = 0;
        for (int i = 0; i < samples; i++) {
            byte[] bytes = encoded.get();
            if (bytes.length == 0) {
                continue;
            }
            if (sameAsReference(damaged(bytes, random), reference, reader)) {
                read++;
            } else {
                refused++;
            }
        }
        org.assertj.core.api.Assertions.assertThat(read)
                .as("damaged messages read")
                .isGreaterThan(samples / 10);
        org.assertj.core.api.Assertions.assertThat(refused)
                .as("damaged messages refused")
                .isGreaterThan(samples / 10);
    }
}

package io.llmprof.agent.kineto;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.Random;
import org.junit.jupiter.api.Test;

class StringCacheTest {
    /** Whatever was cached before in a slot, by chars or by bytes, a lookup gives the string of what it was given. */
    @Test
    void givesTheStringOfItsInputWhateverTheSlotHeld() {
        StringCache cache = new StringCache(4); // four slots: collisions all the time
        Random random = new Random(3L);
        String[] words = {"", "a", "b", "ab", "ba", "decode", "prefill", "rid", "x".repeat(5000), "Aa", "BB"};
        int hits = 0;
        for (int k = 0; k < 20_000; k++) {
            String w = words[random.nextInt(words.length)];
            String pad = "..";
            String got;
            if (random.nextBoolean()) {
                char[] chars = (pad + w + pad).toCharArray();
                got = cache.get(chars, pad.length(), w.length());
            } else {
                byte[] bytes = (pad + w + pad).getBytes(StandardCharsets.ISO_8859_1);
                got = cache.get(bytes, pad.length(), w.length());
            }
            assertThat(got).isEqualTo(w);
            char[] again = w.toCharArray();
            if (cache.get(again, 0, again.length) == cache.get(again, 0, again.length)) {
                hits++;
            }
        }
        assertThat(hits).as("repeated strings served from the cache").isGreaterThan(15_000);
    }

    @Test
    void stringsLongerThanTheLimitAreBuiltEachTime() {
        StringCache cache = new StringCache(4, 8);
        char[] nine = "123456789".toCharArray();
        char[] eight = "12345678".toCharArray();
        assertThat(cache.get(nine, 0, 9)).isEqualTo("123456789").isNotSameAs(cache.get(nine, 0, 9));
        assertThat(cache.get(eight, 0, 8)).isEqualTo("12345678").isSameAs(cache.get(eight, 0, 8));
    }
}

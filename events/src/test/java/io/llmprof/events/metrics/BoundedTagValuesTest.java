package io.llmprof.events.metrics;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class BoundedTagValuesTest {
    private static final Duration IDLE = Duration.ofMinutes(10);

    private final AtomicLong now = new AtomicLong(1_000);
    private final List<String> retired = new ArrayList<>();

    private BoundedTagValues recycling(int limit) {
        return BoundedTagValues.recycling(limit, IDLE, now::get, retired::add);
    }

    private void advance(Duration d) {
        now.addAndGet(d.toNanos());
    }

    @Test
    void withoutRecyclingTheFirstValuesAreAdmittedForGood() {
        BoundedTagValues v = new BoundedTagValues(2);
        assertThat(v.admit("a")).isEqualTo("a");
        assertThat(v.admit("b")).isEqualTo("b");
        assertThat(v.admit("c")).isEqualTo(BoundedTagValues.OTHER);
        assertThat(v.admit("a")).isEqualTo("a");
        assertThat(v.admit(" ")).isEqualTo(BoundedTagValues.UNKNOWN);
        assertThat(v.admit(null)).isEqualTo(BoundedTagValues.UNKNOWN);
        assertThat(v.size()).isEqualTo(2);
    }

    @Test
    void aValueIdleLongEnoughGivesItsPlaceToANewOneAndTheOwnerIsTold() {
        BoundedTagValues v = recycling(2);
        v.admit("a");
        v.admit("b");
        advance(IDLE.minusSeconds(1));
        assertThat(v.admit("c")).as("nothing idle long enough yet").isEqualTo(BoundedTagValues.OTHER);
        v.admit("b"); // b in use
        advance(Duration.ofSeconds(1));
        assertThat(v.admit("c")).isEqualTo("c");
        assertThat(retired).containsExactly("a");
        assertThat(v.admit("a")).as("a is a new value now, and b, c are in use").isEqualTo(BoundedTagValues.OTHER);
        assertThat(v.size()).isEqualTo(2);
    }

    @Test
    void valuesInUseAreNeverPushedOut() {
        BoundedTagValues v = recycling(3);
        for (int minute = 0; minute < 60; minute++) {
            for (String s : List.of("a", "b", "c")) {
                assertThat(v.admit(s)).isEqualTo(s);
            }
            assertThat(v.admit("new-" + minute)).isEqualTo(BoundedTagValues.OTHER);
            advance(Duration.ofMinutes(1));
        }
        assertThat(retired).isEmpty();
    }

    @Test
    void theLeastRecentlyUsedGoesFirstOnePerNewValue() {
        BoundedTagValues v = recycling(3);
        v.admit("a");
        advance(Duration.ofMinutes(1));
        v.admit("b");
        advance(Duration.ofMinutes(1));
        v.admit("c");
        advance(Duration.ofMinutes(1));
        v.admit("a"); // a used last now
        advance(Duration.ofHours(1));
        assertThat(v.admit("d")).isEqualTo("d");
        assertThat(v.admit("e")).isEqualTo("e");
        assertThat(retired).containsExactly("b", "c");
        // a's use is counted, not timed: the scan that saw it counts as its last use, so a is not idle yet
        assertThat(v.admit("f")).isEqualTo(BoundedTagValues.OTHER);
        advance(IDLE);
        v.admit("d");
        v.admit("e");
        assertThat(v.admit("f")).isEqualTo("f");
        assertThat(retired).containsExactly("b", "c", "a");
    }

    @Test
    void aValueIsIdleForAtLeastItsIdleTimeWhateverTheScans() {
        BoundedTagValues v = recycling(1);
        v.admit("a");
        for (int second = 0; second < 3 * IDLE.toSeconds(); second += 7) {
            v.admit("a"); // in use every 7 s
            assertThat(v.admit("b")).isEqualTo(BoundedTagValues.OTHER);
            advance(Duration.ofSeconds(7));
        }
        long lastUse = now.get();
        v.admit("a");
        while (v.admit("b").equals(BoundedTagValues.OTHER)) {
            advance(Duration.ofSeconds(7));
        }
        assertThat(now.get() - lastUse)
                .isBetween(
                        IDLE.toNanos(),
                        2 * IDLE.toNanos() + Duration.ofSeconds(7).toNanos());
        assertThat(retired).containsExactly("a");
    }

    @Test
    void aSlotTouchedDirectlyStaysAndKnowsWhenItWasRetired() {
        BoundedTagValues v = recycling(1);
        BoundedTagValues.Slot a = v.slot("a");
        advance(IDLE);
        a.touch();
        assertThat(v.slot("b")).isNull();
        advance(IDLE);
        assertThat(a.admitted()).isTrue();
        BoundedTagValues.Slot b = v.slot("b");
        assertThat(b.value()).isEqualTo("b");
        assertThat(a.admitted()).isFalse();
        assertThat(v.slot(null)).isNull();
    }

    @Test
    void aReleasedValueFreesItsPlaceAtOnce() {
        BoundedTagValues v = new BoundedTagValues(1);
        v.admit("a");
        assertThat(v.admit("b")).isEqualTo(BoundedTagValues.OTHER);
        v.release("a");
        v.release(null);
        assertThat(v.admit("b")).isEqualTo("b");
        assertThat(retired).isEmpty();
    }

    @Test
    void aNonPositiveIdleOrLimitIsRefused() {
        assertThatThrownBy(() -> BoundedTagValues.recycling(2, Duration.ZERO, now::get, retired::add))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new BoundedTagValues(0)).isInstanceOf(IllegalArgumentException.class);
    }
}

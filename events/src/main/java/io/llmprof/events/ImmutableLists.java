package io.llmprof.events;

import java.util.Arrays;
import java.util.List;

/** Immutable lists made from scratch space with as few copies as the JDK allows. */
public final class ImmutableLists {
    private ImmutableLists() {}

    /**
     * The first {@code n} elements of {@code a} (none null) as an immutable list, which a record that keeps {@code
     * List.copyOf} of it keeps as it is: up to ten without an array of their own beyond the list's (an {@code
     * ArrayList} copied by {@code List.copyOf} makes two), more in one copy and the list's.
     */
    public static <T> List<T> firstN(T[] a, int n) {
        return switch (n) {
            case 0 -> List.of();
            case 1 -> List.of(a[0]);
            case 2 -> List.of(a[0], a[1]);
            case 3 -> List.of(a[0], a[1], a[2]);
            case 4 -> List.of(a[0], a[1], a[2], a[3]);
            case 5 -> List.of(a[0], a[1], a[2], a[3], a[4]);
            case 6 -> List.of(a[0], a[1], a[2], a[3], a[4], a[5]);
            case 7 -> List.of(a[0], a[1], a[2], a[3], a[4], a[5], a[6]);
            case 8 -> List.of(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]);
            case 9 -> List.of(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8]);
            case 10 -> List.of(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9]);
            default -> List.of(Arrays.copyOf(a, n));
        };
    }
}

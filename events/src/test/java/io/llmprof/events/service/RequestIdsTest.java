package io.llmprof.events.service;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.events.Json;
import java.util.List;
import org.junit.jupiter.api.Test;

class RequestIdsTest {
    private static List<RequestRef> json(String json) throws Exception {
        return RequestIds.parse(Json.mapper().readTree(json));
    }

    @Test
    void scalarsOfOneRequestAgreeWhateverTheirType() throws Exception {
        // msServiceProfiler's chrome_tracing.json writes request 0 as "0" on httpReq and as 0.0 on ReqEnQueue
        assertThat(json("\"0\"")).containsExactly(new RequestRef("0", "0", null, null, null));
        assertThat(json("0.0")).extracting(RequestRef::rid).containsExactly("0");
        assertThat(json("7")).extracting(RequestRef::rid).containsExactly("7");
        assertThat(json("1.5")).extracting(RequestRef::rid).containsExactly("1.5");
        assertThat(json("\"endpoint_common_1\"")).extracting(RequestRef::rid).containsExactly("endpoint_common_1");
        assertThat(json("null")).isEmpty();
        assertThat(json("[]")).isEmpty();
    }

    @Test
    void listsOfIdsAndOfBatchEntries() throws Exception {
        assertThat(json("[1, \"2\", 3.0]")).extracting(RequestRef::rid).containsExactly("1", "2", "3");
        List<RequestRef> batch =
                json("[{\"rid\": \"a\", \"iter\": 3, \"type\": \"decode\", \"num_scheduled_tokens=\": 1},"
                        + " {\"rid\": 9, \"iter\": \"0\", \"type\": \"prefill\", \"num_scheduled_tokens\": 512}]");
        assertThat(batch)
                .containsExactly(
                        new RequestRef("a", "a", 3L, "decode", 1L), new RequestRef("9", "9", 0L, "prefill", 512L));
    }

    @Test
    void textFormsJsonMstxAndPython() {
        assertThat(RequestIds.parse("[1, 2]")).extracting(RequestRef::rid).containsExactly("1", "2");
        // mstx messages write " as ^
        assertThat(RequestIds.parse("[{^rid^: ^r1^, ^iter^: 2}]"))
                .containsExactly(new RequestRef("r1", "r1", 2L, null, null));
        // tx_data_df.csv's rid_list column is Python literal text
        assertThat(RequestIds.parse("['x', 'y', None]"))
                .extracting(RequestRef::rid)
                .containsExactly("x", "y");
        assertThat(RequestIds.parse("  42  ")).extracting(RequestRef::rid).containsExactly("42");
        assertThat(RequestIds.parse("")).isEmpty();
        assertThat(RequestIds.parse((String) null)).isEmpty();
    }

    @Test
    void badTextIsOneIdNeverAnError() {
        assertThat(RequestIds.parse("[1, 2")).extracting(RequestRef::rid).containsExactly("[1, 2");
        assertThat(RequestIds.parse("{oops")).extracting(RequestRef::rid).containsExactly("{oops");
    }

    @Test
    void vllmHashSuffixIsDroppedFromTheCanonicalId() throws Exception {
        // newer vLLM appends "-" and 8 hex digits to the request id it got
        assertThat(RequestIds.canonical("cmpl-5f1b2c3d4e-0-a1b2c3d4")).isEqualTo("cmpl-5f1b2c3d4e-0");
        assertThat(json("\"chatcmpl-abc-deadbeef\""))
                .containsExactly(new RequestRef("chatcmpl-abc", "chatcmpl-abc-deadbeef", null, null, null));
        // not a suffix: too short, not hex, or an all-hex id such as a UUID
        assertThat(RequestIds.canonical("req-1234567")).isEqualTo("req-1234567");
        assertThat(RequestIds.canonical("req-zzzzzzzz")).isEqualTo("req-zzzzzzzz");
        assertThat(RequestIds.canonical("123e4567-e89b-12d3-a456-426614174000"))
                .isEqualTo("123e4567-e89b-12d3-a456-426614174000");
        assertThat(RequestIds.canonical("'17'")).isEqualTo("17");
    }

    @org.junit.jupiter.params.ParameterizedTest
    @org.junit.jupiter.params.provider.CsvSource({
        "7, 7",
        "007, 7",
        "-007, -7",
        "0, 0",
        "000, 0",
        "-0, 0",
        "-000, 0",
        "1234567890123456789012345, 1234567890123456789012345",
        "7.0, 7",
        "7.5, 7.5",
        "1e3, 1000",
        "-12, -12"
    })
    void integerIdsHaveOneCanonicalFormWithOrWithoutTheFastPath(String raw, String canonical) {
        assertThat(RequestIds.canonical(raw)).isEqualTo(canonical);
        // the same number written as BigDecimal would give it
        if (raw.chars().allMatch(ch -> ch == '-' || Character.isDigit(ch))) {
            assertThat(new java.math.BigDecimal(raw).toBigIntegerExact().toString())
                    .isEqualTo(canonical);
        }
    }

    /** The hash suffix found by hand as the regex it replaced finds it, on ids built to sit at its edges. */
    @Test
    void theHashSuffixIsFoundAsTheRegexFoundIt() {
        java.util.regex.Pattern regex = java.util.regex.Pattern.compile("^(.+)-[0-9a-fA-F]{8}$");
        char[] alphabet = {
            '-', '0', '9', 'a', 'f', 'A', 'F', 'g', 'G', 'z', '_', ' ', '\n', '\r', '\u0085', '\u2028', '\u2029',
            '\u00e9', '\uD83D', '\uDE00'
        };
        java.util.Random random = new java.util.Random(11);
        List<String> ids = new java.util.ArrayList<>(List.of(
                "",
                "-",
                "-0123abcd",
                "x-0123abcd",
                "cmpl-0123abcd",
                "cmpl-0123abc",
                "cmpl-0123abcde",
                "cmpl-0123abcg",
                "cmpl-7f3a-0-0123ABCD",
                "a\nb-0123abcd",
                "0123abcd-0123abcd"));
        for (int k = 0; k < 20_000; k++) {
            StringBuilder b = new StringBuilder();
            for (int n = random.nextInt(4); n > 0; n--) {
                b.append(alphabet[random.nextInt(alphabet.length)]);
            }
            if (random.nextInt(4) > 0) { // mostly ids that end as a suffix would, or nearly
                b.append('-');
                for (int n = 7 + random.nextInt(3); n > 0; n--) {
                    b.append(random.nextInt(10) > 0 ? "0123456789abcdefABCDEF".charAt(random.nextInt(22)) : 'x');
                }
            }
            ids.add(b.toString());
        }
        int matched = 0;
        for (String id : ids) {
            java.util.regex.Matcher m = regex.matcher(id);
            String expected = m.matches() ? m.group(1) : null;
            assertThat(RequestIds.withoutHashSuffix(id)).as("%s", id).isEqualTo(expected);
            matched += expected != null ? 1 : 0;
        }
        assertThat(matched).as("ids with a suffix among those tried").isGreaterThan(500);
    }
}

package io.llmprof.events.service;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.entry;

import io.llmprof.events.Json;
import org.junit.jupiter.api.Test;

class ServiceAttributesTest {
    private static ServiceAttributes of(String json) throws Exception {
        return ServiceAttributes.of(Json.mapper().readTree(json));
    }

    @Test
    void conventionsSplitMetricsIncrementsLabelsAndRequests() throws Exception {
        ServiceAttributes a = of("{\"rid\": [{\"rid\": \"r1\", \"iter\": 4}, 7], \"QueueSize=\": 3, \"WAITING+\": -1,"
                + " \"scope#dp\": \"2\", \"batchType\": \"Decode\", \"batchSize\": 8, \"none\": null}");
        assertThat(a.requests()).containsExactly(new RequestRef("r1", "r1", 4L, null, null), RequestRef.of("7"));
        assertThat(a.metrics()).containsExactly(entry("QueueSize", 3.0));
        assertThat(a.deltas()).containsExactly(entry("WAITING", -1.0));
        // plain attributes are labels as text, numbers too (only the = / + conventions make metrics)
        assertThat(a.labels())
                .containsExactly(entry("scope#dp", "2"), entry("batchType", "Decode"), entry("batchSize", "8"));
    }

    @Test
    void prefixSpellingsOfTheRealTxTable() throws Exception {
        // msserviceprofiler-mindie/output/tx_data_df.csv: '=recvTokenSize', '=deviceKvCache', '+RUNNING', '+PENDING'
        ServiceAttributes a =
                of("{\"=recvTokenSize\": 4, \"=deviceKvCache\": \"1978\", \"+RUNNING\": -1," + " \"+PENDING\": 1}");
        assertThat(a.metrics()).containsExactly(entry("recvTokenSize", 4.0), entry("deviceKvCache", 1978.0));
        assertThat(a.deltas()).containsExactly(entry("RUNNING", -1.0), entry("PENDING", 1.0));
        assertThat(a.labels()).isEmpty();
    }

    @Test
    void aMetricThatIsNotANumberIsKeptAsALabel() throws Exception {
        ServiceAttributes a = of("{\"QueueSize=\": \"many\", \"x+\": [1]}");
        assertThat(a.metrics()).isEmpty();
        assertThat(a.deltas()).isEmpty();
        assertThat(a.labels()).containsExactly(entry("QueueSize=", "many"), entry("x+", "[1]"));
    }

    @Test
    void nothingForNoObject() throws Exception {
        assertThat(of("null").requests()).isEmpty();
        assertThat(of("[1]").labels()).isEmpty();
    }
    /** The early refusal of text that cannot be a number gives what Double.valueOf of the stripped text gives. */
    @Test
    void numericTextIsReadAsDoubleValueOfReadsIt() {
        String[] texts = {
            "1",
            " 2.5 ",
            "-3",
            "+4",
            ".5",
            "-.5e2",
            "1e3",
            "1d",
            "2F",
            "0x1p3",
            "NaN",
            "-Infinity",
            "Infinity",
            "\u00001.5",
            "\u0001",
            "\t7\n",
            "\u2003 8 \u2003",
            "",
            " ",
            "many",
            "n/a",
            "nan",
            "inf",
            "1,5",
            "1 2",
            "Decode",
            "I",
            "N",
            "-",
            "+",
            ".",
            "e3",
            "\u0000",
            "\u00a0 9"
        };
        int numbers = 0;
        for (String text : texts) {
            Double expected;
            try {
                expected = Double.valueOf(text.strip());
            } catch (NumberFormatException e) {
                expected = null;
            }
            assertThat(ServiceAttributes.number(text)).as("'%s'", text).isEqualTo(expected);
            numbers += expected != null ? 1 : 0;
        }
        assertThat(numbers).as("texts that are numbers").isGreaterThan(10);
    }
}

package io.llmprof.events;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class TopicLayoutTest {

    @Test
    void everyTopicBelongsToTheFamilyItsRoleImplies() {
        assertThat(Topics.family(Topics.TRACE_EVENTS)).isEqualTo(Topics.Family.INPUTS);
        assertThat(Topics.family(Topics.SERVICE_EVENTS)).isEqualTo(Topics.Family.INPUTS);
        assertThat(Topics.family(Topics.DLQ)).isEqualTo(Topics.Family.DEAD_LETTERS);
        assertThat(Topics.family(Topics.HOST_BASELINES)).isEqualTo(Topics.Family.BASELINES);
        assertThat(Topics.registry().stream()
                        .filter(t -> Topics.family(t) == Topics.Family.OUTPUTS)
                        .map(Topic::name))
                .contains(Topics.PASSES.name(), Topics.LAYERS.name(), Topics.CROSS_RANK.name())
                .hasSize(Topics.registry().size() - 4);
    }

    @Test
    void defaultsGiveInputsAndOutputsThreePartitionsAndTheSmallTopicsOne() {
        TopicLayout d = TopicLayout.defaults();
        assertThat(d.partitions(Topics.Family.INPUTS)).isEqualTo(3);
        assertThat(d.partitions(Topics.Family.OUTPUTS)).isEqualTo(3);
        assertThat(d.partitions(Topics.Family.DEAD_LETTERS)).isEqualTo(1);
        assertThat(d.partitions(Topics.Family.BASELINES)).isEqualTo(1);
        assertThat(TopicLayout.fromOptions(null, null, null)).isEqualTo(d);
    }

    @Test
    void aPlainCountSetsInputsAndOutputsOnly() {
        TopicLayout l = TopicLayout.fromOptions("6", null, null);
        assertThat(l.partitionsSpec()).isEqualTo("inputs=6,outputs=6,dead-letters=1,baselines=1");
    }

    @Test
    void familiesCanBeSetOneByOne() {
        TopicLayout l = TopicLayout.fromOptions("inputs=8, dead-letters=2", null, null);
        assertThat(l.partitionsSpec()).isEqualTo("inputs=8,outputs=3,dead-letters=2,baselines=1");
    }

    @ParameterizedTest
    @CsvSource(
            delimiter = ';',
            value = {
                "0; must be at least 1",
                "inputs=0; must be at least 1",
                "ranks=4; unknown topic family 'ranks'",
                "inputs; expected N or FAMILY=N",
                "inputs=x; not a partition count"
            })
    void badPartitionSpecsAreRefusedWithTheReason(String spec, String message) {
        assertThatThrownBy(() -> TopicLayout.fromOptions(spec, null, null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(message);
    }

    @ParameterizedTest(name = "{0} brokers -> rf {1}, min.insync {2}")
    @CsvSource({"1, 1,", "2, 2,", "3, 3, 2", "5, 3, 2"})
    void replicationFollowsTheClusterSize(int brokers, short rf, Short minIsr) {
        TopicLayout d = TopicLayout.defaults();
        assertThat(d.effectiveReplicationFactor(brokers)).isEqualTo(rf);
        assertThat(d.effectiveMinInsyncReplicas(rf)).isEqualTo(minIsr);
    }

    @Test
    void setReplicationAndMinInsyncWinOverTheClusterSize() {
        TopicLayout l = TopicLayout.fromOptions(null, (short) 2, (short) 2);
        assertThat(l.effectiveReplicationFactor(5)).isEqualTo((short) 2);
        assertThat(l.effectiveMinInsyncReplicas((short) 2)).isEqualTo((short) 2);
    }

    @Test
    void minInsyncAboveTheReplicationFactorIsRefused() {
        assertThatThrownBy(() -> TopicLayout.fromOptions(null, (short) 1, (short) 2))
                .hasMessageContaining("no write could succeed");
    }
}

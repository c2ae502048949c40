package io.llmprof.dashboard;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class DashboardConfigTest {
    @Test
    void defaultsBindLoopbackOnPort8080() {
        DashboardConfig config = DashboardConfig.defaults("kafka:9092");

        assertThat(config.host()).isEqualTo("127.0.0.1");
        assertThat(config.httpPort()).isEqualTo(8080);
        assertThat(config.storeLimits().maxPassesPerRank()).isEqualTo(1000);
        assertThat(config.showInternals()).isFalse();
        assertThat(config.withShowInternals(true).withHttpPort(0).showInternals())
                .isTrue();
    }

    @Test
    void refusesValuesItCannotUseWithTheirName() {
        DashboardConfig config = DashboardConfig.defaults("kafka:9092");

        assertThatThrownBy(() -> config.withHttpPort(70_000)).hasMessageContaining("httpPort");
        assertThatThrownBy(() -> config.withMaxPassesPerRank(0)).hasMessageContaining("maxPassesPerRank");
        assertThat(config.withTopics(null).topics()).isEqualTo(io.llmprof.events.TopicLayout.defaults());
        assertThatThrownBy(() -> DashboardConfig.defaults(" ")).hasMessageContaining("bootstrap servers");
    }
}

package io.llmprof.deploy.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.dashboard.DashboardAccess;
import io.llmprof.dashboard.DashboardConfig;
import io.llmprof.dashboard.DashboardServer;
import io.llmprof.deploy.broker.BrokerConfig;
import io.llmprof.deploy.broker.EmbeddedKafka;
import io.llmprof.events.access.ApiToken;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.Alert;
import org.openqa.selenium.By;
import org.openqa.selenium.NoAlertPresentException;

/**
 * A dashboard started with an API token, in Debian Chromium: the page asks for the token once, then its REST calls
 * and its live stream (read with fetch, since EventSource cannot send the header) carry it.
 */
class TokenPageIT {
    private static final ApiToken TOKEN = ApiToken.of("page-token-0123456789abcdef");

    @Test
    void thePageAsksForTheTokenOnceAndThenWorks() throws Exception {
        try (EmbeddedKafka kafka = new EmbeddedKafka(BrokerConfig.defaults()).start();
                DashboardServer dashboard = DashboardServer.start(
                        DashboardConfig.defaults(kafka.bootstrapServers()).withHttpPort(0),
                        new PrometheusMeterRegistry(PrometheusConfig.DEFAULT),
                        null,
                        new DashboardAccess(TOKEN, false));
                Browser browser = new Browser()) {
            HttpClient http = HttpClient.newHttpClient();
            HttpResponse<String> anonymous = http.send(
                    HttpRequest.newBuilder(URI.create(dashboard.url() + "/api/ranks"))
                            .timeout(Duration.ofSeconds(10))
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(anonymous.statusCode()).isEqualTo(401);

            browser.driver.get(dashboard.url() + "/#/overview");
            Alert prompt = browser.await("the token prompt", d -> {
                try {
                    return d.switchTo().alert();
                } catch (NoAlertPresentException e) {
                    return null;
                }
            });
            assertThat(prompt.getText()).contains("API token");
            prompt.sendKeys(TOKEN.header().substring("Bearer ".length()));
            prompt.accept();

            browser.await("the overview loaded with the token", d -> {
                String state = d.findElement(By.cssSelector("section[data-view='overview']"))
                        .getAttribute("data-state");
                if ("error".equals(state)) {
                    throw new AssertionError("overview failed: "
                            + d.findElement(By.cssSelector("section[data-view='overview']"))
                                    .getText());
                }
                return "ready".equals(state) || "empty".equals(state);
            });
            browser.await("the live stream connected with the token", d -> "connected"
                    .equals(d.findElement(By.cssSelector("[data-live]")).getAttribute("data-live")));
            browser.await(
                    "a live event received",
                    d -> Integer.parseInt(d.findElement(By.cssSelector("[data-live-events]"))
                                            .getText()
                                            .trim())
                                    > 0
                            ? Boolean.TRUE
                            : null);
            // another view: no second prompt
            browser.driver.get(dashboard.url() + "/#/quality");
            browser.await("the quality view loaded", d -> {
                String state = d.findElement(By.cssSelector("section[data-view='quality']"))
                        .getAttribute("data-state");
                return "ready".equals(state) || "empty".equals(state);
            });
        }
    }
}

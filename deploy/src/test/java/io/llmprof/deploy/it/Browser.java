package io.llmprof.deploy.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.logging.Level;
import org.openqa.selenium.By;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.StaleElementReferenceException;
import org.openqa.selenium.TakesScreenshot;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.logging.LogEntry;
import org.openqa.selenium.logging.LogType;
import org.openqa.selenium.logging.LoggingPreferences;
import org.openqa.selenium.support.ui.WebDriverWait;

/**
 * One headless Debian Chromium driven through chromedriver (Selenium, offline: no Selenium Manager, no network), a
 * fresh profile per session, the flags of PLATFORM.md. Without chromium or chromedriver it FAILS, naming the Debian
 * packages to install: the browser tests never skip.
 */
final class Browser implements AutoCloseable {
    static final Path CHROMIUM = Path.of("/usr/bin/chromium");
    static final Path CHROMEDRIVER = Path.of("/usr/bin/chromedriver");
    static final Duration WAIT = Duration.ofSeconds(60);
    static final Path SCREENSHOTS = Path.of("target", "screenshots");

    final ChromeDriver driver;
    private final Path profile;

    Browser() {
        for (Path p : List.of(CHROMIUM, CHROMEDRIVER)) {
            assertThat(Files.isExecutable(p))
                    .as(
                            "%s is missing: the web page's browser tests need Debian Chromium and its driver;"
                                    + " install them with `apt-get install chromium chromium-driver`",
                            p)
                    .isTrue();
        }
        // Selenium Manager would try the network to find a driver: we name the driver and the binary ourselves.
        System.setProperty("SE_OFFLINE", "true");
        try {
            profile = Files.createTempDirectory("llmprof-chromium-");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        ChromeOptions options = new ChromeOptions();
        options.setBinary(CHROMIUM.toFile());
        options.addArguments(
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-dev-shm-usage",
                "--window-size=1400,1800",
                "--user-data-dir=" + profile);
        LoggingPreferences logs = new LoggingPreferences();
        logs.enable(LogType.BROWSER, Level.ALL);
        options.setCapability("goog:loggingPrefs", logs);
        ChromeDriverService service = new ChromeDriverService.Builder()
                .usingDriverExecutable(CHROMEDRIVER.toFile())
                .usingAnyFreePort()
                .build();
        driver = new ChromeDriver(service, options);
        driver.manage().timeouts().scriptTimeout(Duration.ofSeconds(10));
        driver.manage().timeouts().pageLoadTimeout(Duration.ofSeconds(60));
    }

    /**
     * Waits (deadline {@link #WAIT}) until the condition answers non-null / true. A view redraws its section when a
     * live {@code changed} event arrives, so an element found a moment ago may be gone: that try counts as "not yet".
     */
    <T> T await(String what, Function<WebDriver, T> condition) {
        return new WebDriverWait(driver, WAIT)
                .withMessage(what)
                .ignoring(StaleElementReferenceException.class)
                .until(condition);
    }

    /** Waits until the view's section has the given data-state ("ready", "empty", "error"), and returns it. */
    WebElement awaitView(String view, String state) {
        By section = By.cssSelector("section[data-view='" + view + "']");
        await("view " + view + " in state " + state, d -> {
            String now = d.findElement(section).getAttribute("data-state");
            if ("error".equals(now) && !"error".equals(state)) {
                throw new AssertionError(
                        "view " + view + " failed: " + js("return arguments[0].textContent", d.findElement(section)));
            }
            return state.equals(now);
        });
        return driver.findElement(section);
    }

    Object js(String script, Object... args) {
        return ((JavascriptExecutor) driver).executeScript(script, args);
    }

    /** Saves a screenshot under target/screenshots/NAME.png (for a person to look at). */
    Path screenshot(String name) {
        try {
            Files.createDirectories(SCREENSHOTS);
            Path out = SCREENSHOTS.resolve(name + ".png");
            Files.write(out, ((TakesScreenshot) driver).getScreenshotAs(OutputType.BYTES));
            return out;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Console entries at SEVERE (uncaught errors, failed loads) since the last call. */
    List<String> severeConsole() {
        return driver.manage().logs().get(LogType.BROWSER).getAll().stream()
                .filter(e -> e.getLevel().intValue() >= Level.SEVERE.intValue())
                .map(LogEntry::toString)
                .toList();
    }

    /** Number of canvases ECharts drew inside elements matching the selector. */
    long canvases(String css) {
        return ((Number) js("return document.querySelectorAll(arguments[0] + ' canvas').length", css)).longValue();
    }

    /** Body rows of the table data-table=NAME inside the view. */
    int rows(String view, String table) {
        return driver.findElements(
                        By.cssSelector("section[data-view='" + view + "'] table[data-table='" + table + "'] tbody tr"))
                .size();
    }

    @SuppressWarnings("unchecked")
    Map<String, Object> map(String script, Object... args) {
        return (Map<String, Object>) js(script, args);
    }

    @Override
    public void close() {
        try {
            driver.quit();
        } finally {
            try (var files = Files.walk(profile)) {
                files.sorted(java.util.Comparator.reverseOrder())
                        .forEach(p -> p.toFile().delete());
            } catch (IOException ignored) {
                // a temp profile left behind is harmless
            }
        }
    }
}

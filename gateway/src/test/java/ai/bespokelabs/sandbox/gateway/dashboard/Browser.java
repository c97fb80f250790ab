package ai.bespokelabs.sandbox.gateway.dashboard;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.logging.Level;
import org.openqa.selenium.By;
import org.openqa.selenium.Dimension;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.StaleElementReferenceException;
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
 * Debian's headless Chromium driven by its chromedriver (never a downloaded browser or driver): the page,
 * waits, screenshots under {@code target/dashboard-screenshots}, and the browser's console log.
 */
final class Browser implements AutoCloseable {
  static final Path CHROMIUM = Path.of("/usr/bin/chromium");
  static final Path CHROMEDRIVER = Path.of("/usr/bin/chromedriver");
  static final Path SCREENSHOTS = Path.of("target", "dashboard-screenshots");

  final ChromeDriver driver;
  private final List<String> console = new ArrayList<>();
  private Dimension shownSize;

  static boolean available() {
    return Files.isExecutable(CHROMIUM) && Files.isExecutable(CHROMEDRIVER);
  }

  Browser() {
    ChromeOptions options = new ChromeOptions();
    options.setBinary(CHROMIUM.toFile());
    options.addArguments("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
        "--window-size=1400,1000", "--disable-extensions", "--no-first-run", "--disable-background-networking");
    LoggingPreferences logs = new LoggingPreferences();
    logs.enable(LogType.BROWSER, Level.ALL);
    options.setCapability("goog:loggingPrefs", logs);
    ChromeDriverService service = new ChromeDriverService.Builder().usingDriverExecutable(CHROMEDRIVER.toFile())
        .usingAnyFreePort().build();
    driver = new ChromeDriver(service, options);
    driver.manage().timeouts().scriptTimeout(Duration.ofSeconds(20));
  }

  void open(String url) {
    driver.get(url);
  }

  WebElement find(String css) {
    return driver.findElement(By.cssSelector(css));
  }

  List<WebElement> all(String css) {
    return driver.findElements(By.cssSelector(css));
  }

  <T> T until(Function<WebDriver, T> condition) {
    // the page re-renders what changed on every refresh: an element found a moment ago may be gone
    return new WebDriverWait(driver, Duration.ofSeconds(20), Duration.ofMillis(100))
        .ignoring(StaleElementReferenceException.class).until(condition);
  }

  /** Waits until the element is displayed and its text contains {@code text}. */
  WebElement untilText(String css, String text) {
    return until(d -> {
      List<WebElement> found = d.findElements(By.cssSelector(css));
      return found.isEmpty() || !found.get(0).isDisplayed() || !found.get(0).getText().contains(text) ? null
          : found.get(0);
    });
  }

  WebElement untilShown(String css) {
    return until(d -> {
      List<WebElement> found = d.findElements(By.cssSelector(css));
      return !found.isEmpty() && found.get(0).isDisplayed() ? found.get(0) : null;
    });
  }

  /** Clicks the displayed element, found again should a refresh have replaced it. */
  void click(String css) {
    until(d -> {
      WebElement e = untilShown(css);
      e.click();
      return true;
    });
  }

  /** Runs an async script (its last argument is the callback) and answers what it passed back. */
  @SuppressWarnings("unchecked")
  Map<String, Object> fetch(String script) {
    return (Map<String, Object>) ((JavascriptExecutor) driver).executeAsyncScript(
        "const done = arguments[arguments.length - 1];" + script);
  }

  Object js(String script) {
    return ((JavascriptExecutor) driver).executeScript(script);
  }

  /**
   * Minimizes the window, which makes the page's {@code document.visibilityState} "hidden" (and fires its
   * {@code visibilitychange}) as a tab in the background would; timers and connections go on running.
   */
  void hideTab() {
    shownSize = driver.manage().window().getSize();
    driver.manage().window().minimize();
    until(d -> "hidden".equals(js("return document.visibilityState")));
  }

  /** Gives the window back its size: the page is visible again. */
  void showTab() {
    if (shownSize != null) {
      driver.manage().window().setSize(shownSize);
      shownSize = null;
    }
    until(d -> "visible".equals(js("return document.visibilityState")));
  }

  /**
   * From now on notes every request the page makes with {@code fetch} (its lifecycle event stream aside, which
   * stays open), forgetting those noted so far.
   */
  void recordRequests() {
    js("""
        if (!window.requested) {
          const original = window.fetch;
          window.requested = [];
          window.fetch = (input, init) => {
            const url = String(input instanceof Request ? input.url : input);
            if (!url.includes('/v1/sandbox-events')) window.requested.push(url);
            return original(input, init);
          };
        }
        window.requested.length = 0;""");
  }

  /** The requests noted since {@link #recordRequests()}, oldest first. */
  @SuppressWarnings("unchecked")
  List<String> requests() {
    return List.copyOf((List<String>) js("return window.requested.slice()"));
  }

  void screenshot(String name) {
    try {
      Files.createDirectories(SCREENSHOTS);
      File shot = driver.getScreenshotAs(OutputType.FILE);
      Files.copy(shot.toPath(), SCREENSHOTS.resolve(name + ".png"), StandardCopyOption.REPLACE_EXISTING);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Every console entry so far (the driver hands each out once). */
  List<String> console() {
    for (LogEntry e : driver.manage().logs().get(LogType.BROWSER)) {
      console.add(e.getLevel() + " " + e.getMessage());
    }
    return console;
  }

  /** Forgets the console entries read so far. */
  void forgetConsole() {
    console();
    console.clear();
  }

  /** The console entries that report a Content-Security-Policy violation or an uncaught script error. */
  List<String> violations() {
    return console().stream().filter(m -> m.contains("Content Security Policy") || m.contains("Refused to")
        || m.contains("Uncaught")).toList();
  }

  @Override
  public void close() {
    driver.quit();
  }
}

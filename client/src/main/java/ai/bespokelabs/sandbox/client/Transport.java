package ai.bespokelabs.sandbox.client;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.StringJoiner;
import java.util.function.Supplier;

/** Sends requests with the key, turns error answers into {@link SandboxException}s and retries retryable ones. */
final class Transport {
  final HttpClient http;
  final URI base;
  final String apiKey;
  final Duration timeout;
  final Retry retry;

  Transport(HttpClient http, URI base, String apiKey, Duration timeout, Retry retry) {
    this.http = http;
    this.base = base;
    this.apiKey = apiKey;
    this.timeout = timeout;
    this.retry = retry;
  }

  /** A request builder for {@code path} (already encoded) with these query parameters (nulls left out). */
  HttpRequest.Builder request(String path, Map<String, ?> query) {
    StringJoiner q = new StringJoiner("&", "?", "").setEmptyValue("");
    if (query != null) {
      query.forEach((k, v) -> {
        if (v != null) {
          q.add(k + "=" + URLEncoder.encode(String.valueOf(v), StandardCharsets.UTF_8));
        }
      });
    }
    HttpRequest.Builder b = HttpRequest.newBuilder(base.resolve(path + q)).timeout(timeout);
    if (apiKey != null) {
      b.header("Authorization", "Bearer " + apiKey);
    }
    return b;
  }

  /** Sends the request {@code build} makes (once per try), answering the successful response's body. */
  HttpResponse<byte[]> send(Supplier<HttpRequest> build, boolean retryable) {
    return send(build, HttpResponse.BodyHandlers.ofByteArray(), retryable);
  }

  /**
   * Sends with a body handler of any kind; an error answer's body is read whole to build the exception.
   * {@code retryable} false means a single try whatever the error (a streamed body cannot be sent again).
   */
  <T> HttpResponse<T> send(Supplier<HttpRequest> build, HttpResponse.BodyHandler<T> handler, boolean retryable) {
    int attempt = 1;
    while (true) {
      HttpResponse<Object> response = sendOnce(build.get(), handler);
      if (response.statusCode() < 400) {
        @SuppressWarnings("unchecked")
        HttpResponse<T> ok = (HttpResponse<T>) (HttpResponse<?>) response;
        return ok;
      }
      SandboxException error = SandboxException.of(response.statusCode(), (byte[]) response.body());
      if (!retryable || !error.retryable() || attempt >= retry.maxAttempts()) {
        throw error;
      }
      sleep(retry.delayMillis(attempt, error));
      attempt++;
    }
  }

  private <T> HttpResponse<Object> sendOnce(HttpRequest request, HttpResponse.BodyHandler<T> handler) {
    try {
      return http.send(request, info -> {
        if (info.statusCode() >= 400) {
          return HttpResponse.BodySubscribers.mapping(HttpResponse.BodySubscribers.ofByteArray(), b -> (Object) b);
        }
        return HttpResponse.BodySubscribers.mapping(handler.apply(info), b -> (Object) b);
      });
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new UncheckedIOException(new InterruptedIOException("interrupted"));
    } catch (IOException e) {
      throw new UncheckedIOException(request.method() + " " + request.uri().getPath() + ": " + e, e);
    }
  }

  private static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new UncheckedIOException(new InterruptedIOException("interrupted while waiting to retry"));
    }
  }

  static String segment(String value) {
    return URLEncoder.encode(value, StandardCharsets.UTF_8).replace("+", "%20");
  }

  static HttpRequest.BodyPublisher json(Object body) {
    return HttpRequest.BodyPublishers.ofByteArray(Json.write(body));
  }

}

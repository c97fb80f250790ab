package ai.bespokelabs.sandbox.cli;

import ai.bespokelabs.sandbox.client.Json;
import ai.bespokelabs.sandbox.client.SandboxClient;
import com.fasterxml.jackson.core.JsonProcessingException;
import java.io.InputStream;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.util.Map;

/** What every command works with: the process's streams and environment, the output mode and the client. */
final class Context {
  final InputStream in;
  final PrintStream out;
  final PrintStream err;
  final Map<String, String> env;
  boolean json;
  private SandboxClient client;

  Context(InputStream in, PrintStream out, PrintStream err, Map<String, String> env) {
    this.in = in;
    this.out = out;
    this.err = err;
    this.env = env;
  }

  /** The client for the stored login, or for BESPOKE_URL and BESPOKE_API_KEY. */
  synchronized SandboxClient client() {
    if (client == null) {
      Settings.Login login = Settings.resolve(env);
      client = SandboxClient.builder().url(login.url()).apiKey(login.apiKey()).build();
    }
    return client;
  }

  /** Prints a value as indented JSON (snake_case, as the API spells it). */
  void printJson(Object value) {
    try {
      out.println(Json.MAPPER.writerWithDefaultPrettyPrinter().writeValueAsString(value));
    } catch (JsonProcessingException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** One compact JSON line (for streams of events). */
  void printJsonLine(Object value) {
    try {
      out.println(Json.MAPPER.writeValueAsString(value));
    } catch (JsonProcessingException e) {
      throw new UncheckedIOException(e);
    }
  }
}

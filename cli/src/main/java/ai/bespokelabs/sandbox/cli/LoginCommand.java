package ai.bespokelabs.sandbox.cli;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code sandbox login}: stores the gateway URL and a key in the user's config file (mode 0600). */
@Command(name = "login", description = {"Store the gateway URL and API key for later commands (a file only you can"
    + " read, under $XDG_CONFIG_HOME or ~/.config). Without --api-key the key is read from stdin."})
final class LoginCommand implements Callable<Integer> {
  private final Context ctx;

  @Option(names = "--url", description = "The gateway, such as http://127.0.0.1:8000 (default: BESPOKE_URL).")
  String url;

  @Option(names = "--api-key", description = "The product key (default: BESPOKE_API_KEY, else a line of stdin).")
  String apiKey;

  LoginCommand(Context ctx) {
    this.ctx = ctx;
  }

  @Override
  public Integer call() throws Exception {
    String u = url != null ? url : ctx.env.get("BESPOKE_URL");
    if (u == null || u.isBlank()) {
      throw new CliException("give --url (or set BESPOKE_URL)");
    }
    String k = apiKey != null ? apiKey : ctx.env.get("BESPOKE_API_KEY");
    if (k == null) {
      if (!ctx.json) {
        ctx.err.print("API key: ");
        ctx.err.flush();
      }
      String line = new BufferedReader(new InputStreamReader(ctx.in, StandardCharsets.UTF_8)).readLine();
      k = line == null ? null : line.strip();
    }
    if (k == null || k.isEmpty()) {
      throw new CliException("no API key given");
    }
    Path file = Settings.store(ctx.env, new Settings.Login(u, k));
    if (ctx.json) {
      ctx.printJson(Map.of("url", u, "config", file.toString()));
    } else {
      ctx.out.println("Logged in to " + u + " (stored in " + file + ")");
    }
    return 0;
  }
}

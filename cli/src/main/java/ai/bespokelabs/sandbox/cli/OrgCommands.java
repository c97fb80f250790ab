package ai.bespokelabs.sandbox.cli;

import ai.bespokelabs.sandbox.client.ApiKey;
import ai.bespokelabs.sandbox.client.Costs;
import ai.bespokelabs.sandbox.client.Policy;
import java.math.BigDecimal;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** The organization's commands: costs, policy get|set, keys ls|create|revoke. */
final class OrgCommands {
  private OrgCommands() {
  }

  @Command(name = "costs", description = "Costs grouped by sandbox, backend or UTC day.")
  static final class CostsCommand implements Callable<Integer> {
    private final Context ctx;

    @Option(names = "--by", defaultValue = "sandbox", description = "sandbox, backend or day (default: ${DEFAULT-VALUE}).")
    String by;
    @Option(names = "--start", description = "Inclusive start, ISO-8601 with an offset (2026-04-01T00:00:00Z).")
    String start;
    @Option(names = "--end", description = "Exclusive end, ISO-8601 with an offset.")
    String end;

    CostsCommand(Context ctx) {
      this.ctx = ctx;
    }

    @Override
    public Integer call() {
      Costs costs = ctx.client().costs(by, start, end);
      if (ctx.json) {
        ctx.printJson(costs);
        return 0;
      }
      Table t = new Table(by.toUpperCase(java.util.Locale.ROOT), "RUNTIME_S", "PROVIDER_USD", "CUSTOMER_USD");
      BigDecimal runtime = BigDecimal.ZERO;
      BigDecimal provider = BigDecimal.ZERO;
      BigDecimal customer = BigDecimal.ZERO;
      for (Costs.Item i : costs.items()) {
        t.row(i.key(), i.runtimeSeconds().toPlainString(), i.providerCostUsd().toPlainString(),
            i.customerCostUsd().toPlainString());
        runtime = runtime.add(i.runtimeSeconds());
        provider = provider.add(i.providerCostUsd());
        customer = customer.add(i.customerCostUsd());
      }
      t.row("TOTAL", runtime.toPlainString(), provider.toPlainString(), customer.toPlainString());
      t.print(ctx.out);
      return 0;
    }
  }

  @Command(name = "policy", description = "The organization's guardrails.",
      subcommands = {PolicyCommand.Get.class, PolicyCommand.Set.class})
  static final class PolicyCommand implements Runnable {
    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
      throw new picocli.CommandLine.ParameterException(spec.commandLine(), "say `policy get` or `policy set`");
    }

    static void print(Context ctx, Policy p) {
      if (ctx.json) {
        ctx.printJson(p);
        return;
      }
      new Table("GUARDRAIL", "LIMIT").row("max_concurrent_sandboxes", p.maxConcurrentSandboxes())
          .row("hourly_spend_limit_usd", p.hourlySpendLimitUsd()).row("daily_spend_limit_usd", p.dailySpendLimitUsd())
          .row("allowed_backends", p.allowedBackends() == null ? null : String.join(",", p.allowedBackends()))
          .row("allowed_gpu_types", p.allowedGpuTypes() == null ? null : String.join(",", p.allowedGpuTypes()))
          .row("max_sandbox_lifetime_secs", p.maxSandboxLifetimeSecs())
          .row("include_llm_cost", p.includeLlmCost()).row("default_backend", p.defaultBackend()).print(ctx.out);
    }

    @Command(name = "get", description = "Show the guardrails (- means not enforced).")
    static final class Get implements Callable<Integer> {
      private final Context ctx;

      Get(Context ctx) {
        this.ctx = ctx;
      }

      @Override
      public Integer call() {
        print(ctx, ctx.client().policy());
        return 0;
      }
    }

    @Command(name = "set", description = {"Change guardrails; the others keep their value (with --clear: none "
        + "enforced but those given). The value `none` lifts one."})
    static final class Set implements Callable<Integer> {
      private final Context ctx;

      @Option(names = "--clear", description = "Start from no guardrail instead of the current ones.")
      boolean clear;
      @Option(names = "--max-concurrent", description = "Most sandboxes running at once.")
      String maxConcurrent;
      @Option(names = "--hourly-limit", description = "Customer spend cap (USD) over the rolling hour.")
      String hourly;
      @Option(names = "--daily-limit", description = "Customer spend cap (USD) over the UTC day.")
      String daily;
      @Option(names = "--backends", description = "Comma-separated backends allowed.")
      String backends;
      @Option(names = "--gpu-types", description = "Comma-separated GPU types allowed.")
      String gpuTypes;
      @Option(names = "--max-lifetime", description = "Longest sandbox lifetime in seconds.")
      String maxLifetime;
      @Option(names = "--default-backend", description = "Backend of creates that name none: auto or a backend "
          + "(none: backend required).")
      String defaultBackend;

      Set(Context ctx) {
        this.ctx = ctx;
      }

      @Override
      public Integer call() {
        Policy p = clear ? Policy.of(null, null, null, null, null, null) : ctx.client().policy();
        Policy next = Policy.of(
            maxConcurrent == null ? p.maxConcurrentSandboxes() : integer(maxConcurrent),
            hourly == null ? p.hourlySpendLimitUsd() : decimal(hourly),
            daily == null ? p.dailySpendLimitUsd() : decimal(daily),
            backends == null ? p.allowedBackends() : list(backends),
            gpuTypes == null ? p.allowedGpuTypes() : list(gpuTypes),
            maxLifetime == null ? p.maxSandboxLifetimeSecs() : integer(maxLifetime))
            .withIncludeLlmCost(p.includeLlmCost())
            .withDefaultBackend(defaultBackend == null ? p.defaultBackend()
                : "none".equals(defaultBackend) ? null : defaultBackend);
        print(ctx, ctx.client().setPolicy(next));
        return 0;
      }

      private static Integer integer(String v) {
        return "none".equals(v) ? null : Integer.valueOf(v);
      }

      private static BigDecimal decimal(String v) {
        return "none".equals(v) ? null : new BigDecimal(v);
      }

      private static List<String> list(String v) {
        return "none".equals(v) ? null : List.of(v.split(","));
      }
    }
  }

  @Command(name = "keys", description = "The organization's API keys.",
      subcommands = {KeysCommand.Ls.class, KeysCommand.Create.class, KeysCommand.Revoke.class})
  static final class KeysCommand implements Runnable {
    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
      throw new picocli.CommandLine.ParameterException(spec.commandLine(), "say `keys ls`, `keys create` or `keys revoke`");
    }

    @Command(name = "ls", description = "List the keys (never their secrets).")
    static final class Ls implements Callable<Integer> {
      private final Context ctx;

      Ls(Context ctx) {
        this.ctx = ctx;
      }

      @Override
      public Integer call() {
        List<ApiKey> keys = ctx.client().apiKeys();
        if (ctx.json) {
          ctx.printJson(keys);
          return 0;
        }
        Table t = new Table("ID", "NAME", "PREFIX", "SCOPES", "CREATED", "EXPIRES", "REVOKED");
        keys.forEach(k -> t.row(k.id(), k.name(), k.prefix(), String.join(",", k.scopes()), k.createdAt(),
            k.expiresAt(), k.revokedAt()));
        t.print(ctx.out);
        return 0;
      }
    }

    @Command(name = "create", description = "Issue a key and print its secret (shown only this once).")
    static final class Create implements Callable<Integer> {
      private final Context ctx;

      @Parameters(paramLabel = "NAME", description = "A name for the key.")
      String name;
      @Option(names = "--scope", description = "A scope (repeatable; default: *).")
      List<String> scopes;
      @Option(names = "--expires-at", description = "ISO-8601 expiry.")
      String expiresAt;

      Create(Context ctx) {
        this.ctx = ctx;
      }

      @Override
      public Integer call() {
        ApiKey k = ctx.client().createApiKey(name, scopes, expiresAt);
        if (ctx.json) {
          ctx.printJson(k);
        } else {
          ctx.err.println("Key " + k.id() + " (" + String.join(",", k.scopes()) + "); its secret, shown only once:");
          ctx.out.println(k.secret());
        }
        return 0;
      }
    }

    @Command(name = "revoke", description = "Revoke a key.")
    static final class Revoke implements Callable<Integer> {
      private final Context ctx;

      @Parameters(paramLabel = "KEY_ID", description = "The key's id (key_…).")
      String id;

      Revoke(Context ctx) {
        this.ctx = ctx;
      }

      @Override
      public Integer call() {
        ctx.client().revokeApiKey(id);
        if (ctx.json) {
          ctx.printJson(Map.of("id", id, "revoked", true));
        } else {
          ctx.out.println(id + " revoked");
        }
        return 0;
      }
    }
  }
}

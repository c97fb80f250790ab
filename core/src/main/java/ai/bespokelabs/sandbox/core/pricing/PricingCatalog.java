package ai.bespokelabs.sandbox.core.pricing;

import ai.bespokelabs.sandbox.core.config.ConfigException;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.io.InputStream;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;

/**
 * Hourly rates per backend ({@code conf/pricing.json}, or the file named by {@code BESPOKE_PRICING_FILE}).
 * A sandbox's rate is captured at create and never changes: {@code vcpu_per_hour × cpu (default 1) +
 * ram_gib_per_hour × memory_mb (default 1024) / 1024}; its pricing source is the catalog's
 * {@code last_updated}. A backend may also price GPU time per GPU type ({@code gpu_per_hour_usd}, an object from
 * type to hourly rate per GPU), which its adapter applies to the GPU time the provider reports.
 */
public final class PricingCatalog {
  public static final String DEFAULT_RESOURCE = "conf/pricing.json";

  /** The two rates the formula uses. */
  public record Rates(BigDecimal vcpuPerHour, BigDecimal ramGibPerHour) {}

  /**
   * What an LLM's tokens cost, in USD per million: uncached input, cached input (cache reads) and output. Used
   * for agent CLIs that report tokens but no cost.
   */
  public record ModelRates(BigDecimal inputPerMillion, BigDecimal cachedInputPerMillion, BigDecimal outputPerMillion) {
    /** The cost of {@code input} tokens of which {@code cached} were cache reads, and {@code output} tokens. */
    public BigDecimal cost(long input, long cached, long output) {
      long uncached = Math.max(0, input - cached);
      return inputPerMillion.multiply(BigDecimal.valueOf(uncached))
          .add(cachedInputPerMillion.multiply(BigDecimal.valueOf(Math.min(cached, input))))
          .add(outputPerMillion.multiply(BigDecimal.valueOf(output)))
          .movePointLeft(6).stripTrailingZeros();
    }
  }

  private final String source;
  private final Map<String, Rates> rates;
  private final Map<String, Map<String, BigDecimal>> gpuRates;
  private final Map<String, ModelRates> models;

  public PricingCatalog(String source, Map<String, Rates> rates) {
    this(source, rates, Map.of());
  }

  /** @param gpuRates per backend, the hourly rate of one GPU by GPU type */
  public PricingCatalog(String source, Map<String, Rates> rates, Map<String, Map<String, BigDecimal>> gpuRates) {
    this(source, rates, gpuRates, Map.of());
  }

  private PricingCatalog(String source, Map<String, Rates> rates, Map<String, Map<String, BigDecimal>> gpuRates,
      Map<String, ModelRates> models) {
    this.models = Map.copyOf(models);
    this.source = source;
    this.rates = Map.copyOf(rates);
    Map<String, Map<String, BigDecimal>> gpus = new HashMap<>();
    gpuRates.forEach((backend, byType) -> gpus.put(backend, Map.copyOf(byType)));
    this.gpuRates = Map.copyOf(gpus);
  }

  public static PricingCatalog load(Optional<Path> file) {
    if (file.isPresent()) {
      try {
        return parse(Files.readString(file.get()), "BESPOKE_PRICING_FILE " + file.get());
      } catch (IOException e) {
        throw new ConfigException("cannot read BESPOKE_PRICING_FILE " + file.get() + ": " + e.getMessage());
      }
    }
    try (InputStream in = PricingCatalog.class.getClassLoader().getResourceAsStream(DEFAULT_RESOURCE)) {
      if (in == null) {
        throw new ConfigException(DEFAULT_RESOURCE + " is missing from the classpath");
      }
      return parse(new String(in.readAllBytes(), StandardCharsets.UTF_8), DEFAULT_RESOURCE);
    } catch (IOException e) {
      throw new ConfigException("cannot read " + DEFAULT_RESOURCE + ": " + e.getMessage());
    }
  }

  static PricingCatalog parse(String json, String origin) {
    try {
      JsonObject root = new JsonObject(json);
      String source = root.getString("last_updated");
      JsonObject backends = root.getJsonObject("backends");
      if (source == null || backends == null) {
        throw new ConfigException(origin + " needs last_updated and backends");
      }
      Map<String, Rates> rates = new HashMap<>();
      Map<String, Map<String, BigDecimal>> gpus = new HashMap<>();
      for (String name : backends.fieldNames()) {
        JsonObject b = backends.getJsonObject(name);
        rates.put(name, new Rates(decimal(b, "vcpu_per_hour_usd", origin), decimal(b, "ram_gib_per_hour_usd", origin)));
        JsonObject gpu = b.getJsonObject("gpu_per_hour_usd");
        if (gpu != null) {
          Map<String, BigDecimal> byType = new HashMap<>();
          for (String type : gpu.fieldNames()) {
            byType.put(type, decimal(gpu, type, origin));
          }
          gpus.put(name, byType);
        }
      }
      PricingCatalog catalog = new PricingCatalog(source, rates, gpus);
      JsonObject llm = root.getJsonObject("llm_models");
      if (llm != null) {
        Map<String, ModelRates> models = new HashMap<>();
        for (String model : llm.fieldNames()) {
          JsonObject m = llm.getJsonObject(model);
          models.put(model, new ModelRates(decimal(m, "input_per_million_usd", origin),
              decimal(m, "cached_input_per_million_usd", origin), decimal(m, "output_per_million_usd", origin)));
        }
        catalog = catalog.withModels(models);
      }
      return catalog;
    } catch (DecodeException | ClassCastException e) {
      throw new ConfigException(origin + " is not a valid pricing catalog");
    }
  }

  private static BigDecimal decimal(JsonObject b, String field, String origin) {
    Object v = b.getValue(field);
    if (v == null) {
      return BigDecimal.ZERO;
    }
    try {
      BigDecimal d = new BigDecimal(String.valueOf(v));
      if (d.signum() < 0) {
        throw new ConfigException(origin + ": " + field + " must not be negative");
      }
      return d;
    } catch (NumberFormatException e) {
      throw new ConfigException(origin + ": " + field + " must be a number");
    }
  }

  /** This catalog with {@code models} priced ({@code llm_models} of the file). */
  public PricingCatalog withModels(Map<String, ModelRates> models) {
    return new PricingCatalog(source, rates, gpuRates, models);
  }

  /** The token prices of {@code model}; empty when the catalog does not price it. */
  public Optional<ModelRates> model(String model) {
    return model == null ? Optional.empty() : Optional.ofNullable(models.get(model));
  }

  /** The catalog's {@code last_updated}, recorded on every sandbox as its pricing source. */
  public String source() {
    return source;
  }

  /** The hourly rate of one GPU of {@code gpuType} on {@code backend}; null when the catalog has none. */
  public BigDecimal gpuHourlyRate(String backend, String gpuType) {
    Map<String, BigDecimal> byType = gpuRates.get(backend);
    return byType == null || gpuType == null ? null : byType.get(gpuType);
  }

  /** The hourly rate of a sandbox; backends without an entry cost nothing. */
  public BigDecimal hourlyRate(String backend, Double cpu, Integer memoryMb) {
    Rates r = rates.get(backend);
    if (r == null) {
      return BigDecimal.ZERO;
    }
    BigDecimal vcpus = cpu == null ? BigDecimal.ONE : new BigDecimal(String.valueOf(cpu));
    BigDecimal ramGib = BigDecimal.valueOf(memoryMb == null ? 1024 : memoryMb)
        .divide(BigDecimal.valueOf(1024), 12, RoundingMode.HALF_UP);
    return r.vcpuPerHour().multiply(vcpus).add(r.ramGibPerHour().multiply(ramGib)).stripTrailingZeros();
  }
}

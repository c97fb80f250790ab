package ai.bespokelabs.sandbox.client;

import java.math.BigDecimal;
import java.util.List;
import java.util.Map;

/**
 * The body of a sandbox create. Start from {@link #on(String)} (or {@link #auto()}) and add what you need with the
 * {@code with} methods; null fields are not sent. {@code isolation}, {@code maxHourlyUsd}, {@code prefer} and
 * {@code exclude} are for {@code backend: "auto"} only.
 */
public record CreateSandbox(String backend, String preset, Double cpu, Integer memoryMb, Integer diskMb,
    String gpu, Integer timeoutSecs, String image, Map<String, String> envVars, Boolean allowInternet,
    String template, String snapshotId, String workdir, String gitRepo, String gitRef, String isolation,
    BigDecimal maxHourlyUsd, List<String> prefer, List<String> exclude) {

  /** A create on {@code backend} with every other field left to the gateway. */
  public static CreateSandbox on(String backend) {
    return new CreateSandbox(backend, null, null, null, null, null, null, null, null, null, null, null, null,
        null, null, null, null, null, null);
  }

  /** A create the gateway places on the cheapest healthy backend that fits ({@code backend: "auto"}). */
  public static CreateSandbox auto() {
    return on("auto");
  }

  public CreateSandbox withPreset(String value) {
    return new CreateSandbox(backend, value, cpu, memoryMb, diskMb, gpu, timeoutSecs, image, envVars,
        allowInternet, template, snapshotId, workdir, gitRepo, gitRef, isolation, maxHourlyUsd, prefer,
        exclude);
  }

  public CreateSandbox withCpu(Double value) {
    return new CreateSandbox(backend, preset, value, memoryMb, diskMb, gpu, timeoutSecs, image, envVars,
        allowInternet, template, snapshotId, workdir, gitRepo, gitRef, isolation, maxHourlyUsd, prefer,
        exclude);
  }

  public CreateSandbox withMemoryMb(Integer value) {
    return new CreateSandbox(backend, preset, cpu, value, diskMb, gpu, timeoutSecs, image, envVars,
        allowInternet, template, snapshotId, workdir, gitRepo, gitRef, isolation, maxHourlyUsd, prefer,
        exclude);
  }

  public CreateSandbox withDiskMb(Integer value) {
    return new CreateSandbox(backend, preset, cpu, memoryMb, value, gpu, timeoutSecs, image, envVars,
        allowInternet, template, snapshotId, workdir, gitRepo, gitRef, isolation, maxHourlyUsd, prefer,
        exclude);
  }

  public CreateSandbox withGpu(String value) {
    return new CreateSandbox(backend, preset, cpu, memoryMb, diskMb, value, timeoutSecs, image, envVars,
        allowInternet, template, snapshotId, workdir, gitRepo, gitRef, isolation, maxHourlyUsd, prefer,
        exclude);
  }

  public CreateSandbox withTimeoutSecs(Integer value) {
    return new CreateSandbox(backend, preset, cpu, memoryMb, diskMb, gpu, value, image, envVars, allowInternet,
        template, snapshotId, workdir, gitRepo, gitRef, isolation, maxHourlyUsd, prefer, exclude);
  }

  public CreateSandbox withImage(String value) {
    return new CreateSandbox(backend, preset, cpu, memoryMb, diskMb, gpu, timeoutSecs, value, envVars,
        allowInternet, template, snapshotId, workdir, gitRepo, gitRef, isolation, maxHourlyUsd, prefer,
        exclude);
  }

  public CreateSandbox withEnvVars(Map<String, String> value) {
    return new CreateSandbox(backend, preset, cpu, memoryMb, diskMb, gpu, timeoutSecs, image, value,
        allowInternet, template, snapshotId, workdir, gitRepo, gitRef, isolation, maxHourlyUsd, prefer,
        exclude);
  }

  public CreateSandbox withAllowInternet(Boolean value) {
    return new CreateSandbox(backend, preset, cpu, memoryMb, diskMb, gpu, timeoutSecs, image, envVars, value,
        template, snapshotId, workdir, gitRepo, gitRef, isolation, maxHourlyUsd, prefer, exclude);
  }

  public CreateSandbox withTemplate(String value) {
    return new CreateSandbox(backend, preset, cpu, memoryMb, diskMb, gpu, timeoutSecs, image, envVars,
        allowInternet, value, snapshotId, workdir, gitRepo, gitRef, isolation, maxHourlyUsd, prefer, exclude);
  }

  public CreateSandbox withSnapshotId(String value) {
    return new CreateSandbox(backend, preset, cpu, memoryMb, diskMb, gpu, timeoutSecs, image, envVars,
        allowInternet, template, value, workdir, gitRepo, gitRef, isolation, maxHourlyUsd, prefer, exclude);
  }

  public CreateSandbox withWorkdir(String value) {
    return new CreateSandbox(backend, preset, cpu, memoryMb, diskMb, gpu, timeoutSecs, image, envVars,
        allowInternet, template, snapshotId, value, gitRepo, gitRef, isolation, maxHourlyUsd, prefer, exclude);
  }

  /** The weakest isolation {@code auto} may choose: {@code process}, {@code namespace}, {@code container} or {@code vm}. */
  public CreateSandbox withIsolation(String value) {
    return new CreateSandbox(backend, preset, cpu, memoryMb, diskMb, gpu, timeoutSecs, image, envVars,
        allowInternet, template, snapshotId, workdir, gitRepo, gitRef, value, maxHourlyUsd, prefer, exclude);
  }

  /** The highest catalog price per hour {@code auto} may choose. */
  public CreateSandbox withMaxHourlyUsd(BigDecimal value) {
    return new CreateSandbox(backend, preset, cpu, memoryMb, diskMb, gpu, timeoutSecs, image, envVars,
        allowInternet, template, snapshotId, workdir, gitRepo, gitRef, isolation, value, prefer, exclude);
  }

  /** Backends {@code auto} takes first among equal prices, in this order. */
  public CreateSandbox withPrefer(List<String> value) {
    return new CreateSandbox(backend, preset, cpu, memoryMb, diskMb, gpu, timeoutSecs, image, envVars,
        allowInternet, template, snapshotId, workdir, gitRepo, gitRef, isolation, maxHourlyUsd, value, exclude);
  }

  /** Backends {@code auto} never chooses. */
  public CreateSandbox withExclude(List<String> value) {
    return new CreateSandbox(backend, preset, cpu, memoryMb, diskMb, gpu, timeoutSecs, image, envVars,
        allowInternet, template, snapshotId, workdir, gitRepo, gitRef, isolation, maxHourlyUsd, prefer, value);
  }

  public CreateSandbox withGit(String repo, String ref) {
    return new CreateSandbox(backend, preset, cpu, memoryMb, diskMb, gpu, timeoutSecs, image, envVars,
        allowInternet, template, snapshotId, workdir, repo, ref, isolation, maxHourlyUsd, prefer, exclude);
  }
}

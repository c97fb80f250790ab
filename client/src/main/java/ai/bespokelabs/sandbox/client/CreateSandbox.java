package ai.bespokelabs.sandbox.client;

import java.util.Map;

/**
 * The body of a sandbox create. Start from {@link #on(String)} and add what you need with the {@code with}
 * methods; null fields are not sent.
 */
public record CreateSandbox(String backend, String preset, Double cpu, Integer memoryMb, Integer diskMb,
    String gpu, Integer timeoutSecs, String image, Map<String, String> envVars, Boolean allowInternet,
    String template, String snapshotId, String workdir, String gitRepo, String gitRef) {

  /** A create on {@code backend} with every other field left to the gateway. */
  public static CreateSandbox on(String backend) {
    return new CreateSandbox(backend, null, null, null, null, null, null, null, null, null, null, null, null,
        null, null);
  }

  public CreateSandbox withPreset(String value) {
    return new CreateSandbox(backend, value, cpu, memoryMb, diskMb, gpu, timeoutSecs, image, envVars,
        allowInternet, template, snapshotId, workdir, gitRepo, gitRef);
  }

  public CreateSandbox withCpu(Double value) {
    return new CreateSandbox(backend, preset, value, memoryMb, diskMb, gpu, timeoutSecs, image, envVars,
        allowInternet, template, snapshotId, workdir, gitRepo, gitRef);
  }

  public CreateSandbox withMemoryMb(Integer value) {
    return new CreateSandbox(backend, preset, cpu, value, diskMb, gpu, timeoutSecs, image, envVars,
        allowInternet, template, snapshotId, workdir, gitRepo, gitRef);
  }

  public CreateSandbox withDiskMb(Integer value) {
    return new CreateSandbox(backend, preset, cpu, memoryMb, value, gpu, timeoutSecs, image, envVars,
        allowInternet, template, snapshotId, workdir, gitRepo, gitRef);
  }

  public CreateSandbox withGpu(String value) {
    return new CreateSandbox(backend, preset, cpu, memoryMb, diskMb, value, timeoutSecs, image, envVars,
        allowInternet, template, snapshotId, workdir, gitRepo, gitRef);
  }

  public CreateSandbox withTimeoutSecs(Integer value) {
    return new CreateSandbox(backend, preset, cpu, memoryMb, diskMb, gpu, value, image, envVars,
        allowInternet, template, snapshotId, workdir, gitRepo, gitRef);
  }

  public CreateSandbox withImage(String value) {
    return new CreateSandbox(backend, preset, cpu, memoryMb, diskMb, gpu, timeoutSecs, value, envVars,
        allowInternet, template, snapshotId, workdir, gitRepo, gitRef);
  }

  public CreateSandbox withEnvVars(Map<String, String> value) {
    return new CreateSandbox(backend, preset, cpu, memoryMb, diskMb, gpu, timeoutSecs, image, value,
        allowInternet, template, snapshotId, workdir, gitRepo, gitRef);
  }

  public CreateSandbox withAllowInternet(Boolean value) {
    return new CreateSandbox(backend, preset, cpu, memoryMb, diskMb, gpu, timeoutSecs, image, envVars,
        value, template, snapshotId, workdir, gitRepo, gitRef);
  }

  public CreateSandbox withTemplate(String value) {
    return new CreateSandbox(backend, preset, cpu, memoryMb, diskMb, gpu, timeoutSecs, image, envVars,
        allowInternet, value, snapshotId, workdir, gitRepo, gitRef);
  }

  public CreateSandbox withSnapshotId(String value) {
    return new CreateSandbox(backend, preset, cpu, memoryMb, diskMb, gpu, timeoutSecs, image, envVars,
        allowInternet, template, value, workdir, gitRepo, gitRef);
  }

  public CreateSandbox withWorkdir(String value) {
    return new CreateSandbox(backend, preset, cpu, memoryMb, diskMb, gpu, timeoutSecs, image, envVars,
        allowInternet, template, snapshotId, value, gitRepo, gitRef);
  }

  public CreateSandbox withGit(String repo, String ref) {
    return new CreateSandbox(backend, preset, cpu, memoryMb, diskMb, gpu, timeoutSecs, image, envVars,
        allowInternet, template, snapshotId, workdir, repo, ref);
  }
}

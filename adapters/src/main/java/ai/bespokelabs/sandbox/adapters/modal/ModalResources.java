package ai.bespokelabs.sandbox.adapters.modal;

import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.model.SandboxConfig;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import modal.client.Api;

/** A sandbox's {@code Resources} from its configuration, checked before any call (422 on what Modal cannot do). */
final class ModalResources {
  /** {@code A100}, {@code H100:2}, {@code A100-80GB:8}: a GPU type and an optional count. */
  static final Pattern GPU = Pattern.compile("([A-Za-z][A-Za-z0-9-]{0,31})(?::([1-9][0-9]?))?");
  static final int MAX_GPUS = 8;

  private ModalResources() {}

  static Api.Resources of(SandboxConfig c) {
    if (c.workdir() != null || c.gitRepo() != null) {
      throw ApiException.invalid("workdir and git_repo are not supported by the modal backend");
    }
    if (c.template() != null) {
      throw ApiException.invalid("template is not supported by the modal backend; use image or snapshot_id");
    }
    if (c.image() != null && c.snapshotId() != null) {
      throw ApiException.invalid("give either image or snapshot_id, not both");
    }
    Api.Resources.Builder r = Api.Resources.newBuilder();
    if (c.cpu() != null) {
      if (!(c.cpu() > 0) || c.cpu() > 64) {
        throw ApiException.invalid("cpu must be between 0 and 64");
      }
      r.setMilliCpu((int) Math.round(c.cpu() * 1000));
    }
    if (c.memoryMb() != null) {
      if (c.memoryMb() <= 0) {
        throw ApiException.invalid("memory_mb must be positive");
      }
      r.setMemoryMb(c.memoryMb());
    }
    if (c.gpu() != null) {
      r.setGpuConfig(gpu(c.gpu()));
    }
    return r.build();
  }

  /** {@code TYPE[:COUNT]}, the type upper-cased as Modal names them. */
  static Api.GPUConfig gpu(String spec) {
    Matcher m = GPU.matcher(spec.trim());
    if (!m.matches()) {
      throw ApiException.invalid("gpu must look like A100 or H100:2");
    }
    int count = m.group(2) == null ? 1 : Integer.parseInt(m.group(2));
    if (count > MAX_GPUS) {
      throw ApiException.invalid("gpu count must be at most " + MAX_GPUS);
    }
    return Api.GPUConfig.newBuilder().setGpuType(m.group(1).toUpperCase(java.util.Locale.ROOT)).setCount(count).build();
  }
}

package ai.bespokelabs.sandbox.adapters.workspace;

import ai.bespokelabs.sandbox.adapters.SandboxProvider;
import ai.bespokelabs.sandbox.adapters.files.ReadableFile;
import ai.bespokelabs.sandbox.adapters.files.TarGz;
import ai.bespokelabs.sandbox.adapters.files.WritableFile;
import ai.bespokelabs.sandbox.core.bus.Messages.CreateSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.DestroySandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecResult;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.FileOp;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import ai.bespokelabs.sandbox.core.model.Workspace;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Populates a just-created sandbox from its {@link Workspace} through the adapter SPI, so it works on every
 * backend with files: each step in order (a git repository cloned on this node and copied in as an
 * archive, an inline file, an inline tar.gz), then the setup commands. When anything fails the sandbox is
 * destroyed and the create fails with the {@code workspace} error code; {@code context.provider_code} says
 * which step kind failed ({@code git_clone_failed}, {@code git_ref_not_found}, {@code git_destination_refused},
 * {@code file_failed}, {@code archive_failed}, {@code setup_failed} with the command's {@code exit_code}), and
 * {@code cleanup_status} whether the sandbox is gone.
 */
public final class Materializer {
  private static final Logger LOG = LoggerFactory.getLogger(Materializer.class);
  static final int SETUP_TIMEOUT_SECS = 1800;
  private static final int CHUNK = 256 * 1024;

  private final GitCloner git;

  public Materializer(GitCloner git) {
    this.git = git;
  }

  /** Applies the workspace of {@code request} to the sandbox {@code resourceId}; destroys it on failure. */
  public void apply(SandboxProvider provider, CreateSandbox request, String resourceId) {
    Workspace ws = request.workspace();
    if (ws.isEmpty()) {
      return;
    }
    try {
      for (Workspace.Step step : ws.steps()) {
        switch (step.kind()) {
          case "file" -> writeFile(provider, request, resourceId, step);
          case "archive" -> extract(provider, request, resourceId, step.path(), step.content());
          case "git" -> cloneInto(provider, request, resourceId, step);
          default -> throw failed("unsupported_step", null);
        }
      }
      for (String command : ws.setup()) {
        ExecResult r = provider.exec(new ExecSandbox(request.sandboxId(), "setup", resourceId, null, null, command, null,
            Map.of(), null, SETUP_TIMEOUT_SECS, 64 * 1024));
        if (r.exitCode() != 0) {
          throw failed("setup_failed", r.exitCode());
        }
      }
    } catch (StepFailed e) {
      throw destroyed(provider, request, resourceId, e);
    } catch (IOException | RuntimeException e) {
      LOG.debug("workspace of {} failed: {}", request.sandboxId(), e.getClass().getName());
      throw destroyed(provider, request, resourceId, failed(kindCode(e), null));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw destroyed(provider, request, resourceId, failed("interrupted", null));
    }
  }

  private static String kindCode(Exception e) {
    return e instanceof ApiException ? "file_failed" : "workspace_failed";
  }

  private static void writeFile(SandboxProvider provider, CreateSandbox request, String resourceId,
      Workspace.Step step) throws IOException, StepFailed {
    WritableFile w;
    try {
      w = provider.openWrite(new FileOp("open_write", request.sandboxId(), resourceId, step.path(), null, null,
          step.executable(), false));
    } catch (ApiException | ProviderException e) {
      throw failed("file_failed", null);
    }
    try {
      byte[] data = step.content() == null ? new byte[0] : step.content();
      for (int off = 0; off < data.length; off += CHUNK) {
        w.write(Arrays.copyOfRange(data, off, Math.min(data.length, off + CHUNK)));
      }
      w.commit();
    } catch (IOException | RuntimeException e) {
      w.abort();
      throw failed("file_failed", null);
    }
  }

  private static void extract(SandboxProvider provider, CreateSandbox request, String resourceId, String path,
      byte[] targz) throws StepFailed {
    copyArchive(provider, request, resourceId, path, null, targz, "archive_failed");
  }

  private void cloneInto(SandboxProvider provider, CreateSandbox request, String resourceId, Workspace.Step step)
      throws IOException, InterruptedException, StepFailed {
    Path tmp = Files.createTempDirectory("git-clone-");
    try {
      Path repo = tmp.resolve("repo");
      try {
        git.cloneInto(step.repo(), step.ref(), repo);
      } catch (GitCloner.CloneFailed e) {
        throw failed(e.code(), null);
      }
      copyArchive(provider, request, resourceId, step.path(), TarGz.ofDirectory(repo), null, "git_clone_failed");
    } finally {
      GitCloner.deleteTree(tmp);
    }
  }

  /** Sends an archive (streamed from {@code source}, or the bytes {@code inline}) into directory {@code path}. */
  private static void copyArchive(SandboxProvider provider, CreateSandbox request, String resourceId, String path,
      ReadableFile source, byte[] inline, String code) throws StepFailed {
    WritableFile w = null;
    try {
      w = provider.openArchiveWrite(new FileOp("open_archive_write", request.sandboxId(), resourceId, path, null, null,
          false, false));
      if (inline != null) {
        for (int off = 0; off < inline.length; off += CHUNK) {
          w.write(Arrays.copyOfRange(inline, off, Math.min(inline.length, off + CHUNK)));
        }
      } else {
        byte[] buf = new byte[CHUNK];
        for (int n; (n = source.read(buf)) > 0; ) {
          w.write(n == buf.length ? buf : Arrays.copyOf(buf, n));
        }
      }
      w.commit();
    } catch (IOException | RuntimeException e) {
      if (w != null) {
        w.abort();
      }
      throw failed(code, null);
    } finally {
      if (source != null) {
        try {
          source.close();
        } catch (IOException ignored) {
          // the producer thread ends with the pipe
        }
      }
    }
  }

  private static ProviderException destroyed(SandboxProvider provider, CreateSandbox request, String resourceId,
      StepFailed cause) {
    String cleanup;
    try {
      provider.destroy(new DestroySandbox(request.sandboxId(), resourceId));
      cleanup = "deleted";
    } catch (RuntimeException e) {
      cleanup = "unknown";
    }
    ProviderError error = ProviderError.of(ErrorCode.WORKSPACE, request.backend(), "create", false,
            ProviderError.Outcome.FAILED)
        .withContext("provider_code", cause.code).withContext("cleanup_status", cleanup);
    if (cause.exitCode != null) {
      error = error.withContext("exit_code", cause.exitCode);
    }
    return new ProviderException(error);
  }

  private static StepFailed failed(String code, Integer exitCode) {
    return new StepFailed(code, exitCode);
  }

  /** A step that failed, by kind. */
  private static final class StepFailed extends Exception {
    final String code;
    final Integer exitCode;

    StepFailed(String code, Integer exitCode) {
      super(code, null, false, false);
      this.code = code;
      this.exitCode = exitCode;
    }
  }
}

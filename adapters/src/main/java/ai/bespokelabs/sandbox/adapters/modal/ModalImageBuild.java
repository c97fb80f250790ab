package ai.bespokelabs.sandbox.adapters.modal;

import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderError.Outcome;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import modal.client.Api;
import modal.client.Api.GenericResult.GenericStatus;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Waits for Modal to build an image, as Modal's own clients do: {@code ImageGetOrCreate} answers with the image's
 * id before the image is built (its {@code result} is set only once the build ended), and {@code SandboxCreate}
 * refuses an image that is still building. The build is followed with {@code ImageJoinStreaming} (server
 * streaming: build log entries, each with an entry id, then the result), sent again from the last entry id seen
 * whenever a stream ends without a result (Modal ends each after the {@code timeout} the request gives), until the
 * create's deadline. Log entries are read past and never kept, logged or passed on.
 *
 * <p>Outcomes: success is the image id. A failed build (failure, timeout, init failure) is the tenant's image:
 * 422 whose message names the image and carries Modal's exception text (one line, bounded), recorded as a
 * {@code configuration} failure.
 * A build Modal terminated or failed internally is retryable {@code creation_failed}. The deadline passing is a
 * retryable {@code timeout} (Modal goes on building; a later create finds the image built). Every failure has
 * outcome {@code failed}: no sandbox exists yet.
 */
final class ModalImageBuild {
  private static final Logger LOG = LoggerFactory.getLogger(ModalImageBuild.class);
  /** How long Modal is asked to hold one join stream open (the value Modal's clients send). */
  static final long JOIN_TIMEOUT_MS = 55_000;
  /** How much longer than that the client waits for the server to end a stream before cancelling it. */
  static final long JOIN_GRACE_MS = 5_000;
  /** A stream that ended having brought nothing new is sent again after this pause, growing to {@link #MAX_PAUSE_MS}. */
  static final long MIN_PAUSE_MS = 100;
  static final long MAX_PAUSE_MS = 2_000;
  /** Failed join calls in a row (lost connections, refusals to retry) before the create gives up. */
  static final int MAX_FAILURES = 5;
  /** The longest part of Modal's exception text a failure message carries. */
  static final int MAX_EXCEPTION_CHARS = 300;
  static final int MAX_IMAGE_CHARS = 200;

  private final ModalClient client;
  private final String image;
  private final String imageId;
  private final long deadlineNanos;
  private final Promise<String> done = Promise.promise();
  private String lastEntryId = "";
  private int failures;
  private long pause = MIN_PAUSE_MS;

  /**
   * @param image what the tenant asked for (the registry reference), named in a failure's message
   * @param deadlineNanos the create's deadline on {@link System#nanoTime()}
   */
  private ModalImageBuild(ModalClient client, String image, String imageId, long deadlineNanos) {
    this.client = client;
    this.image = image;
    this.imageId = imageId;
    this.deadlineNanos = deadlineNanos;
  }

  /**
   * The image id once the image is built: at once when {@code answer} (of {@code ImageGetOrCreate}) carries a
   * finished result, else after joining the build until {@code deadlineNanos}.
   */
  static Future<String> await(ModalClient client, String image, Api.ImageGetOrCreateResponse answer,
      long deadlineNanos) {
    if (answer.getImageId().isBlank()) {
      return Future.failedFuture(ModalErrors.of(ErrorCode.CREATION_FAILED, "create", false, Outcome.FAILED));
    }
    if (answer.hasResult() && answer.getResult().getStatus() != GenericStatus.GENERIC_STATUS_UNSPECIFIED) {
      return outcome(image, answer.getImageId(), answer.getResult());
    }
    ModalImageBuild build = new ModalImageBuild(client, image, answer.getImageId(), deadlineNanos);
    LOG.debug("modal image {} is being built; joining its build", answer.getImageId());
    build.join();
    return build.done.future();
  }

  /** One {@code ImageJoinStreaming}; the next is sent from its callback (never a growing chain of futures). */
  private void join() {
    long left = (deadlineNanos - System.nanoTime()) / 1_000_000;
    if (left <= 0) {
      done.tryFail(pastDeadline());
      return;
    }
    long serverMs = Math.min(JOIN_TIMEOUT_MS, left);
    Api.ImageJoinStreamingRequest req = Api.ImageJoinStreamingRequest.newBuilder().setImageId(imageId)
        .setTimeout(serverMs / 1000f).setLastEntryId(lastEntryId).build();
    String before = lastEntryId;
    Api.GenericResult[] result = new Api.GenericResult[1];
    client.stream("ImageJoinStreaming", req, Api.ImageJoinStreamingResponse.getDefaultInstance(), msg -> {
      if (!msg.getEntryId().isEmpty()) {
        lastEntryId = msg.getEntryId();
      }
      if (msg.hasResult() && msg.getResult().getStatus() != GenericStatus.GENERIC_STATUS_UNSPECIFIED) {
        result[0] = msg.getResult();
        return true;
      }
      return false;
    }, Math.min(left, serverMs + JOIN_GRACE_MS), "create").onComplete(ar -> {
      if (result[0] != null) {
        outcome(image, imageId, result[0]).onComplete(done);
        return;
      }
      if (System.nanoTime() - deadlineNanos >= 0) {
        done.tryFail(pastDeadline());
        return;
      }
      if (ar.failed()) {
        ProviderError e = ModalErrors.map(ar.cause(), "create") instanceof ProviderException p ? p.error() : null;
        if (e == null || !e.retryable() || ++failures >= MAX_FAILURES) {
          done.tryFail(e == null ? ar.cause() : new ProviderException(failed(e)));
          return;
        }
      } else {
        failures = 0;
      }
      boolean progressed = ar.succeeded() && !lastEntryId.equals(before);
      if (progressed) {
        pause = MIN_PAUSE_MS;
        join();
        return;
      }
      LOG.debug("modal image {}: a join ended without news; joining again", imageId);
      long wait = pause;
      pause = Math.min(MAX_PAUSE_MS, pause * 2);
      client.vertx().setTimer(wait, t -> join());
    });
  }

  /** The same error with outcome {@code failed}: a join creates nothing, whatever the call's failure. */
  private static ProviderError failed(ProviderError e) {
    return new ProviderError(e.code(), e.backend(), e.op(), e.retryable(), Outcome.FAILED, e.context());
  }

  private ProviderException pastDeadline() {
    LOG.info("modal image {} was not built within the create timeout", imageId);
    return new ProviderException(ProviderError.of(ErrorCode.TIMEOUT, ModalErrors.BACKEND, "create", true,
        Outcome.FAILED).withContext("provider_code", "image_build_pending"));
  }

  /** A finished build's result as the create's next step: the image id, or the failure. */
  static Future<String> outcome(String image, String imageId, Api.GenericResult result) {
    return switch (result.getStatus()) {
      case GENERIC_STATUS_SUCCESS -> Future.succeededFuture(imageId);
      case GENERIC_STATUS_TERMINATED, GENERIC_STATUS_INTERNAL_FAILURE -> Future.failedFuture(new ProviderException(
          ProviderError.of(ErrorCode.CREATION_FAILED, ModalErrors.BACKEND, "create", true, Outcome.FAILED)
              .withContext("provider_code", result.getStatus() == GenericStatus.GENERIC_STATUS_TERMINATED
                  ? "image_build_terminated" : "image_build_internal_failure")));
      default -> Future.failedFuture(buildFailed(image, result));
    };
  }

  /**
   * 422 whose message names the image and carries Modal's exception text, on one line and bounded: the tenant's
   * image did not build (the gateway records the create as failed with code {@code configuration}, outcome
   * {@code failed}, not retryable). Build log entries are never part of it.
   */
  static ApiException buildFailed(String image, Api.GenericResult result) {
    String why = oneLine(result.getException(), MAX_EXCEPTION_CHARS);
    if (why.isEmpty()) {
      why = switch (result.getStatus()) {
        case GENERIC_STATUS_TIMEOUT -> "the build timed out";
        case GENERIC_STATUS_INIT_FAILURE -> "the build could not start";
        default -> "the build failed"
            + (result.getExitcode() != 0 ? " with exit code " + result.getExitcode() : "");
      };
    }
    return ApiException.invalid("image " + oneLine(image, MAX_IMAGE_CHARS) + " failed to build on Modal: " + why);
  }

  /** {@code text} with every run of whitespace or control characters as one space, trimmed, at most {@code max}. */
  static String oneLine(String text, int max) {
    String s = text == null ? "" : text.replaceAll("[\\s\\p{Cntrl}]+", " ").strip();
    return s.length() <= max ? s : s.substring(0, max - 1).stripTrailing() + "…";
  }
}

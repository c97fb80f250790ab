package ai.bespokelabs.sandbox.client;

import java.math.BigDecimal;

/**
 * How an execution ended: the answer of {@link SandboxClient#execute} and the {@code exit} event of a stream.
 * {@code stdout}/{@code stderr} are the stored result, cut at the gateway's output cap (then the
 * {@code *Truncated} flag is set); a stream delivers everything.
 *
 * @param status {@code completed}, {@code timed_out} or {@code cancelled}
 * @param lastSeq the sequence number of the execution's last output or notice event
 */
public record ExecutionResult(String requestId, String executionId, String status, String stdout, String stderr,
    int exitCode, boolean stdoutTruncated, boolean stderrTruncated, boolean timedOut, long durationMs,
    long lastSeq, Usage usage) {

  /** The metered runtime and cost of one execution (decimal strings on the wire). */
  public record Usage(BigDecimal runtimeSeconds, BigDecimal providerCostUsd, BigDecimal customerCostUsd) {
  }
}

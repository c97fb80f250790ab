package ai.bespokelabs.sandbox.core.config;

import ai.bespokelabs.sandbox.core.net.Cidr;
import java.nio.file.Path;
import java.util.List;

/**
 * Executions and what sandboxes may reach on the host ({@code execution} in {@code conf/gateway.json}).
 *
 * @param outputLimitBytes stored bytes per stream and execution ({@code BESPOKE_MAX_OUTPUT_BYTES})
 * @param timeoutSecs timeout when neither request nor sandbox sets one ({@code BESPOKE_EXEC_TIMEOUT_SECS})
 * @param journalBytes output kept per running execution for reconnecting clients ({@code BESPOKE_EXEC_JOURNAL_BYTES})
 * @param workdirRoots directories a host-process sandbox may name as {@code workdir} ({@code BESPOKE_WORKDIR_ROOTS})
 * @param gitAllowFileUrls whether {@code git_repo} may use {@code file://} URLs ({@code BESPOKE_GIT_ALLOW_FILE_URLS})
 * @param gitAllowPrivate whether {@code git_repo} may reach private hosts ({@code BESPOKE_GIT_ALLOW_PRIVATE})
 * @param sandboxUidFirst first host uid of the sandboxes of a root gateway ({@code BESPOKE_SANDBOX_UIDS})
 * @param sandboxUidCount how many uids from {@code sandboxUidFirst} they may have ({@code BESPOKE_SANDBOX_UIDS})
 * @param sandboxUidLocks where the lock files of the uids held on this host are ({@code BESPOKE_SANDBOX_UID_LOCKS})
 * @param sandboxAllowCidrs ranges sandbox programs may reach although sandbox egress refuses them otherwise
 *     (loopback, link-local, private ranges, cluster members, the database) ({@code BESPOKE_SANDBOX_ALLOW_CIDRS})
 */
public record ExecutionConfig(int outputLimitBytes, int timeoutSecs, int journalBytes, List<Path> workdirRoots,
    boolean gitAllowFileUrls, boolean gitAllowPrivate, int sandboxUidFirst, int sandboxUidCount,
    Path sandboxUidLocks, List<Cidr> sandboxAllowCidrs) {
  public ExecutionConfig {
    workdirRoots = List.copyOf(workdirRoots);
    sandboxAllowCidrs = List.copyOf(sandboxAllowCidrs);
  }
}

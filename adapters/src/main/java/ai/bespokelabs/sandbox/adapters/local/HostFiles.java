package ai.bespokelabs.sandbox.adapters.local;

import ai.bespokelabs.sandbox.adapters.files.ReadableFile;
import ai.bespokelabs.sandbox.adapters.files.WritableFile;
import ai.bespokelabs.sandbox.core.model.FileEntry;
import java.nio.file.Path;
import java.nio.file.SecureDirectoryStream;
import java.util.List;

/**
 * Files of a host-directory sandbox, whose programs may change the tree at any moment. A path is relative to
 * the sandbox directory, or absolute as the sandbox's programs see it (the host path for {@code local},
 * {@code /sandbox/…} under bubblewrap); {@code ..} is resolved by name and may not leave the directory.
 *
 * <p>Every operation resolves the path once, one component at a time, from a handle on the sandbox
 * directory ({@link SecureDirectoryStream}: {@code openat}, {@code fstatat}, {@code renameat},
 * {@code unlinkat} relative to an open directory, never following a symbolic link), and then acts on the
 * handle it reached: a link met on the way or at the end is refused, never followed, so renaming or swapping
 * entries meanwhile cannot lead anything outside the directory. FIFOs, sockets and devices are refused from
 * their type before anything opens them. (Java's handles cannot open with {@code O_NONBLOCK}: sandbox code
 * that swaps a FIFO into a name between that check and the open can still block the open, on one of its own
 * organization's file threads, see the adapters' file pool; an archive download's walk runs on a thread of
 * its own, at most {@link HostArchives#ARCHIVES_PER_SANDBOX} at a time per sandbox.)
 *
 * <p>What the gateway creates (uploaded files, directories, archive entries) is made in a private staging
 * directory beside the sandboxes (same file system), given the sandbox directory's owner and its mode there,
 * and renamed into place relative to the parent's handle; an upload's missing parent directories are only
 * created at commit, so a refused, aborted or failed upload leaves nothing behind.
 *
 * <p>Resolution is {@link SandboxTree}'s (on the primitives of {@link Handles}); {@link HostReads},
 * {@link HostWrites} (through {@link Staging}), {@link HostDeletes} and {@link HostArchives} do the operations.
 */
final class HostFiles {
  private final SandboxTree tree;
  private final HostReads reads;
  private final HostWrites writes;
  private final HostDeletes deletes;
  private final HostArchives archives;

  /**
   * @param inside where programs see {@code root}; null when they see its host path
   * @param staging a directory only the gateway uses, on the sandbox directory's file system
   */
  HostFiles(Path root, String inside, Path staging) {
    this.tree = new SandboxTree(root, inside);
    Staging stage = new Staging(staging == null ? tree.root().resolveSibling(".files-staging")
        : staging.toAbsolutePath().normalize());
    this.reads = new HostReads(tree);
    this.writes = new HostWrites(tree, stage);
    this.deletes = new HostDeletes(tree);
    this.archives = new HostArchives(tree, stage);
  }

  List<FileEntry> list(String path) {
    return reads.list(path);
  }

  ReadableFile openRead(String path) {
    return reads.openRead(path);
  }

  WritableFile openWrite(String path, boolean executable) {
    return writes.openWrite(path, executable);
  }

  void delete(String path, boolean recursive) {
    deletes.delete(path, recursive);
  }

  /** The directory at {@code path} as a tar.gz of its tree (links kept as links, special files skipped). */
  ReadableFile archiveRead(String path) {
    return archives.archiveRead(path);
  }

  /** Receives a tar.gz to extract at commit into the directory at {@code path} (see {@link HostArchives}). */
  WritableFile archiveWrite(String path) {
    return archives.archiveWrite(path);
  }
}

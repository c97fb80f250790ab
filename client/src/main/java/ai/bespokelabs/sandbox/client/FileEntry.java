package ai.bespokelabs.sandbox.client;

/**
 * An entry of a sandbox directory.
 *
 * @param type {@code file}, {@code directory}, {@code symlink} or {@code other}
 * @param mode the permission bits in octal, like {@code 0644}
 */
public record FileEntry(String name, String path, boolean isDir, String type, long size, String mode,
    String modified) {
}

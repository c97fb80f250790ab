package ai.bespokelabs.sandbox.adapters.spi;

import java.util.Locale;
import java.util.Optional;

/**
 * What a backend can honour when {@code backend: "auto"} chooses one: how strongly it isolates a sandbox, and
 * whether it offers GPUs, runs container images, has templates, and can cut a sandbox off the internet
 * ({@code allow_internet: false}). Declared by the backend itself ({@link Backend#placement()}).
 */
public record PlacementFacts(Isolation isolation, boolean gpus, boolean images, boolean templates,
    boolean networkIsolation) {
  /** What a backend that declares nothing is taken for: the weakest isolation, nothing optional. */
  public static final PlacementFacts NONE = new PlacementFacts(Isolation.PROCESS, false, false, false, false);

  /** Isolation levels, weakest first. */
  public enum Isolation {
    /** A host process (local, ray). */
    PROCESS,
    /** Linux namespaces or an OS sandbox profile on the host (bwrap, safehouse). */
    NAMESPACE,
    /** A container (docker, modal, tensorlake, runpod). */
    CONTAINER,
    /** A virtual machine (e2b, daytona, codecapsules). */
    VM;

    public String wire() {
      return name().toLowerCase(Locale.ROOT);
    }

    /** The level named {@code wire}, or empty. */
    public static Optional<Isolation> of(String wire) {
      for (Isolation i : values()) {
        if (i.wire().equals(wire)) {
          return Optional.of(i);
        }
      }
      return Optional.empty();
    }
  }
}

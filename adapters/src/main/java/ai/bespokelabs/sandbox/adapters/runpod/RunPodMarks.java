package ai.bespokelabs.sandbox.adapters.runpod;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Our marks on a RunPod pod. RunPod pods carry no labels and its list filters by no marker, so
 * the marks travel in the name: {@code bsk.<sandbox id>.<organization id>.<create token>} (our ids hold no
 * dots). Everything about the name's layout is here, so correcting it is a one-file change.
 */
record RunPodMarks(String sandboxId, String organizationId, String createToken) {
  private static final String PREFIX = "bsk";
  private static final Pattern PART = Pattern.compile("[A-Za-z0-9_-]{1,80}");
  private static final Pattern NAME = Pattern.compile("bsk\\.([A-Za-z0-9_-]{1,80})\\.([A-Za-z0-9_-]{1,80})\\."
      + "([A-Za-z0-9_-]{1,80})");

  RunPodMarks {
    for (String part : new String[] {sandboxId, organizationId, createToken}) {
      if (part == null || !PART.matcher(part).matches()) {
        throw new IllegalArgumentException("an id that cannot be carried in a RunPod pod name");
      }
    }
  }

  /** The pod name carrying the marks. */
  String name() {
    return PREFIX + "." + sandboxId + "." + organizationId + "." + createToken;
  }

  /** The marks of a pod name, or null when it is not one of ours. */
  static RunPodMarks parse(String name) {
    if (name == null) {
      return null;
    }
    Matcher m = NAME.matcher(name);
    return m.matches() ? new RunPodMarks(m.group(1), m.group(2), m.group(3)) : null;
  }
}

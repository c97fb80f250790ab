package ai.bespokelabs.sandbox.gateway.http;

import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.repo.SandboxRepository.ListFilter;
import io.vertx.core.MultiMap;
import java.time.OffsetDateTime;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * The filters of {@code GET /v1/sandboxes}: {@code status} and {@code backend} (comma-separated, or the
 * parameter repeated), {@code created_after} (inclusive) and {@code created_before} (exclusive). An empty
 * value is no filter, as an empty cursor is the first page.
 */
final class SandboxFilters {
  static final List<String> STATUSES = List.of("creating", "running", "stopping", "destroyed", "failed");
  /** At most this many values per filter: a filter is a choice, not a list to look up. */
  static final int MAX_VALUES = 32;
  private static final Pattern BACKEND = Pattern.compile("[a-z0-9][a-z0-9_.-]{0,63}");

  private SandboxFilters() {}

  static ListFilter parse(MultiMap query) {
    List<String> statuses = values(query, "status");
    if (statuses != null) {
      for (String s : statuses) {
        if (!STATUSES.contains(s)) {
          throw ApiException.invalid("status must be one or more of " + String.join(", ", STATUSES) + ": " + s);
        }
      }
    }
    List<String> backends = values(query, "backend");
    if (backends != null) {
      for (String b : backends) {
        if (!BACKEND.matcher(b).matches()) {
          throw ApiException.invalid("backend must be one or more backend names: " + b);
        }
      }
    }
    OffsetDateTime after = instant(query, "created_after");
    OffsetDateTime before = instant(query, "created_before");
    if (after != null && before != null && !after.isBefore(before)) {
      throw ApiException.invalid("created_after must be earlier than created_before");
    }
    return new ListFilter(statuses, backends, after, before);
  }

  /** The lowercased, distinct values of a list parameter; null when it is absent or empty. */
  private static List<String> values(MultiMap query, String name) {
    Set<String> out = new LinkedHashSet<>();
    for (String raw : query.getAll(name)) {
      if (raw.isEmpty()) {
        continue;
      }
      for (String part : raw.split(",", -1)) {
        String v = part.trim().toLowerCase(Locale.ROOT);
        if (v.isEmpty()) {
          throw ApiException.invalid(name + " must not have an empty value");
        }
        out.add(v);
      }
    }
    if (out.size() > MAX_VALUES) {
      throw ApiException.invalid(name + " takes at most " + MAX_VALUES + " values");
    }
    return out.isEmpty() ? null : new ArrayList<>(out);
  }

  private static OffsetDateTime instant(MultiMap query, String name) {
    String raw = query.get(name);
    if (raw == null || raw.isEmpty()) {
      return null;
    }
    try {
      return OffsetDateTime.parse(raw);
    } catch (DateTimeParseException e) {
      throw ApiException.invalid(name + " must be an RFC 3339 timestamp with an offset, e.g. 2026-04-01T12:00:00Z"
          + " (a + in the offset must be sent as %2B)");
    }
  }
}

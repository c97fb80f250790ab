package ai.bespokelabs.sandbox.adapters;

/**
 * The keys of the marks (metadata, tags) the gateway puts on what it creates at a provider that takes free-form
 * keys, so a create whose answer was lost can be found again and cleaned up, and so a sandbox is known to be this
 * gateway's: one spelling for every such backend.
 */
public final class ProviderMarks {
  /** The gateway's sandbox id. */
  public static final String SANDBOX_ID = "bespoke_sandbox_id";
  /** The organization the sandbox belongs to. */
  public static final String ORGANIZATION_ID = "bespoke_organization_id";
  /** A token unique to one create attempt: what tells a lost create from an older sandbox of the same id. */
  public static final String CREATE_TOKEN = "bespoke_create_token";
  /** Which gateway deployment made it, where a provider account is shared. */
  public static final String SCOPE = "bespoke_scope";

  private ProviderMarks() {}
}

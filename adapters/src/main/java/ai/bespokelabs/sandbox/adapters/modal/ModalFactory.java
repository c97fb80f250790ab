package ai.bespokelabs.sandbox.adapters.modal;

import ai.bespokelabs.sandbox.adapters.spi.Backend;
import ai.bespokelabs.sandbox.adapters.spi.BackendFactory;
import java.util.List;
import java.util.Optional;

/** Registers the {@code modal} backend ({@link BackendFactory}). */
public final class ModalFactory implements BackendFactory {
  @Override
  public String name() {
    return ModalProvider.BACKEND;
  }

  @Override
  public boolean nodeBound() {
    return false;
  }

  /** What this backend reads (its defaults included); README's settings table documents each. */
  @Override
  public List<Setting> settings() {
    return List.of(
        Setting.of("MODAL_TOKEN_ID", "tokenId"),
        Setting.of("MODAL_TOKEN_SECRET", "tokenSecret"),
        Setting.of("MODAL_SERVER_URL", "serverUrl", "https://api.modal.com:443"),
        Setting.of("MODAL_ENVIRONMENT", "environment"),
        Setting.of("MODAL_APP_NAME", "appName", "bespoke-sandbox-gateway"),
        Setting.of("MODAL_IMAGE", "image", "python:3.12-slim"),
        Setting.of("MODAL_SANDBOX_TIMEOUT_SECS", "sandboxTimeoutSecs", 3600),
        Setting.of("MODAL_CREATE_TIMEOUT_SECS", "createTimeoutSecs", 600),
        Setting.of("MODAL_REQUEST_TIMEOUT_SECS", "requestTimeoutSecs", 30));
  }

  @Override
  public Optional<Backend> create(Environment e) {
    return ModalSettings.from(e.settings()).map(s -> new ModalProvider(e.vertx(), s, e.pricing()));
  }
}

package ai.bespokelabs.sandbox.core.agent;

import ai.bespokelabs.sandbox.core.Secret;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.SecureRandom;
import java.util.Optional;
import javax.crypto.Cipher;
import javax.crypto.Mac;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;

/**
 * Seals organizations' stored secrets (agent credentials) for the database: AES-256-GCM under a key derived from
 * the server's secret (HMAC-SHA256 of a fixed label), a random 96-bit nonce per value, and the organization and
 * name as associated data, so a sealed value moved to another organization or name does not open. The key never
 * leaves this object; failures name no value.
 */
public final class SecretBox {
  private static final byte VERSION = 1;
  private static final int NONCE = 12;
  private static final int TAG_BITS = 128;
  private final SecretKeySpec key;
  private final SecureRandom random = new SecureRandom();

  public SecretBox(Secret serverSecret) {
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(serverSecret.reveal().getBytes(StandardCharsets.UTF_8), "HmacSHA256"));
      this.key = new SecretKeySpec(mac.doFinal("bespoke-sandbox stored secrets v1".getBytes(StandardCharsets.UTF_8)),
          "AES");
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("HmacSHA256 is unavailable", e);
    }
  }

  /** The sealed form of {@code value}: version, nonce, then ciphertext with its tag. */
  public byte[] seal(String organizationId, String name, String value) {
    byte[] nonce = new byte[NONCE];
    random.nextBytes(nonce);
    try {
      Cipher c = Cipher.getInstance("AES/GCM/NoPadding");
      c.init(Cipher.ENCRYPT_MODE, key, new GCMParameterSpec(TAG_BITS, nonce));
      c.updateAAD(aad(organizationId, name));
      byte[] sealed = c.doFinal(value.getBytes(StandardCharsets.UTF_8));
      return ByteBuffer.allocate(1 + NONCE + sealed.length).put(VERSION).put(nonce).put(sealed).array();
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("AES-GCM is unavailable");
    }
  }

  /** The value sealed for this organization and name; empty when it was sealed for others or altered. */
  public Optional<Secret> open(String organizationId, String name, byte[] sealed) {
    if (sealed == null || sealed.length < 1 + NONCE + TAG_BITS / 8 || sealed[0] != VERSION) {
      return Optional.empty();
    }
    try {
      Cipher c = Cipher.getInstance("AES/GCM/NoPadding");
      c.init(Cipher.DECRYPT_MODE, key, new GCMParameterSpec(TAG_BITS, sealed, 1, NONCE));
      c.updateAAD(aad(organizationId, name));
      byte[] plain = c.doFinal(sealed, 1 + NONCE, sealed.length - 1 - NONCE);
      return Optional.of(new Secret(new String(plain, StandardCharsets.UTF_8)));
    } catch (GeneralSecurityException e) {
      return Optional.empty();
    }
  }

  private static byte[] aad(String organizationId, String name) {
    byte[] org = organizationId.getBytes(StandardCharsets.UTF_8);
    byte[] n = name.getBytes(StandardCharsets.UTF_8);
    return ByteBuffer.allocate(8 + org.length + n.length).putInt(org.length).put(org).putInt(n.length).put(n).array();
  }
}

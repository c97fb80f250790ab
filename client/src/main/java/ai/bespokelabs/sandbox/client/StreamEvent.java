package ai.bespokelabs.sandbox.client;

import java.nio.charset.StandardCharsets;

/** What an {@link ExecutionStream} delivers, in sequence order, ending with {@link Exit}. */
public sealed interface StreamEvent {

  /** Bytes the program wrote to {@code stdout} or {@code stderr}, numbered by {@code seq}. */
  record OutputChunk(String stream, long seq, byte[] data) implements StreamEvent {
    public boolean isStderr() {
      return "stderr".equals(stream);
    }

    /** The bytes as UTF-8 text (invalid bytes replaced). */
    public String text() {
      return new String(data, StandardCharsets.UTF_8);
    }
  }

  /** Output this client can no longer get (it left the gateway's journal before it was read). */
  record Gap(long seq, long fromSeq, long toSeq, Long bytes, String message) implements StreamEvent {
  }

  /** A note of the gateway about the stream, such as the stored result reaching its cap. */
  record Notice(long seq, String message) implements StreamEvent {
  }

  /** The program ended: its stored result. Always the last event. */
  record Exit(ExecutionResult result) implements StreamEvent {
  }
}

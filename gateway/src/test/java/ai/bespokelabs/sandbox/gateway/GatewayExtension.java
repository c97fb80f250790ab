package ai.bespokelabs.sandbox.gateway;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionConfigurationException;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Starts one {@link TestGateway} for a test class, before its {@code @BeforeAll} methods, and closes it after
 * its {@code @AfterAll} ones. The gateway is put into the class's static {@code TestGateway} field (as JUnit
 * puts a {@code @TempDir}); a test that restarts it ({@code gw = gw.restarted()}) leaves the new one there,
 * and that one is closed.
 *
 * <p>With the default settings: {@code @ExtendWith(GatewayExtension.class)}. With environment overrides, read
 * when the class starts: {@code @RegisterExtension static final GatewayExtension GATEWAY = new
 * GatewayExtension(() -> Map.of(...));}
 */
public final class GatewayExtension implements BeforeAllCallback, AfterAllCallback {
  private final Supplier<Map<String, String>> env;

  public GatewayExtension() {
    this(Map::of);
  }

  public GatewayExtension(Supplier<Map<String, String>> env) {
    this.env = env;
  }

  @Override
  public void beforeAll(ExtensionContext context) throws Exception {
    Field field = gatewayField(context.getRequiredTestClass());
    field.set(null, new TestGateway(env.get()));
  }

  @Override
  public void afterAll(ExtensionContext context) throws Exception {
    Field field = gatewayField(context.getRequiredTestClass());
    TestGateway gateway = (TestGateway) field.get(null);
    field.set(null, null);
    if (gateway != null) {
      gateway.close();
    }
  }

  /** The one static, non-final {@code TestGateway} field the class declares. */
  private static Field gatewayField(Class<?> testClass) {
    List<Field> fields = new ArrayList<>();
    for (Field f : testClass.getDeclaredFields()) {
      if (f.getType() == TestGateway.class && Modifier.isStatic(f.getModifiers())
          && !Modifier.isFinal(f.getModifiers())) {
        fields.add(f);
      }
    }
    if (fields.size() != 1) {
      throw new ExtensionConfigurationException(testClass.getName()
          + " must declare exactly one static, non-final TestGateway field for the gateway, not " + fields.size());
    }
    fields.get(0).setAccessible(true);
    return fields.get(0);
  }
}

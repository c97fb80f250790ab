package ai.bespokelabs.sandbox.gateway;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;

/** Every row of every table of a test gateway's database, as text, to search for secrets. */
final class DatabaseDump {
  private DatabaseDump() {}

  /** Runs one statement on the test gateway's database, behind the gateway's back. */
  static void execute(TestGateway gw, String sql) {
    try (Connection c = DriverManager.getConnection(url(gw), "postgres", null); Statement st = c.createStatement()) {
      st.execute(sql);
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  private static String url(TestGateway gw) {
    return "jdbc:" + gw.databaseUrl.replace("postgres@", "");
  }

  static String of(TestGateway gw) {
    String url = url(gw);
    StringBuilder out = new StringBuilder();
    try (Connection c = DriverManager.getConnection(url, "postgres", null); Statement st = c.createStatement()) {
      List<String> tables = new ArrayList<>();
      try (ResultSet rs = st.executeQuery("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")) {
        while (rs.next()) {
          tables.add(rs.getString(1));
        }
      }
      for (String t : tables) {
        try (ResultSet rs = st.executeQuery("SELECT row_to_json(x)::text FROM \"" + t + "\" x")) {
          while (rs.next()) {
            out.append(t).append(": ").append(rs.getString(1)).append('\n');
          }
        }
      }
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
    return out.toString();
  }
}

package ai.bespokelabs.sandbox.core.config;

/**
 * The operator's dashboard ({@code dashboard} in {@code conf/gateway.json}).
 *
 * @param sessionTtlSecs lifetime of a dashboard session and its cookie ({@code BESPOKE_DASHBOARD_SESSION_TTL_SECS})
 * @param cookieSecure whether the session cookie is marked {@code Secure} ({@code BESPOKE_SESSION_COOKIE_SECURE})
 * @param localLogin whether {@code /dashboard/local} is served ({@code BESPOKE_ENABLE_LOCAL_DASHBOARD_LOGIN})
 */
public record DashboardConfig(int sessionTtlSecs, boolean cookieSecure, boolean localLogin) {}

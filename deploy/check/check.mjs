// Checks deploy/ without a cluster or a container engine: every YAML file parses (strictly: no duplicate
// keys), every Kubernetes object validates against the schema of its kind (kubernetes-models, and no field
// its kind lacks), the compose file against the Compose specification (dclint), the proxy's configuration
// with haproxy -c and the systemd unit with systemd-analyze when they are there, and the files agree with
// each other and with the gateway (setting names, probes, ports, labels, grace periods). Prints one line
// per check and "deploy: N passed, N failed"; exits 1 when any failed.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseAllDocuments } from "yaml";
import { modelsOf, unknownFields } from "./unknown-fields.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const deploy = join(here, "..");
const root = join(deploy, "..");
const kube = join(deploy, "kubernetes");

// The clustering settings, accepted as long as core/.../config/Variables.java names none of them (they are
// being added there); once it has BESPOKE_CLUSTER, only its own table counts, so a name that differs fails.
const CLUSTER_SETTINGS = ["BESPOKE_CLUSTER", "BESPOKE_CLUSTER_HOST", "BESPOKE_CLUSTER_PORT", "BESPOKE_CLUSTER_MEMBERS",
  "BESPOKE_CLUSTER_KUBERNETES", "BESPOKE_CLUSTER_KUBERNETES_SERVICE", "BESPOKE_DRAIN_SECS"];

let passed = 0;
let failed = 0;

async function check(name, fn) {
  try {
    const note = await fn();
    passed++;
    console.log(`ok   ${name}${note ? ` (${note})` : ""}`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}: ${e.message}`);
  }
}

function assert(condition, message) {
  if (!condition) {
    throw new Error(message);
  }
}

function read(path) {
  return readFileSync(path, "utf8");
}

/** Every document of a YAML file as plain data; any error or warning (duplicate keys included) fails. */
function parseYaml(path) {
  const docs = parseAllDocuments(read(path), { uniqueKeys: true, merge: true, prettyErrors: true });
  const problems = (Array.isArray(docs) ? docs : [docs]).flatMap((d) => [...d.errors, ...d.warnings]);
  assert(problems.length === 0, problems.map((p) => p.message).join("; "));
  return docs.map((d) => d.toJS({ maxAliasCount: -1 })).filter((d) => d != null);
}

/** The setting names the gateway reads: the table of Variables.java plus the clustering settings. */
function knownSettings() {
  const source = read(join(root, "core/src/main/java/ai/bespokelabs/sandbox/core/config/Variables.java"));
  const names = [...source.matchAll(/"([A-Z][A-Z0-9_]+)", "[a-zA-Z.]+"/g)].map((m) => m[1]);
  assert(names.includes("BESPOKE_DATABASE_URL"), "cannot read the setting names of Variables.java");
  return new Set(names.includes("BESPOKE_CLUSTER") ? names : [...names, ...CLUSTER_SETTINGS]);
}

function assertKnown(names, where, known) {
  const unknown = names.filter((n) => /^(BESPOKE_|HOST$|PORT$)/.test(n) && !known.has(n));
  assert(unknown.length === 0, `${where} sets ${unknown.join(", ")}, which the gateway does not read`);
}

function run(command, args, options = {}) {
  return spawnSync(command, args, { encoding: "utf8", ...options });
}

function onPath(command) {
  return run("sh", ["-c", `command -v ${command}`]).status === 0;
}

/** In a container the host backends would run tenants' programs as the gateway's own user. */
function assertCloudOnly(allowed, where) {
  const list = (allowed ?? "").split(",").map((b) => b.trim());
  assert(allowed && !list.some((b) => ["local", "bwrap", "safehouse"].includes(b)),
    `${where} must set BESPOKE_ALLOWED_BACKENDS to cloud backends only (it is ${allowed})`);
}

const matches = (selector, labels) =>
  Object.entries(selector ?? {}).length > 0 && Object.entries(selector).every(([k, v]) => labels?.[k] === v);

// ---------------------------------------------------------------- Kubernetes
const kubeFiles = readdirSync(kube).filter((f) => f.endsWith(".yaml")).sort();
const objects = [];
for (const file of kubeFiles) {
  await check(`kubernetes/${file} parses`, () => {
    const docs = parseYaml(join(kube, file));
    docs.forEach((doc) => objects.push({ file, doc }));
    return `${docs.length} object(s)`;
  });
}
const byKind = (kind) => objects.filter((o) => o.doc.kind === kind).map((o) => o.doc);
const named = (kind, name) => byKind(kind).find((o) => o.metadata?.name === name);

for (const { file, doc } of objects.filter((o) => o.doc.kind !== "Kustomization")) {
  await check(`kubernetes/${file}: ${doc.kind} ${doc.metadata?.name} matches the ${doc.apiVersion} schema`, async () => {
    assert(typeof doc.apiVersion === "string" && typeof doc.kind === "string", "apiVersion and kind are required");
    let model;
    try {
      const models = modelsOf(doc.apiVersion).endsWith("cert-manager") ? "@kubernetes-models/cert-manager" : "kubernetes-models";
      model = (await import(`${models}/${doc.apiVersion}/${doc.kind}`))[doc.kind];
    } catch {
      throw new Error(`unknown kind ${doc.apiVersion} ${doc.kind}`);
    }
    new model(doc).validate();
    const unknown = unknownFields(doc);
    assert(unknown.length === 0, unknown.join("; "));
    assert(doc.metadata?.name, "metadata.name is required");
  });
}

await check("kubernetes/kustomization.yaml lists every manifest but the Secret template", () => {
  const k = byKind("Kustomization")[0];
  assert(k, "no kustomization.yaml");
  const expected = kubeFiles.filter((f) => f !== "kustomization.yaml" && f !== "secret.example.yaml");
  assert(JSON.stringify([...k.resources].sort()) === JSON.stringify(expected), `resources ${k.resources} != ${expected}`);
});

await check("kubernetes: the kustomization renders (kubectl kustomize)", () => {
  if (!onPath("kubectl")) {
    return "skipped: no kubectl";
  }
  const r = run("kubectl", ["kustomize", kube]);
  assert(r.status === 0, r.stderr.trim());
  const rendered = parseAllDocuments(r.stdout).length;
  const listed = objects.filter((o) => !["Kustomization", "Secret"].includes(o.doc.kind)).length;
  assert(rendered === listed, `rendered ${rendered} objects, the files hold ${listed}`);
});

const deployment = byKind("Deployment")[0] ?? {};
const podSpec = deployment.spec?.template?.spec ?? {};
const podLabels = deployment.spec?.template?.metadata?.labels;
const container = podSpec.containers?.[0] ?? {};
const config = named("ConfigMap", container.envFrom?.find((e) => e.configMapRef)?.configMapRef.name)?.data ?? {};
const containerPort = (port) => container.ports?.find((p) => p.name === port || p.containerPort === port);

await check("kubernetes: Deployment of 3 replicas whose selector matches its pods", () => {
  assert(deployment.spec?.replicas === 3, `replicas ${deployment.spec?.replicas}`);
  assert(matches(deployment.spec.selector.matchLabels, podLabels), "selector does not match the pod labels");
});

await check("kubernetes: probes (readiness /readyz, liveness and startup /healthz) on the HTTP port", () => {
  const probes = { readinessProbe: "/readyz", livenessProbe: "/healthz", startupProbe: "/healthz" };
  for (const [probe, path] of Object.entries(probes)) {
    const get = container[probe]?.httpGet;
    assert(get?.path === path, `${probe} is not GET ${path}`);
    assert(containerPort(get.port)?.containerPort === Number(config.PORT), `${probe} port is not PORT ${config.PORT}`);
  }
});

await check("kubernetes: non-root, no privilege escalation, read-only root, resources", () => {
  const pod = podSpec.securityContext ?? {};
  const c = container.securityContext ?? {};
  assert(pod.runAsNonRoot === true && pod.runAsUser > 0, "the pod must run as a non-root uid");
  assert(c.allowPrivilegeEscalation === false, "allowPrivilegeEscalation must be false");
  assert(c.capabilities?.drop?.includes("ALL"), "capabilities must drop ALL");
  assert(c.readOnlyRootFilesystem === true, "the root filesystem must be read-only");
  const mounts = (container.volumeMounts ?? []).map((m) => m.mountPath);
  assert(mounts.includes(config.BESPOKE_DATA_DIR) && mounts.includes("/tmp"), "the data directory and /tmp need volumes");
  assert(container.resources?.requests?.cpu && container.resources?.requests?.memory && container.resources?.limits?.memory,
    "cpu and memory requests and a memory limit are required");
});

await check("kubernetes: terminationGracePeriodSeconds covers preStop, drain and shutdown grace", () => {
  const preStop = Number(container.lifecycle?.preStop?.exec?.command?.[1] ?? 0);
  const needed = preStop + Number(config.BESPOKE_DRAIN_SECS) + Number(config.BESPOKE_SHUTDOWN_GRACE_SECS);
  assert(Number.isFinite(needed), "BESPOKE_DRAIN_SECS and BESPOKE_SHUTDOWN_GRACE_SECS must be in the ConfigMap");
  assert(podSpec.terminationGracePeriodSeconds > needed, `${podSpec.terminationGracePeriodSeconds} s <= ${needed} s`);
});

await check("kubernetes: settings are the gateway's, per-pod ones from the downward API", () => {
  const known = knownSettings();
  assertKnown(Object.keys(config), "the ConfigMap", known);
  const secret = byKind("Secret")[0] ?? {};
  assertKnown(Object.keys(secret.stringData ?? {}), "the Secret template", known);
  assertKnown((container.env ?? []).map((e) => e.name), "the container", known);
  const env = Object.fromEntries((container.env ?? []).map((e) => [e.name, e.valueFrom?.fieldRef?.fieldPath]));
  assert(env.BESPOKE_CLUSTER_HOST === "status.podIP", "BESPOKE_CLUSTER_HOST must be the pod IP");
  assert(env.BESPOKE_NODE_ID === "metadata.name", "BESPOKE_NODE_ID must be the pod name");
  assert(config.HOST === "0.0.0.0", "HOST must be 0.0.0.0 so the probes and Services reach the pod");
  assert(config.BESPOKE_CLUSTER === "true" && config.BESPOKE_CLUSTER_KUBERNETES === "true", "clustering is off");
  assertCloudOnly(config.BESPOKE_ALLOWED_BACKENDS, "the ConfigMap");
  for (const key of ["BESPOKE_DATABASE_URL", "BESPOKE_API_KEY_PEPPER", "BESPOKE_CONTROL_PLANE_ADMIN_TOKEN"]) {
    assert(secret.stringData?.[key], `the Secret template lacks ${key}`);
    assert(!(key in config), `${key} is a secret, not a ConfigMap entry`);
  }
});

await check("kubernetes: references resolve (ConfigMap, Secret, ServiceAccount); the pods hold no API token", () => {
  for (const from of container.envFrom ?? []) {
    if (from.configMapRef) assert(named("ConfigMap", from.configMapRef.name), `no ConfigMap ${from.configMapRef.name}`);
    if (from.secretRef) assert(named("Secret", from.secretRef.name), `no Secret ${from.secretRef.name}`);
  }
  const account = named("ServiceAccount", podSpec.serviceAccountName);
  assert(account, `no ServiceAccount ${podSpec.serviceAccountName}`);
  // discovery reads DNS records: nothing of the Kubernetes API is needed
  assert(account.automountServiceAccountToken === false && podSpec.automountServiceAccountToken !== true,
    "the ServiceAccount must not mount an API token");
  assert(byKind("Role").length === 0 && byKind("RoleBinding").length === 0, "no Role is needed");
});

await check("kubernetes: each pod's cluster identity is a cert-manager Certificate of the cluster's own CA", () => {
  const dir = (path) => path?.slice(0, path.lastIndexOf("/"));
  const paths = ["BESPOKE_CLUSTER_TLS_CA", "BESPOKE_CLUSTER_TLS_CERT", "BESPOKE_CLUSTER_TLS_KEY"].map((k) => config[k]);
  assert(paths.every(Boolean) && new Set(paths.map(dir)).size === 1, "the ConfigMap must name the three files in one directory");
  const mount = container.volumeMounts?.find((m) => m.mountPath === dir(paths[0]));
  assert(mount?.readOnly === true, `no read-only volume at ${dir(paths[0])}`);
  const secret = podSpec.volumes?.find((v) => v.name === mount.name)?.secret;
  assert(secret && (secret.defaultMode & 0o007) === 0, "the identity must be a Secret volume unreadable by others");
  assert(JSON.stringify(paths.map((p) => p.slice(p.lastIndexOf("/") + 1))) === '["ca.crt","tls.crt","tls.key"]',
    "the files are a cert-manager Secret's ca.crt, tls.crt and tls.key");
  const cert = byKind("Certificate").find((c) => c.spec.secretName === secret.secretName);
  assert(cert, `no Certificate keeps the Secret ${secret.secretName}`);
  assert(cert.spec.privateKey?.encoding === "PKCS8", "the node key must be PKCS#8 (privateKey.encoding)");
  assert(["server auth", "client auth"].every((u) => cert.spec.usages?.includes(u)), "the node is TLS server and client");
  assert(cert.spec.dnsNames?.includes(config.BESPOKE_CLUSTER_KUBERNETES_SERVICE),
    "the node certificate must name the headless Service (a DNS SAN)");
  const issuer = named("Issuer", cert.spec.issuerRef?.name);
  const ca = byKind("Certificate").find((c) => c.spec.secretName === issuer?.spec.ca?.secretName);
  assert(ca?.spec.isCA === true, "the node certificate's Issuer must be a CA issuer on a CA Certificate of these files");
});

await check("kubernetes: only the gateway's pods reach the cluster ports, and the database", () => {
  const policies = byKind("NetworkPolicy");
  const own = policies.find((p) => matches(p.spec.podSelector?.matchLabels, podLabels));
  assert(own && own.spec.policyTypes?.includes("Ingress"), "no ingress NetworkPolicy selects the gateway's pods");
  const clusterPorts = ["membership", "event-bus"];
  clusterPorts.forEach((p) => assert(containerPort(p), `no container port ${p}`));
  for (const rule of own.spec.ingress ?? []) {
    const ports = (rule.ports ?? []).map((p) => p.port);
    if (ports.length === 0 || ports.some((p) => clusterPorts.includes(p) || clusterPorts.map((n) => containerPort(n).containerPort).includes(p))) {
      assert(rule.from?.length > 0 && rule.from.every((f) => f.podSelector && matches(f.podSelector.matchLabels, podLabels)
        && !f.namespaceSelector && !f.ipBlock), "the cluster ports must admit the gateway's own pods only");
    }
  }
  const db = policies.find((p) => (p.spec.ingress ?? []).some((r) => (r.ports ?? []).some((x) => x.port === 5432)));
  assert(db && db.spec.ingress.every((r) => r.from?.every((f) => matches(f.podSelector?.matchLabels, podLabels))),
    "the database's policy must admit the gateway's pods only");
});

await check("kubernetes: Services and the PodDisruptionBudget select the pods; the headless one is BESPOKE_CLUSTER_KUBERNETES_SERVICE", () => {
  for (const service of byKind("Service")) {
    assert(matches(service.spec.selector, podLabels), `Service ${service.metadata.name} selects no pod`);
    for (const port of service.spec.ports) {
      assert(containerPort(port.targetPort ?? port.port), `Service ${service.metadata.name}: no container port ${port.targetPort}`);
    }
  }
  const headless = named("Service", config.BESPOKE_CLUSTER_KUBERNETES_SERVICE);
  assert(headless?.spec.clusterIP === "None", `no headless Service ${config.BESPOKE_CLUSTER_KUBERNETES_SERVICE}`);
  assert(headless.spec.ports.some((p) => containerPort(p.targetPort)?.containerPort === Number(config.BESPOKE_CLUSTER_PORT)),
    "the headless Service must expose BESPOKE_CLUSTER_PORT");
  const pdb = byKind("PodDisruptionBudget")[0];
  assert(pdb && matches(pdb.spec.selector.matchLabels, podLabels), "the PodDisruptionBudget selects no pod");
  assert(pdb.spec.maxUnavailable === 1 || pdb.spec.minAvailable >= 2, "the budget must keep a majority of the pods");
});

// ---------------------------------------------------------------- compose
const composePath = join(deploy, "compose.yaml");
let compose = {};
await check("compose.yaml parses", () => {
  compose = parseYaml(composePath)[0];
});

await check("compose.yaml matches the Compose specification (dclint)", () => {
  // Style rules are left out (key and service order, quoting), and so is no-unbound-port-interfaces, which
  // does not see that the interface comes from ${GATEWAY_BIND}.
  const r = run(join(here, "node_modules/.bin/dclint"), [composePath, "--max-warnings", "0", "--no-color",
    "--disable-rule", "service-keys-order", "services-alphabetical-order", "top-level-properties-order",
    "require-quotes-in-ports", "no-unbound-port-interfaces"]);
  assert(r.status === 0, (r.stdout + r.stderr).trim());
});

const services = compose.services ?? {};
const gateways = Object.keys(services).filter((s) => s.startsWith("gateway-"));
const envOf = (name) => services[name].environment ?? {};

await check("compose.yaml: three clustered gateways on PostgreSQL, each its own node", () => {
  assert(gateways.length === 3, `${gateways.length} gateway services`);
  const addressOf = (g) => services[g].networks?.backend?.ipv4_address;
  const members = gateways.map((g) => `${addressOf(g)}:${envOf(g).BESPOKE_CLUSTER_PORT}`);
  const known = knownSettings();
  for (const g of gateways) {
    const env = envOf(g);
    assertKnown(Object.keys(env), g, known);
    assert(env.BESPOKE_CLUSTER === "true", `${g}: BESPOKE_CLUSTER is not "true"`);
    assert(addressOf(g) && env.BESPOKE_CLUSTER_HOST === addressOf(g),
      `${g}: BESPOKE_CLUSTER_HOST is not its fixed address on the backend network`);
    assert(env.BESPOKE_CLUSTER_MEMBERS === members.join(","), `${g}: BESPOKE_CLUSTER_MEMBERS is not ${members}`);
    assert(/^postgresql:\/\/[^@]+@postgres:5432\//.test(env.BESPOKE_DATABASE_URL), `${g}: not on the postgres service`);
    assert(services[g].depends_on?.postgres?.condition === "service_healthy", `${g} must wait for a healthy postgres`);
    assert(services[g].healthcheck?.test?.join(" ").includes("/healthz"), `${g}: no /healthz health check`);
    assert(services[g].volumes?.some((v) => v.endsWith(":/var/lib/bespoke-sandbox")), `${g}: no data volume`);
    const grace = parseInt(services[g].stop_grace_period, 10);
    assert(grace > Number(env.BESPOKE_DRAIN_SECS) + Number(env.BESPOKE_SHUTDOWN_GRACE_SECS), `${g}: stop_grace_period too short`);
  }
  const ids = new Set(gateways.map((g) => envOf(g).BESPOKE_NODE_ID));
  assert(ids.size === 3, "node ids must differ");
  assert(services.postgres?.healthcheck, "postgres needs a health check");
});

await check("compose.yaml: each gateway mounts its own identity made by deploy/certs/issue", () => {
  for (const g of gateways) {
    const env = envOf(g);
    const mounts = Object.fromEntries((services[g].volumes ?? []).filter((v) => v.startsWith("./certs/out/"))
      .map((v) => v.split(":")).map(([from, to, mode]) => [to, { from, mode }]));
    const expected = { BESPOKE_CLUSTER_TLS_CA: "ca.pem", BESPOKE_CLUSTER_TLS_CERT: `${g}.pem`, BESPOKE_CLUSTER_TLS_KEY: `${g}.key` };
    for (const [setting, file] of Object.entries(expected)) {
      const m = mounts[env[setting]];
      assert(m && m.from === `./certs/out/${file}` && m.mode === "ro", `${g}: ${setting} is not ./certs/out/${file}, read-only`);
    }
  }
  if (!onPath("openssl")) {
    return "certificates not issued: no openssl";
  }
  const dir = mkdtempSync(join(tmpdir(), "certs-"));
  try {
    const addresses = gateways.map((g) => `${g}=${services[g].networks.backend.ipv4_address}`);
    const r = run("bash", [join(deploy, "certs/issue"), join(dir, "out"), ...addresses]);
    assert(r.status === 0, (r.stdout + r.stderr).trim());
    for (const g of gateways) {
      const text = run("openssl", ["x509", "-in", join(dir, "out", `${g}.pem`), "-noout", "-ext", "subjectAltName,extendedKeyUsage"]).stdout;
      assert(text.includes(`IP Address:${services[g].networks.backend.ipv4_address}`), `${g}: its certificate does not name its address`);
      assert(/Server Authentication/.test(text) && /Client Authentication/.test(text), `${g}: not for TLS server and client`);
      assert(read(join(dir, "out", `${g}.key`)).startsWith("-----BEGIN PRIVATE KEY-----"), `${g}: the key is not PKCS#8`);
    }
    return `issued ${gateways.length} node certificates`;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

await check("compose.yaml: one published port, the proxy's, balancing all gateways by /readyz", () => {
  const published = Object.entries(services).filter(([, s]) => s.ports?.length).map(([n]) => n);
  assert(JSON.stringify(published) === '["proxy"]', `published by ${published}`);
  for (const g of gateways) {
    assert(services.proxy.depends_on?.[g]?.condition === "service_healthy", `the proxy must wait for ${g}`);
  }
  const mount = services.proxy.volumes.find((v) => v.includes("haproxy.cfg")).split(":")[0];
  const cfg = read(join(deploy, mount));
  const servers = [...cfg.matchAll(/^\s*server\s+\S+\s+([^:\s]+):(\d+)/gm)].map((m) => `${m[1]}:${m[2]}`);
  assert(JSON.stringify(servers) === JSON.stringify(gateways.map((g) => `${services[g].hostname}:8000`)),
    `haproxy servers ${servers}`);
  assert(/uri \/readyz/.test(cfg), "haproxy must check /readyz");
});

await check("compose.yaml: every variable it needs is in .env.example, which holds no secret", () => {
  const used = new Set([...read(composePath).matchAll(/\$\{([A-Z0-9_]+)/g)].map((m) => m[1]));
  const example = read(join(deploy, ".env.example"));
  const given = Object.fromEntries([...example.matchAll(/^([A-Z0-9_]+)=(.*)$/gm)].map((m) => [m[1], m[2]]));
  const missing = [...used].filter((v) => !(v in given));
  assert(missing.length === 0, `missing ${missing}`);
  const filled = Object.entries(given).filter(([k, v]) => /PASSWORD|PEPPER|TOKEN|KEY|SECRET/.test(k) && v !== "");
  assert(filled.length === 0, `${filled.map(([k]) => k)} must be left empty`);
  assert(Object.values(services).some((s) => s.env_file === ".env"), "the gateways read deploy/.env");
  assertCloudOnly(given.BESPOKE_ALLOWED_BACKENDS, ".env.example");
});

await check("proxy/haproxy.cfg passes haproxy -c", () => {
  const haproxy = onPath("haproxy") ? "haproxy" : ["/usr/sbin/haproxy"].find((p) => existsSync(p));
  if (!haproxy) {
    return "skipped: no haproxy";
  }
  const r = run(haproxy, ["-c", "-f", join(deploy, "proxy/haproxy.cfg")]);
  // the servers' names resolve only on the compose network
  const said = (r.stdout + r.stderr).split("\n")
    .filter((l) => /\[(WARNING|ALERT)\]/.test(l) && !/could not resolve address 'gateway-\d+'/.test(l));
  assert(r.status === 0 && said.length === 0, said.join("; ") || `exit ${r.status}`);
});

// ---------------------------------------------------------------- Dockerfile and systemd
await check("docker/Dockerfile: copies what exists, runs the jar as non-root on a JRE 21+, checks /healthz", () => {
  const text = read(join(deploy, "docker/Dockerfile")).replace(/\\\n/g, " ");
  const lines = text.split("\n").map((l) => l.trim()).filter((l) => l && !l.startsWith("#"));
  for (const line of lines.filter((l) => /^COPY\s/.test(l) && !/--from=/.test(l))) {
    const parts = line.split(/\s+/).slice(1, -1);
    parts.forEach((p) => assert(existsSync(join(root, p)), `COPY ${p}: no such file`));
  }
  const stages = lines.filter((l) => l.startsWith("FROM "));
  const versionArg = Number(lines.find((l) => l.startsWith("ARG JAVA_VERSION="))?.split("=")[1]);
  assert(stages.length === 2 && /-jre$/.test(stages[1].split(/\s+/)[1]) && versionArg >= 21, "the runtime is not a JRE 21+");
  const user = lines.filter((l) => l.startsWith("USER ")).pop()?.split(/\s+/)[1];
  assert(user && !/^(0|root)(:|$)/.test(user), "the last USER must not be root");
  assert(/HEALTHCHECK .*curl .*\/healthz/.test(text) && /apt-get install .* curl/.test(text), "HEALTHCHECK on /healthz with curl");
  assert(/ENV .*HOST=0\.0\.0\.0/.test(text), "HOST=0.0.0.0");
  const jar = text.match(/COPY --from=build \S+ (\S+\.jar)/)?.[1];
  assert(jar && lines.some((l) => l.startsWith("ENTRYPOINT") && l.includes(jar)), "the ENTRYPOINT does not run the copied jar");
});

await check("the env templates name only settings the gateway reads", () => {
  const known = knownSettings();
  for (const file of [".env.example", "systemd/sandbox-gateway.env.example"]) {
    const names = [...read(join(deploy, file)).matchAll(/^(?:# )?([A-Z][A-Z0-9_]*)=/gm)].map((m) => m[1]);
    assert(names.length > 0, `${file} names no setting`);
    assertKnown(names, file, known);
  }
});

await check("systemd/sandbox-gateway.service passes systemd-analyze verify", () => {
  if (!onPath("systemd-analyze")) {
    return "skipped: no systemd-analyze";
  }
  const dir = mkdtempSync(join(tmpdir(), "unit-"));
  try {
    let unit = read(join(deploy, "systemd/sandbox-gateway.service"));
    let note;
    if (!existsSync("/usr/bin/java")) {
      // verify insists that ExecStart's program exists; the rest of the unit is still checked
      unit = unit.replace("ExecStart=/usr/bin/java", "ExecStart=/bin/true");
      note = "no /usr/bin/java here: ExecStart's program not checked";
    }
    writeFileSync(join(dir, "sandbox-gateway.service"), unit);
    const r = run("systemd-analyze", ["verify", join(dir, "sandbox-gateway.service")]);
    const said = (r.stdout + r.stderr).split("\n").filter((l) => l.trim() && !/Failed to prepare filename|running in chroot/i.test(l));
    assert(r.status === 0 && said.length === 0, said.join("; ") || `exit ${r.status}`);
    return note;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

console.log(`deploy: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);

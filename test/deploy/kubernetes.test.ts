import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { readFile, readdir } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import { parse, parseAllDocuments } from "yaml";
import { launcherVariables, readLauncherEnv, serviceNames } from "@nahida/launcher";
import { REPO_ROOT } from "../support/processes";

// deploy/k8s as a cluster would take it, without a cluster: each kustomization names every
// file beside it, the overlays render (`kubectl kustomize`, offline), every rendered object
// is valid against the Kubernetes schemas (kubernetes-models, and its KEDA and Prometheus
// Operator packages for the custom resources), and the Deployments set only variables the
// launcher reads.

const K8S = join(REPO_ROOT, "deploy/k8s");
const KUSTOMIZATIONS = ["base", "components/keda", "overlays/example", "overlays/keda"];
const KUBECTL = "/usr/bin/kubectl";
const ROLES = ["gateway", "ingress-telegram", "agent-worker", "delivery", "scheduler"];

interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
  spec?: any;
  data?: Record<string, string>;
}

/** The module of kubernetes-models (or its CRD packages) that has the classes of an apiVersion. */
function modelModule(apiVersion: string): string {
  if (apiVersion === "keda.sh/v1alpha1") return "@kubernetes-models/keda/keda.sh/v1alpha1";
  if (apiVersion === "monitoring.coreos.com/v1") return "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1";
  return `kubernetes-models/${apiVersion}`;
}

async function validate(object: K8sObject): Promise<void> {
  const models = (await import(modelModule(object.apiVersion))) as Record<string, new (o: unknown) => { validate(): void }>;
  const Model = models[object.kind];
  if (!Model) throw new Error(`no schema for ${object.apiVersion} ${object.kind}`);
  new Model(object).validate();
}

const render = async (overlay: string): Promise<K8sObject[]> => {
  const { stdout } = await promisify(execFile)(KUBECTL, ["kustomize", join(K8S, overlay)], { maxBuffer: 16 * 1024 * 1024 });
  const objects = parseAllDocuments(stdout).map((d) => d.toJS() as K8sObject);
  // Kustomize folds a long Secret value's base64 over lines, which the API server's decoder
  // skips; the schema's "byte" format does not.
  for (const o of objects) if (o.kind === "Secret") for (const key of Object.keys(o.data ?? {})) o.data![key] = o.data![key]!.replace(/\s+/g, "");
  return objects;
};

describe.skipIf(!existsSync(KUBECTL))("deploy/k8s rendered by kubectl kustomize", () => {
  let example: K8sObject[];
  let keda: K8sObject[];
  let known: Set<string>;
  const deployments = () => example.filter((o) => o.kind === "Deployment");
  const container = (o: K8sObject) => o.spec.template.spec.containers[0];

  beforeAll(async () => {
    [example, keda] = await Promise.all([render("overlays/example"), render("overlays/keda")]);
    const env = await readLauncherEnv({});
    if (!env.ok) throw new Error(JSON.stringify(env.error));
    known = launcherVariables(env.value.plugins);
    // The ingress of every bundled channel kind is a service; this deployment runs Telegram's.
    expect(serviceNames(env.value.plugins.channels())).toEqual(expect.arrayContaining(ROLES));
  });

  it("validates every object against its schema", async () => {
    for (const object of [...example, ...keda]) await expect(validate(object), `${object.kind} ${object.metadata.name}`).resolves.toBeUndefined();
    expect(new Set(example.map((o) => o.kind))).toEqual(
      new Set(["Namespace", "ConfigMap", "Secret", "Service", "Deployment", "Job", "PodDisruptionBudget", "HorizontalPodAutoscaler", "NetworkPolicy", "ServiceMonitor"]),
    );
    // A broken object does fail: a port that is not a number.
    const broken = structuredClone(deployments()[0]!);
    container(broken).ports[0].containerPort = "http";
    await expect(validate(broken)).rejects.toThrow(/containerPort must be integer/);
  });

  it("runs a Deployment per role, probed on its probe listener, each with a disruption budget", () => {
    const byRole = new Map(deployments().map((d) => [container(d).env.find((e: { name: string }) => e.name === "NAHIDA_SERVICES").value as string, d]));
    expect([...byRole.keys()].sort()).toEqual([...ROLES].sort());
    const config = example.find((o) => o.kind === "ConfigMap")!.data!;
    for (const [role, d] of byRole) {
      const c = container(d);
      const probePort = c.ports.find((p: { name: string }) => p.name === "probes").containerPort;
      expect(String(probePort), role).toBe(config.NAHIDA_HEALTH_PORT);
      expect(c.readinessProbe.httpGet, role).toEqual({ path: "/ready", port: "probes" });
      expect(c.livenessProbe.httpGet, role).toEqual({ path: "/health", port: "probes" });
      expect(c.resources.requests, role).toMatchObject({ cpu: expect.any(String), memory: expect.any(String) });
      const pdb = example.find((o) => o.kind === "PodDisruptionBudget" && o.metadata.name === d.metadata.name)!;
      expect(pdb.spec.selector.matchLabels, role).toEqual(d.spec.selector.matchLabels);
    }
    const job = example.find((o) => o.kind === "Job")!;
    expect(container(job).command).toEqual(["node", "--enable-source-maps", "dist/migrate.js"]);
  });

  it("sets only variables the launcher reads", () => {
    const config = example.find((o) => o.kind === "ConfigMap")!;
    const secret = example.find((o) => o.kind === "Secret")!;
    const set = new Set([...Object.keys(config.data!), ...Object.keys(secret.data!)]);
    for (const d of deployments()) {
      const c = container(d);
      for (const e of c.env as { name: string }[]) set.add(e.name);
      const from = (c.envFrom as { configMapRef?: { name: string }; secretRef?: { name: string } }[]).map((f) => f.configMapRef?.name ?? f.secretRef?.name);
      expect(from, d.metadata.name).toEqual([config.metadata.name, secret.metadata.name]);
    }
    expect([...set].filter((name) => !known.has(name))).toEqual([]);
  });

  it("accepts traffic only at the gateway and the webhook ingress, and autoscales the workers", () => {
    const policies = example.filter((o) => o.kind === "NetworkPolicy");
    const deny = policies.find((p) => p.spec.policyTypes.includes("Ingress") && !p.spec.ingress)!;
    expect(deny.spec.podSelector.matchLabels).toMatchObject({ "app.kubernetes.io/part-of": "nahida" });
    const open = policies.filter((p) => (p.spec.ingress ?? []).some((rule: { from?: unknown }) => !rule.from));
    expect(open.map((p) => p.spec.podSelector.matchLabels["app.kubernetes.io/component"]).sort()).toEqual(["gateway", "ingress-telegram"]);

    const hpas = example.filter((o) => o.kind === "HorizontalPodAutoscaler");
    expect(hpas.map((h) => h.spec.scaleTargetRef.name).sort()).toEqual(["agent-worker", "delivery"]);
    // With KEDA, its ScaledObjects take their place.
    expect(keda.filter((o) => o.kind === "HorizontalPodAutoscaler")).toEqual([]);
    expect(keda.filter((o) => o.kind === "ScaledObject").map((s) => s.spec.scaleTargetRef.name).sort()).toEqual(["agent-worker", "delivery"]);
  });
});

describe("deploy/k8s kustomizations", () => {
  it.each(KUSTOMIZATIONS)("%s names every file beside it", async (dir) => {
    const k = parse(await readFile(join(K8S, dir, "kustomization.yaml"), "utf8")) as {
      resources?: string[];
      patches?: { path?: string }[];
      configMapGenerator?: { envs?: string[] }[];
      secretGenerator?: { envs?: string[] }[];
    };
    const named = new Set([
      ...(k.resources ?? []),
      ...(k.patches ?? []).flatMap((p) => (p.path ? [p.path] : [])),
      ...[...(k.configMapGenerator ?? []), ...(k.secretGenerator ?? [])].flatMap((g) => g.envs ?? []),
    ]);
    const files = (await readdir(join(K8S, dir))).filter((f) => f !== "kustomization.yaml" && /\.(ya?ml|env)$/.test(f));
    expect(files.filter((f) => !named.has(f))).toEqual([]);
    for (const name of named) if (!name.startsWith("..")) expect(existsSync(join(K8S, dir, name)), name).toBe(true);
  });
});

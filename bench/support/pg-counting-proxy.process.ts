// Counting Postgres proxies, one per process class, in a process of their own (forked with
// IPC by the bench), so that forwarding every statement costs the bench's event loop nothing
// and shows as its own CPU row. Env: PG_UPSTREAM_HOST, PG_UPSTREAM_PORT, PROXY_CLASSES (a,b,c).
// IPC: sends {type:"ready", ports}; answers {type:"snapshot"} with every proxy's counts.
import { startPgCountingProxy, type PgCountingProxy } from "./pg-counting.proxy";

export interface ProxySnapshotMessage {
  type: "snapshot";
  counts: Record<string, { total: number; bySql: [string, number][] }>;
}

const classes = process.env.PROXY_CLASSES!.split(",");
const proxies = new Map<string, PgCountingProxy>();
for (const name of classes) {
  proxies.set(name, await startPgCountingProxy({ upstreamHost: process.env.PG_UPSTREAM_HOST!, upstreamPort: Number(process.env.PG_UPSTREAM_PORT) }));
}

process.on("message", (message: { type: string }) => {
  if (message.type !== "snapshot") return;
  const reply: ProxySnapshotMessage = { type: "snapshot", counts: {} };
  for (const [name, proxy] of proxies) {
    const snapshot = proxy.snapshot();
    reply.counts[name] = { total: snapshot.total, bySql: [...snapshot.bySql] };
  }
  process.send!(reply);
});
process.on("disconnect", () => process.exit(0));
process.send!({ type: "ready", ports: Object.fromEntries([...proxies].map(([name, p]) => [name, p.port])) });

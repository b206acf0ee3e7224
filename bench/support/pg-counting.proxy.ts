import { createConnection, createServer, type Server, type Socket } from "node:net";
import type { AddressInfo } from "node:net";

/** Statements one proxy saw, by SQL text (whitespace collapsed). */
export interface StatementCounts {
  /** Query ('Q', simple protocol) and Execute ('E', extended protocol) messages. */
  total: number;
  bySql: Map<string, number>;
}

/** A TCP proxy in front of Postgres that counts the statements its clients send. */
export interface PgCountingProxy {
  /** The proxy's port on 127.0.0.1. */
  readonly port: number;
  /** Counts since the proxy started; take two snapshots and {@link diffCounts} them. */
  snapshot(): StatementCounts;
  close(): Promise<void>;
}

export interface StartPgCountingProxyOptions {
  upstreamHost: string;
  upstreamPort: number;
}

const SSL_REQUEST = 80877103;
const GSSENC_REQUEST = 80877104;
const CANCEL_REQUEST = 80877102;

/**
 * Starts a counting proxy. It parses only the frontend side of the protocol: the startup
 * phase (length-prefixed messages without a type byte: SSLRequest/GSSENCRequest, then the
 * StartupMessage), then typed frames (type byte + int32 length including itself). Parse
 * ('P') and Bind ('B') are remembered so every Execute can be attributed to its SQL text;
 * the backend side is piped through untouched.
 */
export async function startPgCountingProxy(options: StartPgCountingProxyOptions): Promise<PgCountingProxy> {
  let total = 0;
  const bySql = new Map<string, number>();
  const sockets = new Set<Socket>();
  const count = (sql: string) => {
    total++;
    const key = sql.replace(/\s+/g, " ").trim();
    bySql.set(key, (bySql.get(key) ?? 0) + 1);
  };

  const server: Server = createServer((client) => {
    const upstream = createConnection({ host: options.upstreamHost, port: options.upstreamPort });
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    sockets.add(client);
    sockets.add(upstream);
    const parser = frontendParser(count);
    client.on("data", (chunk: Buffer) => {
      parser(chunk);
      upstream.write(chunk);
    });
    upstream.pipe(client);
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on("error", end);
    upstream.on("error", end);
    client.on("close", end);
    upstream.on("close", end);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    port,
    snapshot: () => ({ total, bySql: new Map(bySql) }),
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Counts between two snapshots of one proxy. */
export function diffCounts(before: StatementCounts, after: StatementCounts): StatementCounts {
  const bySql = new Map<string, number>();
  for (const [sql, n] of after.bySql) {
    const d = n - (before.bySql.get(sql) ?? 0);
    if (d > 0) bySql.set(sql, d);
  }
  return { total: after.total - before.total, bySql };
}

/** Reads a NUL-terminated string at `offset`; returns it and the offset after the NUL. */
function cstring(buf: Buffer, offset: number): [string, number] {
  const end = buf.indexOf(0, offset);
  const stop = end === -1 ? buf.length : end;
  return [buf.toString("utf8", offset, stop), stop + 1];
}

/** A stateful parser of one connection's frontend byte stream. */
function frontendParser(count: (sql: string) => void): (chunk: Buffer) => void {
  let pending: Buffer = Buffer.alloc(0);
  let startup = true;
  const statements = new Map<string, string>();
  const portals = new Map<string, string>();
  return (chunk) => {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
    let offset = 0;
    for (;;) {
      if (startup) {
        if (pending.length - offset < 8) break;
        const length = pending.readInt32BE(offset);
        if (pending.length - offset < length) break;
        const code = pending.readInt32BE(offset + 4);
        offset += length;
        // After SSLRequest/GSSENCRequest the server answers one byte and the client sends
        // its StartupMessage next; a CancelRequest is the whole conversation.
        if (code !== SSL_REQUEST && code !== GSSENC_REQUEST && code !== CANCEL_REQUEST) startup = false;
        continue;
      }
      if (pending.length - offset < 5) break;
      const type = String.fromCharCode(pending[offset]!);
      const length = pending.readInt32BE(offset + 1);
      if (pending.length - offset < 1 + length) break;
      const body = pending.subarray(offset + 5, offset + 1 + length);
      offset += 1 + length;
      switch (type) {
        case "Q":
          count(cstring(body, 0)[0]);
          break;
        case "P": {
          const [name, next] = cstring(body, 0);
          statements.set(name, cstring(body, next)[0]);
          break;
        }
        case "B": {
          const [portal, next] = cstring(body, 0);
          portals.set(portal, statements.get(cstring(body, next)[0]) ?? "(unknown prepared statement)");
          break;
        }
        case "E":
          count(portals.get(cstring(body, 0)[0]) ?? "(unknown portal)");
          break;
        case "C": {
          // Close: 'S' statement or 'P' portal, then the name.
          const [name] = cstring(body, 1);
          (body[0] === 0x53 ? statements : portals).delete(name);
          break;
        }
      }
    }
    pending = offset === pending.length ? Buffer.alloc(0) : pending.subarray(offset);
  };
}

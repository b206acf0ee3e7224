import pg from "pg";

/**
 * Rows a plan's scans read: what each scan returned and what its filters removed, per loop
 * as EXPLAIN prints them, times its loops. CTE and subquery scans count too (a few rows).
 */
export function rowsRead(plan: string): number {
  let total = 0;
  let loops = 1;
  for (const line of plan.split("\n")) {
    const node = /actual rows=([\d.]+) loops=(\d+)/.exec(line);
    if (node) {
      loops = Number(node[2]);
      if (/Scan/.test(line)) total += Number(node[1]) * loops;
    }
    const removed = /Rows Removed by (?:Filter|Join Filter|Index Recheck): (\d+)/.exec(line);
    if (removed) total += Number(removed[1]) * loops;
  }
  return total;
}

function indexesOf(plan: string): string[] {
  return [...new Set([...plan.matchAll(/(?:Index (?:Only )?Scan(?: Backward)? using|Bitmap Index Scan on) (\w+)/g)].map((m) => m[1]!))];
}

/** What one statement's plan read, from auto_explain's EXPLAIN (ANALYZE, BUFFERS) output. */
export interface ReadPlan {
  /** Rows its scans read: what each returned (rows × loops) and what its filters removed. */
  rowsRead: number;
  /** Indexes it scanned. */
  indexes: string[];
  text: string;
}

/**
 * A one-connection pool whose statements send their plans back: auto_explain is loaded into
 * the session (LOAD needs a superuser, as the test server's default user is) and logs every
 * plan as a notice. `explain(fn)` gives the plans of the statements `fn` ran on it.
 */
export async function explainingPool(url: string): Promise<{ pool: pg.Pool; explain: (fn: () => Promise<unknown>) => Promise<ReadPlan[]> }> {
  const plans: string[] = [];
  // idleTimeoutMillis 0: the session, and what was loaded into it, is kept.
  const pool = new pg.Pool({ connectionString: url, max: 1, idleTimeoutMillis: 0 });
  // Its idle client can still be closing when the test drops the database (WITH FORCE):
  // the backend's "terminating connection" then reaches the pool as an error event, which
  // with no listener is an uncaught exception that fails the run though every test passed.
  pool.on("error", () => undefined);
  pool.on("connect", (client) => {
    client.on("notice", (notice) => {
      if (notice.message?.includes("Buffers:")) plans.push(notice.message);
    });
  });
  const client = await pool.connect();
  try {
    await client.query("LOAD 'auto_explain'");
    await client.query(
      "SET auto_explain.log_min_duration = 0; SET auto_explain.log_analyze = on; SET auto_explain.log_buffers = on; SET auto_explain.log_timing = off; SET auto_explain.log_level = notice",
    );
  } finally {
    client.release();
  }
  const explain = async (fn: () => Promise<unknown>): Promise<ReadPlan[]> => {
    plans.length = 0;
    await fn();
    return plans.map((text) => ({ rowsRead: rowsRead(text), indexes: indexesOf(text), text }));
  };
  return { pool, explain };
}

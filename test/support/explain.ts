import pg from "pg";

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
  const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
  const explain = async (fn: () => Promise<unknown>): Promise<ReadPlan[]> => {
    plans.length = 0;
    await fn();
    return plans.map((text) => ({
      rowsRead:
        sum([...text.matchAll(/Scan[^\n]*actual rows=([\d.]+) loops=(\d+)/g)].map((m) => Number(m[1]) * Number(m[2]))) +
        sum([...text.matchAll(/Rows Removed by (?:Filter|Index Recheck): (\d+)/g)].map((m) => Number(m[1]))),
      indexes: [...new Set([...text.matchAll(/(?:Index (?:Only )?Scan using|Bitmap Index Scan on) (\w+)/g)].map((m) => m[1]!))],
      text,
    }));
  };
  return { pool, explain };
}

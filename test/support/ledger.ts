import pg from "pg";
import { waitFor } from "./infra";

/**
 * Waits until the ledger has nothing left to do: no lane item open, no delivery queued or
 * sending. Every send the system will make is then behind a `sent` row (a row is marked
 * sent after the platform accepted it), so a test can count what a platform received
 * against the rows instead of sleeping to prove that nothing more comes.
 */
export async function ledgerSettled(databaseUrl: string, timeoutMs = 15_000): Promise<void> {
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    await waitFor(
      async () => {
        const { rows } = await db.query<{ open: number }>(
          `SELECT ((SELECT count(*) FROM lane_items WHERE status IN ('pending', 'running'))
                 + (SELECT count(*) FROM deliveries WHERE status IN ('queued', 'sending')))::int AS open`,
        );
        return rows[0]!.open === 0;
      },
      timeoutMs,
      "no open lane item and no queued or sending delivery",
    );
  } finally {
    await db.end();
  }
}

/** Deliveries to `target` by status. */
export async function deliveriesTo(databaseUrl: string, target: string): Promise<Record<string, number>> {
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    const { rows } = await db.query<{ status: string; n: number }>("SELECT status, count(*)::int AS n FROM deliveries WHERE target = $1 GROUP BY status", [target]);
    return Object.fromEntries(rows.map((r) => [r.status, r.n]));
  } finally {
    await db.end();
  }
}

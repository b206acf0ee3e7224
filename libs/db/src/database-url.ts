/** Splits a postgres URL into the target database name and a URL for the maintenance database. */
export function describeDatabaseUrl(url: string): { database: string; maintenanceUrl: string } {
  const parsed = new URL(url);
  const database = decodeURIComponent(parsed.pathname.replace(/^\//, "")) || "postgres";
  const maintenance = new URL(url);
  maintenance.pathname = "/postgres";
  return { database, maintenanceUrl: maintenance.toString() };
}

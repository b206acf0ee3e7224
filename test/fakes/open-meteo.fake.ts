import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

/** A place the fake knows, with the weather it reports there. */
export interface FakePlace {
  name: string;
  country: string;
  latitude: number;
  longitude: number;
  temperature_2m: number;
  wind_speed_10m: number;
  /** WMO weather interpretation code. */
  weather_code: number;
}

export interface FakeOpenMeteo {
  /** Base URL for both APIs (`/v1/search` and `/v1/forecast` live on one server here). */
  url: string;
  /** Request paths with their query strings, oldest first. */
  readonly requests: readonly string[];
  close(): Promise<void>;
}

/**
 * Open-Meteo's geocoding (`GET /v1/search?name=`) and forecast (`GET /v1/forecast?latitude=
 * &longitude=&current=`) APIs on one local server, answering in their wire format: no
 * `results` key when nothing matched, `current` with the requested variables, and Open-Meteo's
 * 400 `{error: true, reason}` for a forecast without coordinates.
 */
export async function startFakeOpenMeteo(places: readonly FakePlace[]): Promise<FakeOpenMeteo> {
  const requests: string[] = [];
  const server = createServer((request, response) => {
    const url = new URL(request.url ?? "/", "http://fake");
    requests.push(url.pathname + url.search);
    const json = (status: number, body: unknown) => response.writeHead(status, { "content-type": "application/json; charset=utf-8" }).end(JSON.stringify(body));
    if (url.pathname === "/v1/search") {
      const name = (url.searchParams.get("name") ?? "").toLowerCase();
      const found = places.filter((p) => p.name.toLowerCase() === name).slice(0, Number(url.searchParams.get("count") ?? 10));
      const results = found.map((p, i) => ({ id: 1000 + i, name: p.name, latitude: p.latitude, longitude: p.longitude, country: p.country, timezone: "Europe/Berlin" }));
      return json(200, { ...(results.length > 0 ? { results } : {}), generationtime_ms: 0.5 });
    }
    if (url.pathname === "/v1/forecast") {
      const [lat, lon] = [Number(url.searchParams.get("latitude")), Number(url.searchParams.get("longitude"))];
      const place = places.find((p) => p.latitude === lat && p.longitude === lon);
      if (!place) return json(400, { error: true, reason: "Parameter 'latitude' and 'longitude' must be a known place" });
      const variables = (url.searchParams.get("current") ?? "").split(",").filter(Boolean);
      const current: Record<string, unknown> = { time: "2026-12-01T09:00", interval: 900 };
      for (const variable of variables) current[variable] = place[variable as keyof FakePlace];
      return json(200, { latitude: lat, longitude: lon, timezone: "Europe/Berlin", current_units: { temperature_2m: "°C", wind_speed_10m: "km/h" }, current });
    }
    json(404, { error: true, reason: "Not Found" });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

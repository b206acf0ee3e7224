import { z } from "zod";

/** Open-Meteo's geocoding answer (`/v1/search`), in its own field names; `results` is absent when nothing matched. */
const GeocodingResponse = z.object({
  results: z
    .array(z.object({ name: z.string(), latitude: z.number(), longitude: z.number(), country: z.string().optional(), admin1: z.string().optional(), timezone: z.string().optional() }))
    .optional(),
});

/** Open-Meteo's forecast answer (`/v1/forecast?current=...`). */
const ForecastResponse = z.object({
  current: z.object({ time: z.string(), temperature_2m: z.number(), wind_speed_10m: z.number(), weather_code: z.number().int() }),
});

/** WMO weather interpretation codes, as Open-Meteo documents them. */
const WMO: Record<number, string> = {
  0: "clear sky", 1: "mainly clear", 2: "partly cloudy", 3: "overcast", 45: "fog", 48: "depositing rime fog",
  51: "light drizzle", 53: "drizzle", 55: "dense drizzle", 56: "freezing drizzle", 57: "dense freezing drizzle",
  61: "slight rain", 63: "rain", 65: "heavy rain", 66: "freezing rain", 67: "heavy freezing rain",
  71: "slight snow", 73: "snow", 75: "heavy snow", 77: "snow grains", 80: "rain showers", 81: "rain showers", 82: "violent rain showers",
  85: "snow showers", 86: "heavy snow showers", 95: "thunderstorm", 96: "thunderstorm with hail", 99: "thunderstorm with heavy hail",
};

/** `path` under `base`, keeping a base path (a self-hosted API behind `/open-meteo`). */
const endpoint = (base: string, path: string) => new URL(base.replace(/\/+$/, "") + path);

export interface CurrentWeather {
  place: string;
  /** Local time of the observation at the place, as Open-Meteo gives it (ISO 8601 without offset). */
  time: string;
  temperature_c: number;
  wind_kmh: number;
  conditions: string;
}

export interface OpenMeteoOptions {
  forecastUrl: string;
  geocodingUrl: string;
  /** The plugin API's fetch: it reaches only the hosts plugin.yaml declares. */
  fetch: typeof globalThis.fetch;
  timeoutMs?: number;
}

/** Current weather for a place name: geocode it, then ask for the current conditions there. */
export async function currentWeather(o: OpenMeteoOptions, city: string, signal?: AbortSignal): Promise<CurrentWeather> {
  const timeout = AbortSignal.timeout(o.timeoutMs ?? 10_000);
  const get = async <T>(url: URL, schema: z.ZodType<T>): Promise<T> => {
    const response = await o.fetch(url, { signal: signal ? AbortSignal.any([signal, timeout]) : timeout, headers: { accept: "application/json" } });
    if (!response.ok) throw new Error(`${url.host} answered ${response.status}`);
    const parsed = schema.safeParse(await response.json());
    if (!parsed.success) throw new Error(`${url.host} answered something unexpected`);
    return parsed.data;
  };
  const search = endpoint(o.geocodingUrl, "/v1/search");
  search.search = new URLSearchParams({ name: city, count: "1", language: "en", format: "json" }).toString();
  const place = (await get(search, GeocodingResponse)).results?.[0];
  if (!place) throw new Error(`no place called ${JSON.stringify(city)}`);
  const forecast = endpoint(o.forecastUrl, "/v1/forecast");
  forecast.search = new URLSearchParams({
    latitude: String(place.latitude),
    longitude: String(place.longitude),
    current: "temperature_2m,wind_speed_10m,weather_code",
    timezone: "auto",
  }).toString();
  const { current } = await get(forecast, ForecastResponse);
  return {
    place: [place.name, place.admin1, place.country].filter(Boolean).join(", "),
    time: current.time,
    temperature_c: current.temperature_2m,
    wind_kmh: current.wind_speed_10m,
    conditions: WMO[current.weather_code] ?? `weather code ${current.weather_code}`,
  };
}

/** One line for a chat. */
export const describeWeather = (w: CurrentWeather) => `${w.place}: ${w.conditions}, ${w.temperature_c} °C, wind ${w.wind_kmh} km/h (at ${w.time} local time)`;

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenMeteo, type FakeOpenMeteo } from "../../../../test/fakes/open-meteo.fake";
import { currentWeather, describeWeather } from "./open-meteo.client";

describe("the weather plugin's Open-Meteo client", () => {
  let meteo: FakeOpenMeteo;
  beforeAll(async () => {
    meteo = await startFakeOpenMeteo([{ name: "Hangzhou", country: "China", latitude: 30.29365, longitude: 120.16142, temperature_2m: 12.5, wind_speed_10m: 4, weather_code: 61 }]);
  });
  afterAll(async () => meteo?.close());
  const client = () => ({ forecastUrl: meteo.url, geocodingUrl: meteo.url, fetch: globalThis.fetch });

  it("geocodes the city, then asks for the current conditions there", async () => {
    const weather = await currentWeather(client(), "Hangzhou");
    expect(weather).toEqual({ place: "Hangzhou, China", time: "2026-12-01T09:00", temperature_c: 12.5, wind_kmh: 4, conditions: "slight rain" });
    expect(describeWeather(weather)).toBe("Hangzhou, China: slight rain, 12.5 °C, wind 4 km/h (at 2026-12-01T09:00 local time)");
    expect(meteo.requests.at(-1)).toBe("/v1/forecast?latitude=30.29365&longitude=120.16142&current=temperature_2m%2Cwind_speed_10m%2Cweather_code&timezone=auto");
  });

  it("says so when no place has that name, and when the API answers with an error", async () => {
    await expect(currentWeather(client(), "Atlantis")).rejects.toThrow('no place called "Atlantis"');
    await expect(currentWeather({ ...client(), forecastUrl: `${meteo.url}/broken` }, "Hangzhou")).rejects.toThrow(/answered 404/);
  });
});

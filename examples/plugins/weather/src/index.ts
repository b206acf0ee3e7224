import { z } from "zod";
import { defineCommand, definePlugin, defineTool } from "@nahida/plugin-sdk";
import { currentWeather, describeWeather } from "./open-meteo.client";

export const WeatherConfig = z.object({
  forecast_url: z.url().default("https://api.open-meteo.com").describe("Open-Meteo's forecast API (or a self-hosted one)"),
  geocoding_url: z.url().default("https://geocoding-api.open-meteo.com").describe("Open-Meteo's geocoding API (or a self-hosted one)"),
  default_city: z.string().min(1).max(100).optional().describe("the place /weather and weather_now use when none is given"),
});

/**
 * Current weather from Open-Meteo (no API key): a `weather_now` tool, a `weather_share` tool
 * that sends it to another chat, and a `/weather` command — which a cron job can run
 * (`agent_turn` with the prompt `/weather Berlin`) for a morning forecast.
 */
export default definePlugin({
  id: "weather",
  config: WeatherConfig,
  register(api) {
    const { config } = api;
    const client = { forecastUrl: config.forecast_url, geocodingUrl: config.geocoding_url, fetch: api.fetch };
    const place = (city: string | undefined) => {
      const chosen = city?.trim() || config.default_city;
      if (!chosen) throw new Error("give a city (no default_city is configured)");
      return chosen;
    };

    api.tool(
      defineTool({
        name: "weather_now",
        description: "Current weather (conditions, temperature, wind) for a city, from Open-Meteo.",
        parameters: z.object({ city: z.string().min(1).max(100).optional().describe("city name, e.g. Berlin") }),
        execute: ({ city }, context) => currentWeather(client, place(city), context.signal),
      }),
    );

    api.tool(
      defineTool({
        name: "weather_share",
        description: "Send the current weather for a city to another chat (target: <channel>:<type>:<id>). It is sent when this turn ends.",
        parameters: z.object({ city: z.string().min(1).max(100), target: z.string().min(1).max(300) }),
        async execute({ city, target }, context) {
          const weather = await currentWeather(client, place(city), context.signal);
          const sent = await context.outbox.send({ target, message: { text: describeWeather(weather), attachments: [], extra: {} } });
          if (!sent.ok) throw new Error(sent.error.message);
          api.logger.info({ target, deliveryId: sent.value.deliveryId }, "weather shared");
          return { delivery_id: sent.value.deliveryId, target, text: describeWeather(weather) };
        },
      }),
    );

    api.command(
      defineCommand({
        name: "weather",
        description: "current weather for a city",
        usage: "[city]",
        handler: async ({ args, signal }) => {
          try {
            return describeWeather(await currentWeather(client, place(args), signal));
          } catch (error) {
            return `No weather: ${(error as Error).message}`;
          }
        },
      }),
    );
  },
});

import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { PluginList, type PluginView } from "@nahida/contracts";
import { readErrorResponses } from "../error-responses";

/** The deployment's plugins as this replica loaded them (every replica loads the same NAHIDA_PLUGINS). */
export const pluginRoutes: FastifyPluginAsyncZod<{ plugins: readonly PluginView[] }> = async (app, { plugins }) => {
  app.get(
    "/api/plugins",
    {
      config: { scope: "read", rateLimit: {} },
      schema: {
        operationId: "listPlugins", summary: "Loaded plugins",
        description:
          "Every plugin this deployment loaded, the bundled ones (core, telegram, milky) first: its version, the host and plugin API ranges it declares, the tools, commands and channel kinds it provides, its permissions and the JSON Schema of its configuration.",
        tags: ["plugins"],
        response: { 200: PluginList, ...readErrorResponses },
      },
    },
    async () => ({ plugins: [...plugins] }),
  );
};

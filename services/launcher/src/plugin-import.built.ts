let typeScript: Promise<void> | undefined;

/**
 * plugin-import.ts in the built host, which has no TypeScript loader of its own: tsx is
 * registered before the first plugin is imported, since a plugin in TypeScript needs it, and
 * so does one in JavaScript, for the `@nahida/plugin-sdk` it imports is TypeScript too.
 * Without NAHIDA_PLUGINS tsx is never loaded.
 */
export async function importPluginEntry(url: string): Promise<unknown> {
  await (typeScript ??= import("tsx/esm/api").then(({ register }) => void register()));
  return import(url);
}

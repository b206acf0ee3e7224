/**
 * Imports a plugin's entry (NAHIDA_PLUGINS). From the sources, tsx or vitest already loads
 * TypeScript: a plugin in TypeScript and the `@nahida/plugin-sdk` sources a plugin imports
 * load as they are. The build takes plugin-import.built.ts in this module's place.
 */
export function importPluginEntry(url: string): Promise<unknown> {
  return import(url);
}

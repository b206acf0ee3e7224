/**
 * The plugin API's version (semver; the same as this package's). A plugin's `sdk` range is
 * checked against it before any plugin code runs: a major bump is a breaking change of
 * what `register(api)` receives or of the tool, command or channel contracts.
 */
export const SDK_VERSION = "1.0.0";

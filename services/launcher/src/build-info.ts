/**
 * Whether this is the JavaScript `npm run build` made: the build takes build-info.built.ts
 * in this module's place. False when the TypeScript sources run (tsx, vitest).
 */
export const BUILT: boolean = false;
